/*
** evidence_index_write.c: the token index, written a batch at a time.
**
** The native engine's put and put_many (evidence_batch.c) keep the index in step
** themselves, in the same transaction, while evidence_writer_vouches() is 1 and
** the index triggers of schema.sql step aside. The result is the index those
** triggers would leave after the same writes, byte for byte (schema.sql, "The
** token index", defines the rules; tests/test_index_model.py compares): each record's
** new current row, in (tenant, revision, expires_at, record_id) order, takes the old one out (keeping
** its document number within the same scope) and goes in. The difference is
** cost: each docset, expiry count and scope touched by the batch is read and
** written once, not once per record and token.
**
**   evidenceIndexRecord  reads the old current row, gives the new one its document
**                        number, and queues the postings and expiry changes;
**   evidenceIndexFinish  sorts the queues and applies them, then the scopes.
*/
#include "evidence_index_write.h"

#include <stdlib.h>
#include <string.h>

#include "evidence_docset.h"
#include "evidence_tokens.h"

enum {
  IW_OLD_ROW,
  IW_SCOPE,
  IW_MAX_SCOPE,
  IW_POSTING_READ,
  IW_POSTING_WRITE,
  IW_POSTING_DELETE,
  IW_EXPIRY_READ,
  IW_EXPIRY_WRITE,
  IW_EXPIRY_DELETE,
  IW_SCOPE_INSERT,
  IW_SCOPE_UPDATE,
  IW_ALL_ROWS,
  IW_RENUMBER,
  IW_POSTING_MERGE,
  IW_EXPIRY_ADD,
  N_IW_STMT
};

/* A docset's era is its chunk >> 3 (the CHECK of evidence_index_postings.era, schema.sql). */
static const char *const azIwSql[N_IW_STMT] = {
    /* the record's current row and its number */
    "SELECT c.revision, c.expires_at, v.body, c.doc FROM evidence_current AS c"
    " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
    " WHERE c.tenant = ?1 AND c.record_id = ?2",
    "SELECT scope, docs, next_doc FROM evidence_index_scopes WHERE tenant = ?1 AND revision = ?2",
    "SELECT coalesce(max(scope), 0) FROM evidence_index_scopes",
    "SELECT docs FROM evidence_index_postings"
    " WHERE scope = ?1 AND era = ?3 >> 3 AND token = ?2 AND chunk = ?3",
    "INSERT INTO evidence_index_postings (scope, era, token, chunk, docs) VALUES (?1, ?3 >> 3, ?2, ?3, ?4)"
    " ON CONFLICT (scope, era, token, chunk) DO UPDATE SET docs = excluded.docs",
    "DELETE FROM evidence_index_postings WHERE scope = ?1 AND era = ?3 >> 3 AND token = ?2 AND chunk = ?3",
    "SELECT rows FROM evidence_index_expiry WHERE scope = ?1 AND level = ?2 AND bucket = ?3",
    "INSERT INTO evidence_index_expiry (scope, level, bucket, rows) VALUES (?1, ?2, ?3, ?4)"
    " ON CONFLICT (scope, level, bucket) DO UPDATE SET rows = excluded.rows",
    "DELETE FROM evidence_index_expiry WHERE scope = ?1 AND level = ?2 AND bucket = ?3",
    "INSERT INTO evidence_index_scopes (tenant, revision, scope, docs, next_doc) VALUES (?1, ?2, ?3, ?4, ?5)",
    "UPDATE evidence_index_scopes SET docs = ?2, next_doc = ?3 WHERE scope = ?1",
    /* pyevidence/storage/index/maintain.py:_ALL_ROWS_SQL: the key's order, which IW_RENUMBER
    ** has just made (tenant, revision, expires_at, record_id) order too */
    "SELECT c.tenant, c.revision, c.expires_at, c.doc, v.body FROM evidence_current AS c"
    " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
    " ORDER BY c.tenant, c.revision, c.doc",
    /* pyevidence/storage/index/rebuild.py:RENUMBER_SQL */
    "UPDATE evidence_current SET doc = n.doc FROM (SELECT tenant, record_id, row_number() OVER"
    " (PARTITION BY tenant, revision ORDER BY expires_at, record_id) - 1 AS doc FROM evidence_current) AS n"
    " WHERE evidence_current.tenant = n.tenant AND evidence_current.record_id = n.record_id"
    " AND evidence_current.doc <> n.doc",
    /* documents only added: merged in one statement, without reading the docset first */
    "INSERT INTO evidence_index_postings (scope, era, token, chunk, docs) VALUES (?1, ?3 >> 3, ?2, ?3, ?4)"
    " ON CONFLICT (scope, era, token, chunk) DO UPDATE SET docs = evidence_docset_union(docs, excluded.docs)",
    "INSERT INTO evidence_index_expiry (scope, level, bucket, rows) VALUES (?1, ?2, ?3, ?4)"
    " ON CONFLICT (scope, level, bucket) DO UPDATE SET rows = rows + excluded.rows",
};

#define EXPIRY_LEVELS 8
#define ERA_DOC_BITS (EVIDENCE_CHUNK_BITS + EVIDENCE_ERA_CHUNK_BITS) /* a document's era: doc >> 15 */

/* A scope the batch touched, with its counts as the batch leaves them. */
typedef struct IwScope {
  char *zTenant; /* tenant, then revision, in one allocation */
  size_t nTenant;
  const char *zRevision;
  size_t nRevision;
  int64_t scope;
  int64_t docs, nextDoc;       /* as the batch leaves them */
  int64_t docsWas, nextDocWas; /* as the batch found them */
  int bNew;                    /* created by this batch: inserted at the end */
} IwScope;

