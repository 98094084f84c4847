/*
** evidence_search_vtab.c: evidence_search(), retrieve as a table-valued function.
**
**   SELECT record_id, score, citation
**     FROM evidence_search('team-a', 'v1', 100, 'disk full on db-1', 5);
**
** The rows are what retrieve returns for those arguments, in its order (best
** first, ties by record_id), found through the token index (evidence_search.c):
** record_id, revision, kind, score, citation, body, expires_at, version (the
** version identifier "<seq>-<content hash>" of the record's current version) and
** eligible_count (the scope's eligible rows, the same on every row). No row
** means no evidence was found, not that there is no problem.
**
** The arguments follow evidence_eligible's rules (evidence_eligible.c): all are
** required; tenant, revision and query are text, now an integer (a whole real
** counts as that integer), limit an integer from 1 to 10, as for retrieve.
** A missing or mistyped argument is an error naming it.
*/
#include <stdarg.h>
#include <string.h>

#include "evidence_search.h"
#include "evidence_sqlite.h"

enum {
  SV_RECORD_ID,
  SV_REVISION,
  SV_KIND,
  SV_SCORE,
  SV_CITATION,
  SV_BODY,
  SV_EXPIRES_AT,
  SV_VERSION,
  SV_ELIGIBLE_COUNT,
  SV_N_COLUMNS,
  SV_ARG_TENANT = SV_N_COLUMNS,
  SV_ARG_REVISION,
  SV_ARG_NOW,
  SV_ARG_QUERY,
  SV_ARG_LIMIT
};

#define SV_N_ARGS 5
_Static_assert(SV_N_ARGS <= EVIDENCE_MAX_ARGS, "evidencePlanArgs plans at most EVIDENCE_MAX_ARGS arguments");
#define SV_MISSING_SHIFT 16
#define SV_MAX_LIMIT 10

static const char *const azArgName[SV_N_ARGS] = {"tenant", "revision", "now", "query", "limit"};

static const char zReentered[] =
    "reentered while reading the store, whose tables and views must be those of schema.sql";

typedef struct SearchVtab {
  sqlite3_vtab base; /* must be first */
  sqlite3 *db;
  char *zSchema;
  EvidenceSearcher *pSearcher;
  int bReading; /* a search or a row read is stepping: see svFilter */
} SearchVtab;

typedef struct SearchCursor {
  sqlite3_vtab_cursor base; /* must be first */
  EvidenceSearchResult result;
  sqlite3_stmt *pRow; /* the current hit's evidence row */
  int iHit;
  sqlite3_value *apArg[SV_N_ARGS]; /* copies, for the hidden columns */
} SearchCursor;

static int svError(sqlite3_vtab *pVtab, int rc, const char *zFormat, ...) {
  va_list ap;
  va_start(ap, zFormat);
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = sqlite3_vmprintf(zFormat, ap);
  va_end(ap);
  return pVtab->zErrMsg ? rc : SQLITE_NOMEM;
}

