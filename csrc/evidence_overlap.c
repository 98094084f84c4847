/*
** evidence_overlap.c: the scalar functions token_overlap() and evidence_tokens().
**
**   SELECT token_overlap('queue consumer lag', 'Restart the queue CONSUMER');  -- 2
**   SELECT token_overlap('latency', 'response time');                          -- 0
**   SELECT token_overlap(NULL, 'x');                                           -- NULL
**   SELECT evidence_tokens('HTTP 503s, again!');          -- ["http","503s","again"]
**
** token_overlap(query, body) is the number of distinct tokens the two texts
** share, by the token rule of evidence_tokens.c. It is lexical only: it knows
** nothing of synonyms or word forms. evidence_tokens(text) shows the tokens a
** text yields, in order with repeats, as a JSON array: the way to see why a
** record matched or did not.
**
** Arguments are read as text (SQLite converts numbers and blobs the usual way)
** with their full byte length, so NUL characters do not end them. NULL in
** either argument gives NULL.
**
** The query's token set is built once per statement when the query is a
** constant or a bound parameter, and kept with sqlite3_set_auxdata().
** Both functions are DETERMINISTIC and INNOCUOUS, so they may be used in
** views, indexes and triggers, also under PRAGMA trusted_schema=OFF.
*/
#include "evidence_sqlite.h"
#include "evidence_tokens.h"

#ifdef EVIDENCE_TEST
int evidenceTestOverlapCalls = 0; /* lets the C tests check that a score is computed once per row */
#endif

static void overlapFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  EvidenceTokenSet *pSet;
  const unsigned char *zBody;
  int bNew = 0, nShared;
  (void)argc;
#ifdef EVIDENCE_TEST
  evidenceTestOverlapCalls++;
#endif
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    return;
  }
  pSet = sqlite3_get_auxdata(ctx, 0);
  if (pSet == 0) {
    const unsigned char *zQuery = sqlite3_value_text(argv[0]);
    if (zQuery == 0) goto no_mem;
    pSet = evidenceTokenSetNew(zQuery, (size_t)sqlite3_value_bytes(argv[0]));
    if (pSet == 0) goto no_mem;
    bNew = 1;
  }
  zBody = sqlite3_value_text(argv[1]);
  if (zBody == 0) {
    if (bNew) evidenceTokenSetFree(pSet);
    goto no_mem;
  }
  nShared = evidenceTokenSetOverlap(pSet, zBody, (size_t)sqlite3_value_bytes(argv[1]));
  sqlite3_result_int(ctx, nShared);
  /* Last, because SQLite may free pSet right away when it cannot keep it. */
  if (bNew) sqlite3_set_auxdata(ctx, 0, pSet, evidenceTokenSetFree);
  return;

no_mem:
  sqlite3_result_error_nomem(ctx);
}

typedef struct TokenList {
  sqlite3_str *pOut; /* the JSON array being written */
  int nTok;          /* tokens written so far */
} TokenList;

static int tokensAppend(void *pArg, const char *zTok, size_t nTok) {
  TokenList *p = pArg;
  /* Tokens are [a-z0-9]+, so they need no JSON escaping. */
  sqlite3_str_appendall(p->pOut, p->nTok++ ? ",\"" : "\"");
  sqlite3_str_append(p->pOut, zTok, (int)nTok);
  sqlite3_str_appendchar(p->pOut, 1, '"');
  return sqlite3_str_errcode(p->pOut);
}

static void tokensFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *zText;
  TokenList list;
  int rc, n;
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  zText = sqlite3_value_text(argv[0]);
  if (zText == 0) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  list.pOut = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  list.nTok = 0;
  sqlite3_str_appendchar(list.pOut, 1, '[');
  rc = evidenceTokenize(zText, (size_t)sqlite3_value_bytes(argv[0]), tokensAppend, &list);
  sqlite3_str_appendchar(list.pOut, 1, ']');
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(list.pOut);
  n = sqlite3_str_length(list.pOut);
  if (rc != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(list.pOut));
    sqlite3_result_error_code(ctx, rc);
    return;
  }
  sqlite3_result_text(ctx, sqlite3_str_finish(list.pOut), n, sqlite3_free);
}

int evidenceOverlapRegister(sqlite3 *db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function(db, "token_overlap", 2, flags, 0, overlapFunc, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "evidence_tokens", 1, flags, 0, tokensFunc, 0, 0);
  return rc;
}