/* One change to a docset: document doc of scope gains (bAdd) or loses token tok (an
** index into the batch's distinct tokens; rank is its place in byte order, set by
** Finish). seq keeps the changes of one docset in order. iScope is the scope's entry
** in aScope, and order its place in ascending scope order (set by Finish). */
typedef struct IwPosting {
  int64_t scope;
  int64_t doc;
  uint32_t tok;
  uint32_t rank;
  size_t seq;
  uint32_t iScope;
  uint32_t order;
  int bAdd;
} IwPosting;

/* A distinct token of the batch: its bytes in the arena, and the stamp of the last
** body iwEnterToken() queued it for (0: none). */
typedef struct IwToken {
  size_t off, len;
  uint64_t hash;
  uint64_t stamp;
} IwToken;

typedef struct IwExpiry {
  int64_t scope;
  int64_t bucket;
  int level;
  int delta;
} IwExpiry;

struct EvidenceIndexWriter {
  sqlite3 *db; /* the connection the statements belong to */
  sqlite3_stmt *aStmt[N_IW_STMT];
  IwScope *aScope;
  size_t nScope, nScopeAlloc;
  int64_t nextScope; /* 0: not read yet */
  IwPosting *aPost;
  size_t nPost, nPostAlloc;
  char *zArena;
  size_t nArena, nArenaAlloc;
  IwToken *aTok; /* the batch's distinct tokens */
  uint32_t nTok, nTokAlloc;
  uint32_t *aSlot; /* open addressing over aTok: index + 1, 0 for empty */
  uint32_t nSlot;  /* a power of two, at least twice nTok */
  IwExpiry *aExp;
  size_t nExp, nExpAlloc;
  EvidenceTokenList oldTokens, newTokens;
  uint64_t nStamp; /* the stamp of the last body entered (iwEnter) */
  int bBroken;     /* the index disagrees with the records: SQLITE_CORRUPT came from here */
};

/* The index does not hold what the records say it must: a raw write to its tables,
** or a bug. The caller's message names `pyevidence reindex` as the way out. */
static int iwBroken(EvidenceIndexWriter *p) {
  p->bBroken = 1;
  return SQLITE_CORRUPT;
}

int evidenceIndexWriterBroken(const EvidenceIndexWriter *p) {
  return p->bBroken;
}

int evidenceIndexWriterOpen(EvidenceIndexWriter **pp) {
  EvidenceIndexWriter *p = sqlite3_malloc(sizeof(*p));
  *pp = p;
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  return SQLITE_OK;
}

static void iwClearScopes(EvidenceIndexWriter *p) {
  size_t i;
  for (i = 0; i < p->nScope; i++) sqlite3_free(p->aScope[i].zTenant);
  p->nScope = 0;
}

void evidenceIndexWriterFree(EvidenceIndexWriter *p) {
  int i;
  if (p == 0) return;
  for (i = 0; i < N_IW_STMT; i++) sqlite3_finalize(p->aStmt[i]);
  iwClearScopes(p);
  sqlite3_free(p->aScope);
  sqlite3_free(p->aPost);
  sqlite3_free(p->zArena);
  sqlite3_free(p->aTok);
  sqlite3_free(p->aSlot);
  sqlite3_free(p->aExp);
  evidenceTokenListFree(&p->oldTokens);
  evidenceTokenListFree(&p->newTokens);
  sqlite3_free(p);
}

void evidenceIndexBegin(EvidenceIndexWriter *p) {
  iwClearScopes(p);
  p->nextScope = 0;
  p->nPost = 0;
  p->nArena = 0;
  p->nTok = 0;
  if (p->aSlot) memset(p->aSlot, 0, p->nSlot * sizeof(uint32_t));
  p->nExp = 0;
  p->bBroken = 0;
}

static int iwStmt(sqlite3 *db, EvidenceIndexWriter *p, int id, sqlite3_stmt **ppStmt) {
  if (p->db != db) { /* a writer serves one connection; start afresh on another */
    int i;
    for (i = 0; i < N_IW_STMT; i++) {
      sqlite3_finalize(p->aStmt[i]);
      p->aStmt[i] = 0;
    }
    p->db = db;
  }
  if (p->aStmt[id] == 0) {
    int rc = sqlite3_prepare_v3(db, azIwSql[id], -1, SQLITE_PREPARE_PERSISTENT, &p->aStmt[id], 0);
    if (rc != SQLITE_OK) return rc;
  }
  *ppStmt = p->aStmt[id];
  return SQLITE_OK;
}

static int bindText(sqlite3_stmt *pStmt, int i, const char *z, size_t n) {
  return sqlite3_bind_text64(pStmt, i, z, (sqlite3_uint64)n, SQLITE_STATIC, SQLITE_UTF8);
}

/* Steps a write statement to its end and resets it. */
static int iwRun(sqlite3_stmt *pStmt, int rc) {
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  return rc;
}