static int svConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                     char **pzErr) {
  SearchVtab *pNew;
  int rc;
  (void)pAux;
  (void)argc;
  (void)pzErr;
  rc = sqlite3_declare_vtab(
      db,
      "CREATE TABLE x(record_id TEXT, revision TEXT, kind TEXT, score INTEGER, citation TEXT,"
      " body TEXT, expires_at INTEGER, version TEXT, eligible_count INTEGER,"
      " tenant HIDDEN, scope_revision HIDDEN, now HIDDEN, query HIDDEN, result_limit HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  pNew = sqlite3_malloc(sizeof(*pNew));
  if (pNew == 0) return SQLITE_NOMEM;
  memset(pNew, 0, sizeof(*pNew));
  pNew->db = db;
  pNew->zSchema = sqlite3_mprintf("%s", argv[1]);
  if (pNew->zSchema == 0 || evidenceSearcherOpen(db, argv[1], &pNew->pSearcher) != SQLITE_OK) {
    evidenceSearcherFree(pNew->pSearcher);
    sqlite3_free(pNew->zSchema);
    sqlite3_free(pNew);
    return SQLITE_NOMEM;
  }
  /* It reads rows the caller may read anyway: harmless inside views and triggers. */
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  *ppVtab = &pNew->base;
  return SQLITE_OK;
}

static int svDisconnect(sqlite3_vtab *pVtab) {
  SearchVtab *p = (SearchVtab *)pVtab;
  evidenceSearcherFree(p->pSearcher);
  sqlite3_free(p->zSchema);
  sqlite3_free(p);
  return SQLITE_OK;
}

static int svOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  SearchCursor *pCur = sqlite3_malloc(sizeof(*pCur));
  (void)pVtab;
  if (pCur == 0) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static void svReset(SearchCursor *pCur) {
  int i;
  evidenceSearchResultClear(&pCur->result);
  for (i = 0; i < SV_N_ARGS; i++) {
    sqlite3_value_free(pCur->apArg[i]);
    pCur->apArg[i] = 0;
  }
  pCur->iHit = 0;
}

static int svClose(sqlite3_vtab_cursor *cur) {
  SearchCursor *pCur = (SearchCursor *)cur;
  svReset(pCur);
  sqlite3_finalize(pCur->pRow);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

/* Positions pRow on the evidence row of hit iHit (if any). */
static int svLoadRow(SearchCursor *pCur) {
  SearchVtab *pTab = (SearchVtab *)pCur->base.pVtab;
  const EvidenceSearchHit *h;
  int rc;
  sqlite3_reset(pCur->pRow);
  if (pCur->iHit >= pCur->result.nHit) return SQLITE_OK;
  h = &pCur->result.aHit[pCur->iHit];
  rc = sqlite3_bind_text64(pCur->pRow, 2, h->zRecordId, h->nRecordId, SQLITE_STATIC, SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    pTab->bReading = 1;
    rc = sqlite3_step(pCur->pRow);
    pTab->bReading = 0;
  }
  if (rc == SQLITE_ROW) return SQLITE_OK;
  if (rc == SQLITE_DONE) {
    return svError(pCur->base.pVtab, SQLITE_CORRUPT,
                   "evidence_search(): the token index disagrees with the stored records;"
                   " rebuild it with `pyevidence reindex`");
  }
  return svError(pCur->base.pVtab, rc, "evidence_search(): %s", sqlite3_errmsg(pTab->db));
}

static int svNext(sqlite3_vtab_cursor *cur) {
  SearchCursor *pCur = (SearchCursor *)cur;
  pCur->iHit++;
  return svLoadRow(pCur);
}

/* Checks the arguments; *piNow and *piLimit receive the integers. */
static int svCheckArgs(sqlite3_vtab *pVtab, sqlite3_value **argv, sqlite3_int64 *piNow,
                       sqlite3_int64 *piLimit) {
  static const int aWant[SV_N_ARGS] = {SQLITE_TEXT, SQLITE_TEXT, SQLITE_INTEGER, SQLITE_TEXT, SQLITE_INTEGER};
  sqlite3_int64 aInt[SV_N_ARGS] = {0, 0, 0, 0, 0};
  char *zErr = 0;
  int rc = evidenceCheckArgs("evidence_search", argv, SV_N_ARGS, aWant, azArgName, aInt, &zErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(pVtab->zErrMsg);
    pVtab->zErrMsg = zErr;
    return rc;
  }
  if (aInt[4] < 1 || aInt[4] > SV_MAX_LIMIT) {
    return svError(pVtab, SQLITE_ERROR, "evidence_search(): limit must be from 1 to %d, got %lld",
                   SV_MAX_LIMIT, aInt[4]);
  }
  *piNow = aInt[2];
  *piLimit = aInt[4];
  return SQLITE_OK;
}

static int svFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                    sqlite3_value **argv) {
  SearchCursor *pCur = (SearchCursor *)cur;
  SearchVtab *pTab = (SearchVtab *)cur->pVtab;
  sqlite3_int64 now = 0, limit = 0;
  char *zErr = 0;
  int rc, i;
  (void)idxStr;
  svReset(pCur);
  /* Only tables or views that read evidence_search again (not schema.sql's) get here while a
  ** statement of ours steps: each level would nest another search, until the stack overflows. */
  if (pTab->bReading)
    return svError(cur->pVtab, SQLITE_ERROR, "%s", zReentered); /* the outer call's names it */
  if (idxNum >> SV_MISSING_SHIFT) {
    int missing = idxNum >> SV_MISSING_SHIFT;
    for (i = 0; (missing & (1 << i)) == 0; i++) {
    }
    return svError(cur->pVtab, SQLITE_ERROR,
                   "evidence_search(): argument %s is missing; "
                   "call it as evidence_search(tenant, revision, now, query, limit)",
                   azArgName[i]);
  }
  if (argc != SV_N_ARGS) return svError(cur->pVtab, SQLITE_ERROR, "evidence_search(): bad plan");
  rc = svCheckArgs(cur->pVtab, argv, &now, &limit);
  if (rc != SQLITE_OK) return rc;
  for (i = 0; i < SV_N_ARGS; i++) {
    pCur->apArg[i] = sqlite3_value_dup(argv[i]);
    if (pCur->apArg[i] == 0) return SQLITE_NOMEM;
  }
  if (pCur->pRow == 0) {
    char *zSql = sqlite3_mprintf(
        "SELECT revision, kind, body, source, expires_at, version, content_hash"
        " FROM \"%w\".evidence WHERE tenant = ?1 AND record_id = ?2",
        pTab->zSchema);
    if (zSql == 0) return SQLITE_NOMEM;
    rc = sqlite3_prepare_v2(pTab->db, zSql, -1, &pCur->pRow, 0);
    sqlite3_free(zSql);
    if (rc != SQLITE_OK) {
      return svError(cur->pVtab, rc, "evidence_search(): %s (create the schema from schema.sql first)",
                     sqlite3_errmsg(pTab->db));
    }
  }
  pTab->bReading = 1;
  rc = evidenceSearch(pTab->pSearcher, (const char *)sqlite3_value_text(argv[0]),
                      (size_t)sqlite3_value_bytes(argv[0]), (const char *)sqlite3_value_text(argv[1]),
                      (size_t)sqlite3_value_bytes(argv[1]), now, (const char *)sqlite3_value_text(argv[3]),
                      (size_t)sqlite3_value_bytes(argv[3]), (int)limit, &pCur->result, &zErr);
  pTab->bReading = 0;
  if (rc != SQLITE_OK) {
    rc = svError(cur->pVtab, rc, "evidence_search(): %s", zErr ? zErr : sqlite3_errstr(rc));
    sqlite3_free(zErr);
    return rc;
  }
  sqlite3_bind_value(pCur->pRow, 1, argv[0]);
  return svLoadRow(pCur);
}

static int svEof(sqlite3_vtab_cursor *cur) {
  SearchCursor *pCur = (SearchCursor *)cur;
  return pCur->iHit >= pCur->result.nHit;
}

static int svColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int iCol) {
  SearchCursor *pCur = (SearchCursor *)cur;
  const EvidenceSearchHit *h = &pCur->result.aHit[pCur->iHit];
  sqlite3_stmt *pRow = pCur->pRow;
  switch (iCol) {
    case SV_RECORD_ID:
      sqlite3_result_text64(ctx, h->zRecordId, h->nRecordId, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case SV_REVISION: sqlite3_result_value(ctx, sqlite3_column_value(pRow, 0)); break;
    case SV_KIND: sqlite3_result_value(ctx, sqlite3_column_value(pRow, 1)); break;
    case SV_SCORE: sqlite3_result_int64(ctx, h->score); break;
    case SV_CITATION: sqlite3_result_value(ctx, sqlite3_column_value(pRow, 3)); break;
    case SV_BODY: sqlite3_result_value(ctx, sqlite3_column_value(pRow, 2)); break;
    case SV_EXPIRES_AT: sqlite3_result_value(ctx, sqlite3_column_value(pRow, 4)); break;
    case SV_VERSION: {
      char *z = sqlite3_mprintf("%lld-%s", sqlite3_column_int64(pRow, 5), sqlite3_column_text(pRow, 6));
      if (z == 0) return SQLITE_NOMEM;
      sqlite3_result_text(ctx, z, -1, sqlite3_free);
      break;
    }
    case SV_ELIGIBLE_COUNT: sqlite3_result_int64(ctx, pCur->result.nEligible); break;
    default: sqlite3_result_value(ctx, pCur->apArg[iCol - SV_ARG_TENANT]); break;
  }
  return SQLITE_OK;
}

static int svRowid(sqlite3_vtab_cursor *cur, sqlite_int64 *pRowid) {
  *pRowid = ((SearchCursor *)cur)->iHit;
  return SQLITE_OK;
}

/* Every argument an equality on its hidden column (evidencePlanArgs). */
static int svBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  int missing = 0;
  int rc = evidencePlanArgs(pInfo, SV_ARG_TENANT, SV_N_ARGS, &missing);
  (void)pVtab;
  if (rc != SQLITE_OK) return rc;
  if (missing) {
    pInfo->idxNum = missing << SV_MISSING_SHIFT;
    return SQLITE_OK;
  }
  pInfo->idxNum = 0;
  pInfo->estimatedCost = 10.0;
  pInfo->estimatedRows = SV_MAX_LIMIT;
  return SQLITE_OK;
}