static int sameText(const char *a, size_t na, const char *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* The batch's entry for scope (tenant, revision): read from the table on first use,
** created (numbered max + 1) when bCreate and the table has none. *ppScope is 0
** when the scope does not exist and !bCreate. */
static int iwScope(sqlite3 *db, EvidenceIndexWriter *p, const char *zTenant, size_t nTenant,
                   const char *zRevision, size_t nRevision, int bCreate, IwScope **ppScope) {
  sqlite3_stmt *pStmt = 0;
  IwScope *s;
  size_t i;
  int rc;
  *ppScope = 0;
  /* A batch touches few scopes, and the records come grouped by scope: search from the end. */
  for (i = p->nScope; i > 0; i--) {
    s = &p->aScope[i - 1];
    if (sameText(s->zTenant, s->nTenant, zTenant, nTenant) &&
        sameText(s->zRevision, s->nRevision, zRevision, nRevision)) {
      *ppScope = s;
      return SQLITE_OK;
    }
  }
  if (p->nScope == p->nScopeAlloc) {
    size_t nNew = p->nScopeAlloc ? 2 * p->nScopeAlloc : 8;
    IwScope *aNew = sqlite3_realloc64(p->aScope, nNew * sizeof(IwScope));
    if (aNew == 0) return SQLITE_NOMEM;
    p->aScope = aNew;
    p->nScopeAlloc = nNew;
  }
  s = &p->aScope[p->nScope];
  memset(s, 0, sizeof(*s));
  rc = iwStmt(db, p, IW_SCOPE, &pStmt);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 1, zTenant, nTenant);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 2, zRevision, nRevision);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    s->scope = sqlite3_column_int64(pStmt, 0);
    s->docs = s->docsWas = sqlite3_column_int64(pStmt, 1);
    s->nextDoc = s->nextDocWas = sqlite3_column_int64(pStmt, 2);
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
    s->scope = 0;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_OK) return rc;
  if (s->scope == 0) {
    if (!bCreate) return SQLITE_OK;
    if (p->nextScope == 0) {
      rc = iwStmt(db, p, IW_MAX_SCOPE, &pStmt);
      if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
      if (rc == SQLITE_ROW) {
        p->nextScope = sqlite3_column_int64(pStmt, 0) + 1;
        rc = SQLITE_OK;
      }
      sqlite3_reset(pStmt);
      if (rc != SQLITE_OK) return rc;
    }
    s->scope = p->nextScope++;
    s->bNew = 1;
  }
  s->zTenant = sqlite3_malloc64(nTenant + nRevision + 1);
  if (s->zTenant == 0) return SQLITE_NOMEM;
  if (nTenant) memcpy(s->zTenant, zTenant, nTenant);
  if (nRevision) memcpy(s->zTenant + nTenant, zRevision, nRevision);
  s->nTenant = nTenant;
  s->zRevision = s->zTenant + nTenant;
  s->nRevision = nRevision;
  p->nScope++;
  *ppScope = s;
  return SQLITE_OK;
}

static uint64_t iwHash(const char *z, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)z[i]) * 0x100000001b3ULL; /* FNV-1a */
  return h;
}

/* Doubles the slot table (or makes the first one) and places every token again. */
static int iwGrowSlots(EvidenceIndexWriter *p) {
  uint32_t nNew = p->nSlot ? 2 * p->nSlot : 4096, i;
  uint32_t *aNew = sqlite3_malloc64((size_t)nNew * sizeof(uint32_t));
  if (aNew == 0) return SQLITE_NOMEM;
  memset(aNew, 0, (size_t)nNew * sizeof(uint32_t));
  for (i = 0; i < p->nTok; i++) {
    uint32_t k = (uint32_t)p->aTok[i].hash & (nNew - 1);
    while (aNew[k]) k = (k + 1) & (nNew - 1);
    aNew[k] = i + 1;
  }
  sqlite3_free(p->aSlot);
  p->aSlot = aNew;
  p->nSlot = nNew;
  return SQLITE_OK;
}

/* The batch's number for token zTok, added on first sight. */
static int iwToken(EvidenceIndexWriter *p, const char *zTok, size_t nTok, uint32_t *pTok) {
  uint64_t h = iwHash(zTok, nTok);
  uint32_t k;
  IwToken *t;
  if (2 * (p->nTok + 1) > p->nSlot && iwGrowSlots(p) != SQLITE_OK) return SQLITE_NOMEM;
  for (k = (uint32_t)h & (p->nSlot - 1); p->aSlot[k]; k = (k + 1) & (p->nSlot - 1)) {
    t = &p->aTok[p->aSlot[k] - 1];
    if (t->hash == h && t->len == nTok && memcmp(p->zArena + t->off, zTok, nTok) == 0) {
      *pTok = p->aSlot[k] - 1;
      return SQLITE_OK;
    }
  }
  if (p->nTok == p->nTokAlloc) {
    uint32_t nNew = p->nTokAlloc ? 2 * p->nTokAlloc : 1024;
    IwToken *aNew = sqlite3_realloc64(p->aTok, (size_t)nNew * sizeof(IwToken));
    if (aNew == 0) return SQLITE_NOMEM;
    p->aTok = aNew;
    p->nTokAlloc = nNew;
  }
  if (p->nArena + nTok > p->nArenaAlloc) {
    size_t nNew = p->nArenaAlloc ? 2 * p->nArenaAlloc : 65536;
    char *zNew;
    while (nNew < p->nArena + nTok) nNew *= 2;
    zNew = sqlite3_realloc64(p->zArena, nNew);
    if (zNew == 0) return SQLITE_NOMEM;
    p->zArena = zNew;
    p->nArenaAlloc = nNew;
  }
  memcpy(p->zArena + p->nArena, zTok, nTok);
  t = &p->aTok[p->nTok];
  t->off = p->nArena;
  t->len = nTok;
  t->hash = h;
  t->stamp = 0;
  p->nArena += nTok;
  p->aSlot[k] = p->nTok + 1;
  *pTok = p->nTok++;
  return SQLITE_OK;
}

static int iwQueueTok(EvidenceIndexWriter *p, const IwScope *s, int64_t doc, uint32_t tok, int bAdd) {
  IwPosting *o;
  if (p->nPost == p->nPostAlloc) {
    size_t nNew = p->nPostAlloc ? 2 * p->nPostAlloc : 1024;
    IwPosting *aNew = sqlite3_realloc64(p->aPost, nNew * sizeof(IwPosting));
    if (aNew == 0) return SQLITE_NOMEM;
    p->aPost = aNew;
    p->nPostAlloc = nNew;
  }
  o = &p->aPost[p->nPost];
  o->scope = s->scope;
  o->iScope = (uint32_t)(s - p->aScope);
  o->doc = doc;
  o->tok = tok;
  o->rank = 0;
  o->seq = p->nPost;
  o->bAdd = bAdd;
  p->nPost++;
  return SQLITE_OK;
}

static int iwQueuePosting(EvidenceIndexWriter *p, const IwScope *s, int64_t doc, const char *zTok,
                          size_t nTok, int bAdd) {
  uint32_t tok;
  int rc = iwToken(p, zTok, nTok, &tok);
  return rc == SQLITE_OK ? iwQueueTok(p, s, doc, tok, bAdd) : rc;
}

/* A body entering as document doc of scope s, its tokens queued as the tokenizer finds
** them. A token's stamp tells a repeat within the body, so entering needs no sorted list
** of the body's distinct tokens (the postings are sorted by Finish). */
typedef struct IwEntering {
  EvidenceIndexWriter *p;
  const IwScope *s;
  int64_t doc;
  uint64_t stamp;
} IwEntering;

static int iwEnterToken(void *pArg, const char *zTok, size_t nTok) {
  IwEntering *e = (IwEntering *)pArg;
  uint32_t tok;
  int rc = iwToken(e->p, zTok, nTok, &tok);
  if (rc != SQLITE_OK || e->p->aTok[tok].stamp == e->stamp) return rc;
  e->p->aTok[tok].stamp = e->stamp;
  return iwQueueTok(e->p, e->s, e->doc, tok, 1);
}

/* Queues the token's change for every token of list (all of them). */
static int iwQueueAll(EvidenceIndexWriter *p, const IwScope *s, int64_t doc, const EvidenceTokenList *list,
                      int bAdd) {
  size_t i;
  int rc = SQLITE_OK;
  for (i = 0; rc == SQLITE_OK && i < list->nToken; i++) {
    rc = iwQueuePosting(p, s, doc, list->zText + list->aStart[i], list->aLen[i], bAdd);
  }
  return rc;
}

static int compareBytes(const char *a, size_t na, const char *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c != 0) return c;
  return na < nb ? -1 : na > nb;
}

/* A new version in the same scope: only the tokens that differ change (both lists
** are ascending, so one merge walk finds them). */
static int iwQueueDifference(EvidenceIndexWriter *p, const IwScope *s, int64_t doc) {
  const EvidenceTokenList *o = &p->oldTokens, *n = &p->newTokens;
  size_t i = 0, j = 0;
  int rc = SQLITE_OK;
  while (rc == SQLITE_OK && (i < o->nToken || j < n->nToken)) {
    int c;
    if (i == o->nToken) {
      c = 1;
    } else if (j == n->nToken) {
      c = -1;
    } else {
      c = compareBytes(o->zText + o->aStart[i], o->aLen[i], n->zText + n->aStart[j], n->aLen[j]);
    }
    if (c < 0) {
      rc = iwQueuePosting(p, s, doc, o->zText + o->aStart[i], o->aLen[i], 0);
      i++;
    } else if (c > 0) {
      rc = iwQueuePosting(p, s, doc, n->zText + n->aStart[j], n->aLen[j], 1);
      j++;
    } else {
      i++;
      j++;
    }
  }
  return rc;
}

static int iwQueueExpiry(EvidenceIndexWriter *p, int64_t scope, int64_t expiresAt, int delta) {
  int level;
  if (p->nExp + EXPIRY_LEVELS > p->nExpAlloc) {
    size_t nNew = p->nExpAlloc ? 2 * p->nExpAlloc : 1024;
    IwExpiry *aNew = sqlite3_realloc64(p->aExp, nNew * sizeof(IwExpiry));
    if (aNew == 0) return SQLITE_NOMEM;
    p->aExp = aNew;
    p->nExpAlloc = nNew;
  }
  for (level = 0; level < EXPIRY_LEVELS; level++) {
    IwExpiry *e = &p->aExp[p->nExp++];
    e->scope = scope;
    e->level = level;
    e->bucket = expiresAt >> (8 * level); /* expires_at >= 0 (schema.sql CHECK) */
    e->delta = delta;
  }
  return SQLITE_OK;
}

/* The new current row, with body zBody[0..nBody), enters scope s as a new document,
** numbered *pDoc. */
static int iwEnter(EvidenceIndexWriter *p, IwScope *s, int64_t expiresAt, const unsigned char *zBody,
                   size_t nBody, int64_t *pDoc) {
  int64_t doc = s->nextDoc;
  IwEntering e;
  int rc;
  /* numbers at the limit only come from a raw write of next_doc (or 2^32 documents
  ** entered since the last rebuild, which renumbers): refused before any overflow */
  if (doc < 0 || doc >= EVIDENCE_DOC_NUMBER_LIMIT) return iwBroken(p);
  *pDoc = doc;
  s->nextDoc++;
  s->docs++;
  e.p = p;
  e.s = s;
  e.doc = doc;
  e.stamp = ++p->nStamp;
  rc = evidenceTokenize(zBody, nBody, iwEnterToken, &e);
  if (rc == SQLITE_OK) rc = iwQueueExpiry(p, s->scope, expiresAt, 1);
  return rc;
}