static sqlite3_module searchModule = {
    0,            /* iVersion */
    0,            /* xCreate: 0 makes it eponymous-only */
    svConnect,    /* xConnect */
    svBestIndex,  /* xBestIndex */
    svDisconnect, /* xDisconnect */
    0,            /* xDestroy */
    svOpen,       /* xOpen */
    svClose,      /* xClose */
    svFilter,     /* xFilter */
    svNext,       /* xNext */
    svEof,        /* xEof */
    svColumn,     /* xColumn */
    svRowid,      /* xRowid */
    0,            /* xUpdate: read-only */
    0,            /* xBegin */
    0,            /* xSync */
    0,            /* xCommit */
    0,            /* xRollback */
    0,            /* xFindFunction */
    0,            /* xRename */
    0,            /* xSavepoint */
    0,            /* xRelease */
    0,            /* xRollbackTo */
    0,            /* xShadowName */
};

/*
** evidence_eligible_count(tenant, revision, now): how many rows evidence_eligible(tenant,
** revision, now) yields, read from the token index's counts (a few rows) instead of
** counting the rows. It is evidence_search's eligible_count, there on every row; this
** gives it also when no row matches, as a cluster's retrieve needs (one statement,
** one snapshot). The arguments follow evidence_eligible's rules.
*/
static void eligibleCountFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  static const int aWant[3] = {SQLITE_TEXT, SQLITE_TEXT, SQLITE_INTEGER};
  int *pbReading = sqlite3_user_data(ctx); /* the connection's, as bReading of SearchVtab */
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  EvidenceSearcher *pSearcher = 0;
  EvidenceSearchResult result;
  sqlite3_int64 aInt[3] = {0, 0, 0};
  char *zErr = 0;
  int rc;
  (void)argc;
  if (*pbReading) {
    sqlite3_result_error(ctx, zReentered, -1); /* the outer call's message names the function */
    return;
  }
  rc = evidenceCheckArgs("evidence_eligible_count", argv, 3, aWant, azArgName, aInt, &zErr);
  if (rc != SQLITE_OK) {
    if (zErr)
      sqlite3_result_error(ctx, zErr, -1);
    else
      sqlite3_result_error_nomem(ctx);
    sqlite3_free(zErr);
    return;
  }
  rc = evidenceSearcherOpen(db, "main", &pSearcher);
  if (rc == SQLITE_OK) {
    /* no query tokens: the search stops once it has the scope's eligible count */
    *pbReading = 1;
    rc = evidenceSearch(pSearcher, (const char *)sqlite3_value_text(argv[0]),
                        (size_t)sqlite3_value_bytes(argv[0]), (const char *)sqlite3_value_text(argv[1]),
                        (size_t)sqlite3_value_bytes(argv[1]), aInt[2], "", 0, 1, &result, &zErr);
    *pbReading = 0;
    if (rc == SQLITE_OK) sqlite3_result_int64(ctx, result.nEligible);
    evidenceSearchResultClear(&result);
  }
  evidenceSearcherFree(pSearcher);
  if (rc != SQLITE_OK) {
    char *z = sqlite3_mprintf("evidence_eligible_count(): %s", zErr ? zErr : sqlite3_errstr(rc));
    sqlite3_result_error(ctx, z ? z : "out of memory", -1);
    sqlite3_result_error_code(ctx, rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR);
    sqlite3_free(z);
    sqlite3_free(zErr);
  }
}

int evidenceSearchRegister(sqlite3 *db) {
  int rc = sqlite3_create_module(db, "evidence_search", &searchModule, 0);
  if (rc == SQLITE_OK) {
    int *pbReading = sqlite3_malloc(sizeof(int));
    if (pbReading == 0) return SQLITE_NOMEM;
    *pbReading = 0;
    /* SQLite frees pbReading with the function, also when registering it fails */
    rc = sqlite3_create_function_v2(db, "evidence_eligible_count", 3, SQLITE_UTF8 | SQLITE_INNOCUOUS,
                                    pbReading, eligibleCountFunc, 0, 0, sqlite3_free);
  }
  return rc;
}