int evidenceIndexRecord(sqlite3 *db, EvidenceIndexWriter *p, const char *tenant, size_t tenant_len,
                        const char *record_id, size_t record_id_len, const char *revision,
                        size_t revision_len, int64_t expires_at, const char *body, size_t body_len, int bNew,
                        int64_t *pDoc) {
  sqlite3_stmt *pOld = 0;
  IwScope *pNew = 0, *pWas = 0;
  const unsigned char *zBody = (const unsigned char *)body;
  int64_t oldExpires = 0, doc = 0;
  int rc = iwScope(db, p, tenant, tenant_len, revision, revision_len, 1, &pNew);
  if (rc == SQLITE_OK && bNew) return iwEnter(p, pNew, expires_at, zBody, body_len, pDoc);
  if (rc == SQLITE_OK) rc = iwStmt(db, p, IW_OLD_ROW, &pOld);
  if (rc != SQLITE_OK) return rc;
  rc = bindText(pOld, 1, tenant, tenant_len);
  if (rc == SQLITE_OK) rc = bindText(pOld, 2, record_id, record_id_len);
  if (rc == SQLITE_OK) rc = sqlite3_step(pOld);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(pOld);
    return iwEnter(p, pNew, expires_at, zBody, body_len, pDoc);
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(pOld);
    return rc;
  }
  /* The record has a current row: its old body's tokens, scope and document number,
  ** which the index must have given. */
  oldExpires = sqlite3_column_int64(pOld, 1);
  doc = sqlite3_column_int64(pOld, 3);
  rc = evidenceTokenListBuild(&p->oldTokens, sqlite3_column_text(pOld, 2),
                              (size_t)sqlite3_column_bytes(pOld, 2));
  if (rc == SQLITE_OK) {
    rc = iwScope(db, p, tenant, tenant_len, (const char *)sqlite3_column_text(pOld, 0),
                 (size_t)sqlite3_column_bytes(pOld, 0), 0, &pWas);
  }
  sqlite3_reset(pOld);
  /* a number the index never gave: pyevidence/storage/index/maintain.py checks the same */
  if (rc == SQLITE_OK && (pWas == 0 || doc < 0 || doc >= pWas->nextDoc)) rc = iwBroken(p);
  /* pNew again: looking up the old scope may have moved the scope array */
  if (rc == SQLITE_OK) rc = iwScope(db, p, tenant, tenant_len, revision, revision_len, 1, &pNew);
  if (rc != SQLITE_OK) return rc;
  if (pWas == pNew) { /* same scope: the document keeps its number; only changed tokens move */
    *pDoc = doc;
    rc = evidenceTokenListBuild(&p->newTokens, zBody, body_len);
    if (rc == SQLITE_OK) rc = iwQueueDifference(p, pNew, doc);
    if (rc == SQLITE_OK && oldExpires != expires_at) {
      rc = iwQueueExpiry(p, pNew->scope, oldExpires, -1);
      if (rc == SQLITE_OK) rc = iwQueueExpiry(p, pNew->scope, expires_at, 1);
    }
    return rc;
  }
  /* another revision: out of the old scope, into the new one */
  rc = iwQueueAll(p, pWas, doc, &p->oldTokens, 0);
  if (rc == SQLITE_OK) rc = iwQueueExpiry(p, pWas->scope, oldExpires, -1);
  pWas->docs--;
  if (rc == SQLITE_OK) rc = iwEnter(p, pNew, expires_at, zBody, body_len, pDoc);
  return rc;
}

/* ---- Finish: the queued changes, grouped ---- */

static int comparePosting(const void *pa, const void *pb) {
  const IwPosting *a = pa, *b = pb;
  if (a->scope != b->scope) return a->scope < b->scope ? -1 : 1;
  if ((a->doc >> ERA_DOC_BITS) != (b->doc >> ERA_DOC_BITS)) {
    return (a->doc >> ERA_DOC_BITS) < (b->doc >> ERA_DOC_BITS) ? -1 : 1;
  }
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if ((a->doc >> EVIDENCE_CHUNK_BITS) != (b->doc >> EVIDENCE_CHUNK_BITS)) {
    return (a->doc >> EVIDENCE_CHUNK_BITS) < (b->doc >> EVIDENCE_CHUNK_BITS) ? -1 : 1;
  }
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Ranks the batch's distinct tokens in byte order (a merge sort: qsort has no context
** argument in C11), so the docsets are written in the table's key order. */
static int iwRankTokens(EvidenceIndexWriter *p, uint32_t **paRank) {
  uint32_t *aIdx = sqlite3_malloc64((size_t)p->nTok * 3 * sizeof(uint32_t) + 1), *aTmp, *aRank, width, i;
  *paRank = aIdx;
  if (aIdx == 0) return SQLITE_NOMEM;
  aTmp = aIdx + p->nTok;
  aRank = aTmp + p->nTok;
  for (i = 0; i < p->nTok; i++) aIdx[i] = i;
  for (width = 1; width < p->nTok; width *= 2) {
    for (i = 0; i < p->nTok; i += 2 * width) {
      uint32_t lo = i, mid = i + width < p->nTok ? i + width : p->nTok;
      uint32_t hi = i + 2 * width < p->nTok ? i + 2 * width : p->nTok, a = lo, b = mid, k = lo;
      while (a < mid && b < hi) {
        const IwToken *x = &p->aTok[aIdx[a]], *y = &p->aTok[aIdx[b]];
        aTmp[k++] =
            compareBytes(p->zArena + x->off, x->len, p->zArena + y->off, y->len) <= 0 ? aIdx[a++] : aIdx[b++];
      }
      while (a < mid) aTmp[k++] = aIdx[a++];
      while (b < hi) aTmp[k++] = aIdx[b++];
    }
    memcpy(aIdx, aTmp, (size_t)p->nTok * sizeof(uint32_t));
  }
  for (i = 0; i < p->nTok; i++) aRank[aIdx[i]] = i;
  return SQLITE_OK;
}

/* A scope number and its entry in aScope, to put the batch's scopes in order. */
typedef struct IwScopeRef {
  int64_t scope;
  uint32_t iScope;
} IwScopeRef;

static int compareScopeRef(const void *pa, const void *pb) {
  const IwScopeRef *a = pa, *b = pb;
  return a->scope < b->scope ? -1 : a->scope > b->scope;
}

/* What the two sort keys of iwSortPostings need besides the posting. */
typedef struct IwSortKeys {
  int64_t loChunk; /* the lowest chunk of the batch */
  int64_t loEra;   /* and its era */
  size_t nEra;     /* eras from loEra to the highest of the batch */
  uint32_t nTok;
} IwSortKeys;

static size_t iwChunkKey(const IwPosting *o, const IwSortKeys *k) {
  return (size_t)((o->doc >> EVIDENCE_CHUNK_BITS) - k->loChunk);
}

static size_t iwGroupKey(const IwPosting *o, const IwSortKeys *k) {
  return ((size_t)o->order * k->nEra + (size_t)((o->doc >> ERA_DOC_BITS) - k->loEra)) * k->nTok + o->rank;
}

/* One pass of a stable counting sort: the postings aIn[0..n) (indexes into aPost) into
** aOut, by xKey, whose values are below nKey; aCount has room for nKey counters. */
static void iwCountingPass(const IwPosting *aPost, const uint32_t *aIn, uint32_t *aOut, size_t n,
                           size_t *aCount, size_t nKey, size_t (*xKey)(const IwPosting *, const IwSortKeys *),
                           const IwSortKeys *pKeys) {
  size_t i, sum = 0;
  memset(aCount, 0, nKey * sizeof(size_t));
  for (i = 0; i < n; i++) aCount[xKey(&aPost[aIn[i]], pKeys)]++;
  for (i = 0; i < nKey; i++) {
    size_t c = aCount[i];
    aCount[i] = sum;
    sum += c;
  }
  for (i = 0; i < n; i++) aOut[aCount[xKey(&aPost[aIn[i]], pKeys)]++] = aIn[i];
}

/* The queued postings in the order comparePosting defines, as indexes into aPost, into
** *paIdx (free it with sqlite3_free). The queue is already in seq order, so two stable
** counting passes, by chunk and then by (scope, era, token), leave each docset's changes
** together and in the order they were queued, in linear time (qsort took a tenth of
** put_many's time on batches of 10,000 records), and only indexes move: 8 bytes a
** posting. When the keys span far more values than there are postings (document
** numbers far apart, or a batch over very many scopes), qsort is the cheaper way. */
static int iwSortPostings(EvidenceIndexWriter *p, uint32_t **paIdx) {
  int64_t loChunk = INT64_MAX, hiChunk = INT64_MIN;
  uint64_t nGroupWide;
  size_t i, nChunk, nGroup, nCount, *aCount;
  IwSortKeys keys;
  IwScopeRef *aRef;
  uint32_t *aIdx, *aTmp, *aOrder;
  *paIdx = 0;
  if (p->nPost > UINT32_MAX) return SQLITE_TOOBIG; /* some 4 billion token changes in one batch */
  aIdx = sqlite3_malloc64(p->nPost * 2 * sizeof(uint32_t));
  if (aIdx == 0) return SQLITE_NOMEM;
  aTmp = aIdx + p->nPost;
  for (i = 0; i < p->nPost; i++) {
    int64_t c = p->aPost[i].doc >> EVIDENCE_CHUNK_BITS;
    if (c < loChunk) loChunk = c;
    if (c > hiChunk) hiChunk = c;
    aIdx[i] = (uint32_t)i;
  }
  *paIdx = aIdx;
  nGroupWide = (uint64_t)p->nScope * p->nTok *
               (uint64_t)((hiChunk >> EVIDENCE_ERA_CHUNK_BITS) - (loChunk >> EVIDENCE_ERA_CHUNK_BITS) + 1);
  if ((uint64_t)(hiChunk - loChunk) >= p->nPost + 4096 || nGroupWide > p->nPost + 65536) {
    qsort(p->aPost, p->nPost, sizeof(IwPosting), comparePosting);
    return SQLITE_OK;
  }
  nChunk = (size_t)(hiChunk - loChunk) + 1;
  nGroup = (size_t)nGroupWide;
  nCount = nChunk > nGroup ? nChunk : nGroup;
  aCount = sqlite3_malloc64(nCount * sizeof(size_t) + p->nScope * (sizeof(IwScopeRef) + sizeof(uint32_t)));
  if (aCount == 0) return SQLITE_NOMEM;
  aRef = (IwScopeRef *)(aCount + nCount);
  aOrder = (uint32_t *)(aRef + p->nScope);
  for (i = 0; i < p->nScope; i++) {
    aRef[i].scope = p->aScope[i].scope;
    aRef[i].iScope = (uint32_t)i;
  }
  qsort(aRef, p->nScope, sizeof(IwScopeRef), compareScopeRef);
  for (i = 0; i < p->nScope; i++) aOrder[aRef[i].iScope] = (uint32_t)i;
  for (i = 0; i < p->nPost; i++) p->aPost[i].order = aOrder[p->aPost[i].iScope];
  keys.loChunk = loChunk;
  keys.loEra = loChunk >> EVIDENCE_ERA_CHUNK_BITS;
  keys.nEra = (size_t)((hiChunk >> EVIDENCE_ERA_CHUNK_BITS) - keys.loEra + 1);
  keys.nTok = p->nTok;
  if (nChunk > 1) {
    iwCountingPass(p->aPost, aIdx, aTmp, p->nPost, aCount, nChunk, iwChunkKey, &keys);
    iwCountingPass(p->aPost, aTmp, aIdx, p->nPost, aCount, nGroup, iwGroupKey, &keys);
  } else {
    iwCountingPass(p->aPost, aIdx, aTmp, p->nPost, aCount, nGroup, iwGroupKey, &keys);
    memcpy(aIdx, aTmp, p->nPost * sizeof(uint32_t));
  }
  sqlite3_free(aCount);
  return SQLITE_OK;
}

static int compareExpiry(const void *pa, const void *pb) {
  const IwExpiry *a = pa, *b = pb;
  if (a->scope != b->scope) return a->scope < b->scope ? -1 : 1;
  if (a->level != b->level) return a->level < b->level ? -1 : 1;
  return a->bucket < b->bucket ? -1 : a->bucket > b->bucket;
}

/* Applies the changes aPost[0..n) to their one docset. */
static int iwApplyDocset(sqlite3 *db, EvidenceIndexWriter *p, const uint32_t *aIdx, size_t n) {
  uint64_t aWord[EVIDENCE_CHUNK_WORDS];
  unsigned char aOut[EVIDENCE_DOCSET_BITSET_BYTES];
  const IwPosting *aPost = p->aPost;
  const IwPosting *o = &aPost[aIdx[0]];
  const IwToken *t = &p->aTok[o->tok];
  const char *zTok = p->zArena + t->off;
  int64_t chunk = o->doc >> EVIDENCE_CHUNK_BITS;
  sqlite3_stmt *pStmt = 0;
  size_t i, nOut;
  int bHad = 0, bOnlyAdds = 1;
  int rc;
  for (i = 0; i < n; i++) bOnlyAdds &= aPost[aIdx[i]].bAdd;
  if (bOnlyAdds) { /* the common case, every new record: one upsert that merges */
    memset(aWord, 0, sizeof(aWord));
    for (i = 0; i < n; i++) {
      int d = (int)(aPost[aIdx[i]].doc & (EVIDENCE_CHUNK_DOCS - 1));
      aWord[d >> 6] |= (uint64_t)1 << (d & 63);
    }
    nOut = evidenceDocsetEncode(aWord, aOut);
    rc = iwStmt(db, p, IW_POSTING_MERGE, &pStmt);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, o->scope);
    if (rc == SQLITE_OK) rc = bindText(pStmt, 2, zTok, t->len);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, chunk);
    if (rc == SQLITE_OK) rc = sqlite3_bind_blob(pStmt, 4, aOut, (int)nOut, SQLITE_STATIC);
    return iwRun(pStmt, rc);
  }
  rc = iwStmt(db, p, IW_POSTING_READ, &pStmt);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, o->scope);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 2, zTok, t->len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, chunk);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    bHad = 1;
    rc = evidenceDocsetDecode(sqlite3_column_blob(pStmt, 0), (size_t)sqlite3_column_bytes(pStmt, 0), aWord)
             ? iwBroken(p)
             : SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    memset(aWord, 0, sizeof(aWord));
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_OK) return rc;
  for (i = 0; i < n; i++) {
    int d = (int)(aPost[aIdx[i]].doc & (EVIDENCE_CHUNK_DOCS - 1));
    if (aPost[aIdx[i]].bAdd) {
      aWord[d >> 6] |= (uint64_t)1 << (d & 63);
    } else {
      aWord[d >> 6] &= ~((uint64_t)1 << (d & 63));
    }
  }
  nOut = evidenceDocsetEncode(aWord, aOut);
  if (nOut == 0 && !bHad) return SQLITE_OK;
  rc = iwStmt(db, p, nOut ? IW_POSTING_WRITE : IW_POSTING_DELETE, &pStmt);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, o->scope);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 2, zTok, t->len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, chunk);
  if (rc == SQLITE_OK && nOut) rc = sqlite3_bind_blob(pStmt, 4, aOut, (int)nOut, SQLITE_STATIC);
  return iwRun(pStmt, rc);
}

static int iwApplyExpiry(sqlite3 *db, EvidenceIndexWriter *p, const IwExpiry *e, int64_t delta) {
  sqlite3_stmt *pStmt = 0;
  int64_t rows = 0;
  int rc;
  if (delta > 0) { /* rows only added: one upsert */
    rc = iwStmt(db, p, IW_EXPIRY_ADD, &pStmt);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, e->scope);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(pStmt, 2, e->level);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, e->bucket);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 4, delta);
    return iwRun(pStmt, rc);
  }
  rc = iwStmt(db, p, IW_EXPIRY_READ, &pStmt);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, e->scope);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(pStmt, 2, e->level);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, e->bucket);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    rows = sqlite3_column_int64(pStmt, 0);
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_OK) return rc;
  rows += delta;
  if (rows < 0) return iwBroken(p);
  rc = iwStmt(db, p, rows ? IW_EXPIRY_WRITE : IW_EXPIRY_DELETE, &pStmt);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, e->scope);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(pStmt, 2, e->level);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, e->bucket);
  if (rc == SQLITE_OK && rows) rc = sqlite3_bind_int64(pStmt, 4, rows);
  return iwRun(pStmt, rc);
}

static int iwApplyScope(sqlite3 *db, EvidenceIndexWriter *p, const IwScope *s) {
  sqlite3_stmt *pStmt = 0;
  int rc;
  if (s->bNew) {
    rc = iwStmt(db, p, IW_SCOPE_INSERT, &pStmt);
    if (rc == SQLITE_OK) rc = bindText(pStmt, 1, s->zTenant, s->nTenant);
    if (rc == SQLITE_OK) rc = bindText(pStmt, 2, s->zRevision, s->nRevision);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, s->scope);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 4, s->docs);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 5, s->nextDoc);
    return iwRun(pStmt, rc);
  }
  if (s->docs == s->docsWas && s->nextDoc == s->nextDocWas) return SQLITE_OK;
  rc = iwStmt(db, p, IW_SCOPE_UPDATE, &pStmt);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, s->scope);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 2, s->docs);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, s->nextDoc);
  return iwRun(pStmt, rc);
}

int evidenceIndexFinish(sqlite3 *db, EvidenceIndexWriter *p) {
  uint32_t *aRank = 0, *aIdx = 0;
  size_t i, j;
  int rc = p->nPost ? iwRankTokens(p, &aRank) : SQLITE_OK;
  if (rc == SQLITE_OK && p->nPost) {
    const uint32_t *aByTok = aRank + 2 * (size_t)p->nTok;
    for (i = 0; i < p->nPost; i++) p->aPost[i].rank = aByTok[p->aPost[i].tok];
    rc = iwSortPostings(p, &aIdx);
  }
  sqlite3_free(aRank);
  for (i = 0; rc == SQLITE_OK && i < p->nPost; i = j) {
    const IwPosting *a = &p->aPost[aIdx[i]];
    for (j = i + 1; j < p->nPost; j++) {
      const IwPosting *b = &p->aPost[aIdx[j]];
      if (b->scope != a->scope || b->tok != a->tok ||
          (b->doc >> EVIDENCE_CHUNK_BITS) != (a->doc >> EVIDENCE_CHUNK_BITS)) {
        break;
      }
    }
    rc = iwApplyDocset(db, p, &aIdx[i], j - i);
  }
  sqlite3_free(aIdx);
  qsort(p->aExp, p->nExp, sizeof(IwExpiry), compareExpiry);
  for (i = 0; rc == SQLITE_OK && i < p->nExp; i = j) {
    int64_t delta = 0;
    for (j = i; j < p->nExp && compareExpiry(&p->aExp[i], &p->aExp[j]) == 0; j++) delta += p->aExp[j].delta;
    if (delta != 0) rc = iwApplyExpiry(db, p, &p->aExp[i], delta);
  }
  /* New scopes in the order they were numbered, as the triggers would insert them. */
  for (i = 0; rc == SQLITE_OK && i < p->nScope; i++) rc = iwApplyScope(db, p, &p->aScope[i]);
  return rc;
}

/* ---- Rebuild ---- */

/* Rows between two progress reports, and between two flushes of the queues (which
** bounds the memory a rebuild needs). */
#define REBUILD_STEP 8192

int evidenceIndexRebuild(sqlite3 *db, EvidenceIndexWriter *p, int (*xProgress)(void *, int64_t, int64_t),
                         void *pArg) {
  static const char zEmpty[] =
      "DELETE FROM evidence_index_postings; DELETE FROM evidence_index_expiry;"
      " DELETE FROM evidence_index_scopes;";
  sqlite3_stmt *pStmt = 0, *pAll = 0;
  int64_t nTotal = 0, nDone = 0;
  int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM evidence", -1, &pStmt, 0);
  if (rc == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW) nTotal = sqlite3_column_int64(pStmt, 0);
  sqlite3_finalize(pStmt);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, zEmpty, 0, 0, 0);
  /* the numbers the rows are entered with below, written into evidence_current first */
  if (rc == SQLITE_OK) rc = iwStmt(db, p, IW_RENUMBER, &pStmt);
  if (rc == SQLITE_OK) rc = iwRun(pStmt, rc);
  if (rc == SQLITE_OK) rc = iwStmt(db, p, IW_ALL_ROWS, &pAll);
  if (rc != SQLITE_OK) return rc;
  evidenceIndexBegin(p);
  if (xProgress && xProgress(pArg, 0, nTotal)) rc = SQLITE_INTERRUPT;
  while (rc == SQLITE_OK && (rc = sqlite3_step(pAll)) == SQLITE_ROW) {
    IwScope *s = 0;
    rc = iwScope(db, p, (const char *)sqlite3_column_text(pAll, 0), (size_t)sqlite3_column_bytes(pAll, 0),
                 (const char *)sqlite3_column_text(pAll, 1), (size_t)sqlite3_column_bytes(pAll, 1), 1, &s);
    if (rc == SQLITE_OK) {
      const unsigned char *zBody = sqlite3_column_text(pAll, 4);
      size_t nBody = (size_t)sqlite3_column_bytes(pAll, 4);
      int64_t doc = -1;
      rc = iwEnter(p, s, sqlite3_column_int64(pAll, 2), zBody, nBody, &doc);
      /* the renumbering above gave the row this number: the same order */
      if (rc == SQLITE_OK && doc != sqlite3_column_int64(pAll, 3)) rc = iwBroken(p);
    }
    if (rc == SQLITE_OK && ++nDone % REBUILD_STEP == 0) {
      rc = evidenceIndexFinish(db, p);
      evidenceIndexBegin(p);
      if (rc == SQLITE_OK && xProgress && xProgress(pArg, nDone, nTotal)) rc = SQLITE_INTERRUPT;
    }
  }
  sqlite3_reset(pAll);
  if (rc == SQLITE_DONE) rc = evidenceIndexFinish(db, p);
  evidenceIndexBegin(p);
  if (rc == SQLITE_OK && xProgress && xProgress(pArg, nDone, nTotal)) rc = SQLITE_INTERRUPT;
  return rc;
}
