/*
** evidence_batch.c: put_many as a batch, the native engine's write path.
**
** It stores what n puts through the evidence_put view would store (schema.sql),
** without running that view's trigger once per record:
**
**   1. the chain head of each tenant in the batch and the latest version of each
**      record (its seq and chain position) are read once, then carried in memory;
**   2. every version is hashed here, with evidence_sha256()'s encoding
**      (evidence_hash.h), and appended to evidence_versions in chain order;
**   3. the current row of each record is written once, for its last version in
**      the batch, in (tenant, revision, expires_at, record_id) order, in which the
**      token index numbers the batch's new rows: they reach evidence_current, stored
**      by (tenant, revision, doc), in its key order, at the end of their scope.
**
** The rows are the trigger's, byte for byte: the same columns, hashes and chain
** (tests/test_write_path.py compares the two, on both engines). While the
** writer's statements run, evidence_writer_vouches() is 1 on its connection and
** the triggers of schema.sql that would recompute its rows, or check a current
** row against its version, step aside; the trigger that drops a replaced
** record's vector still runs.
** The statements are pyevidence/storage/schema.py's VERSION_APPEND_SQL,
** CURRENT_UPSERT_SQL and VECTOR_DROP_SQL, which the Python engine runs (a test
** keeps them equal). Each current row also goes into the token index
** (evidence_index_write.c), in the same order, before it is written.
**
** A batch of BATCH_UNCHECKED_MIN records or more runs its writes with the
** schema's triggers off and its CHECK constraints ignored: even when they step
** aside, the triggers cost a call and a statement journal per row, and the
** CHECKs repeat the validation every record has passed. Together they were a
** sixth of put_many (docs/performance.md). The one trigger that still acts on
** the writer's rows, dropping the vector of a record it replaces, it does
** itself. Smaller batches keep both: switching recompiles the connection's
** statements, which costs more than a few records save.
*/
#include "evidence_batch.h"

#include <stdlib.h>
#include <string.h>

#include "evidence_hash.h"
#include "evidence_index_write.h"

enum {
  BATCH_HEAD,
  BATCH_LATEST,
  BATCH_VERSION,
  BATCH_FORGOTTEN_DROP,
  BATCH_CURRENT,
  BATCH_VECTOR_DROP,
  N_BATCH_STMT
};

/* The smallest batch written with the schema's triggers and CHECKs off (see above);
** pyevidence/storage/engines/python_engine.py has the same number. */
#define BATCH_UNCHECKED_MIN 256

static const char *const azBatchSql[N_BATCH_STMT] = {
    /* BATCH_HEAD: the tenant's last link (none: a new chain), its hash as the hex the chain hashes */
    "SELECT chain_seq, lower(hex(chain_hash)) FROM evidence_versions WHERE tenant = ? ORDER BY chain_seq DESC"
    " LIMIT 1",
    /* BATCH_LATEST: pyevidence/storage/schema.py:LATEST_VERSION_SQL, no row when it has none */
    "SELECT v.seq, v.chain_seq, v.operation = 'forget' FROM evidence_versions AS v"
    " WHERE v.tenant = ? AND v.chain_seq = coalesce("
    "(SELECT chain_seq FROM evidence_current WHERE tenant = ? AND record_id = ?),"
    " (SELECT chain_seq FROM evidence_forgotten WHERE tenant = ? AND record_id = ?))",
    /* BATCH_VERSION: pyevidence/storage/schema.py:VERSION_APPEND_SQL */
    "INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, previous, operation, revision, kind,"
    " body, source, expires_at, content_hash, chain_hash)"
    " VALUES (?, ?, ?, ?, ?, 'put', ?, ?, ?, ?, ?, ?, ?)",
    /* BATCH_FORGOTTEN_DROP: pyevidence/storage/schema.py:FORGOTTEN_DROP_SQL */
    "DELETE FROM evidence_forgotten WHERE tenant = ? AND record_id = ?",
    /* BATCH_CURRENT: pyevidence/storage/schema.py:CURRENT_UPSERT_SQL */
    "INSERT INTO evidence_current (tenant, revision, expires_at, record_id, doc, chain_seq)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (tenant, record_id) DO UPDATE SET revision = excluded.revision,"
    " expires_at = excluded.expires_at, doc = excluded.doc, chain_seq = excluded.chain_seq",
    /* BATCH_VECTOR_DROP: pyevidence/storage/schema.py:VECTOR_DROP_SQL */
    "DELETE FROM evidence_vectors WHERE tenant = ? AND record_id = ?",
};

struct EvidenceBatch {
  sqlite3_stmt *aStmt[N_BATCH_STMT];
  EvidenceIndexWriter *pIndex; /* the token index, kept in step with the current rows */
  int bWriting;                /* the writer's own statements are running: evidence_writer_vouches() is 1 */
  char *zErr;                  /* db's message when an unchecked batch failed, or 0 */
};

/* What the batch computed for one record: its version and hashes. */
typedef struct BatchVersion {
  int64_t seq;
  int64_t chainSeq;
  int64_t previous; /* chain_seq of the record's version before it, 0: none */
  char zContent[65];
  char zChain[65];
} BatchVersion;

/* A slot of the open-addressing tables below; iRec is the index of the first
** record with the slot's key, plus one (0: empty). Per tenant: n is the chain
** head's chain_seq and zHash its chain_hash. Per record: n is the latest seq,
** iChain its chain_seq, iLast the index of the record's last occurrence in the batch. */
typedef struct BatchSlot {
  size_t iRec;
  size_t iLast;
  int64_t n;
  int64_t iChain;
  int64_t nBefore; /* per record: its latest seq before the batch (0: it had no version) */
  int bForgotten;  /* per record: that version was a tombstone (the batch revives it) */
  char zHash[65];
} BatchSlot;

typedef struct BatchTable {
  BatchSlot *a;
  size_t mask; /* size - 1, a power of two at least twice the records */
} BatchTable;

static uint64_t batchHashBytes(uint64_t h, const char *z, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)z[i]) * 0x100000001b3ULL; /* FNV-1a */
  return h;
}

static int sameText(const char *a, size_t na, const char *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* The slot of record i's tenant (bRecord = 0) or of its (tenant, record_id):
** the one holding that key, or the empty one where it goes. */
static BatchSlot *batchFind(BatchTable *t, const EvidencePut *aRec, size_t i, int bRecord) {
  const EvidencePut *r = &aRec[i];
  uint64_t h = batchHashBytes(0xcbf29ce484222325ULL, r->tenant, r->tenant_len);
  size_t k;
  if (bRecord) h = batchHashBytes(h * 31 + r->tenant_len, r->record_id, r->record_id_len);
  for (k = (size_t)h & t->mask;; k = (k + 1) & t->mask) {
    BatchSlot *s = &t->a[k];
    const EvidencePut *o;
    if (s->iRec == 0) return s;
    o = &aRec[s->iRec - 1];
    if (sameText(o->tenant, o->tenant_len, r->tenant, r->tenant_len) &&
        (!bRecord || sameText(o->record_id, o->record_id_len, r->record_id, r->record_id_len))) {
      return s;
    }
  }
}

static int bindText(sqlite3_stmt *pStmt, int i, const char *z, size_t n) {
  return sqlite3_bind_text64(pStmt, i, z, (sqlite3_uint64)n, SQLITE_STATIC, SQLITE_UTF8);
}

static int batchStmt(sqlite3 *db, EvidenceBatch *p, int id, sqlite3_stmt **ppStmt) {
  if (p->aStmt[id] == 0) {
    int rc = sqlite3_prepare_v3(db, azBatchSql[id], -1, SQLITE_PREPARE_PERSISTENT, &p->aStmt[id], 0);
    if (rc != SQLITE_OK) return rc;
  }
  *ppStmt = p->aStmt[id];
  return SQLITE_OK;
}

/* Steps a write statement to its end, then resets it. */
static int batchStep(sqlite3_stmt *pStmt, int rc) {
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  return rc;
}

/* Reads the chain head of record r's tenant into slot s. */
static int batchReadHead(sqlite3 *db, EvidenceBatch *p, const EvidencePut *r, BatchSlot *s) {
  sqlite3_stmt *pStmt = 0;
  int rc = batchStmt(db, p, BATCH_HEAD, &pStmt);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 1, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  s->n = 0;
  s->zHash[0] = 0; /* a new chain's "previous" is '' */
  if (rc == SQLITE_ROW) {
    const unsigned char *z = sqlite3_column_text(pStmt, 1);
    s->n = sqlite3_column_int64(pStmt, 0);
    if (z == 0 || sqlite3_column_bytes(pStmt, 1) != 64) {
      rc = z == 0 ? SQLITE_NOMEM : SQLITE_CORRUPT;
    } else {
      memcpy(s->zHash, z, 65);
      rc = SQLITE_OK;
    }
  }
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Reads record r's latest version into slot s: its seq (0: no version yet), its
** chain_seq and whether it is a tombstone. */
static int batchReadLatest(sqlite3 *db, EvidenceBatch *p, const EvidencePut *r, BatchSlot *s) {
  sqlite3_stmt *pStmt = 0;
  int rc = batchStmt(db, p, BATCH_LATEST, &pStmt);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 1, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 2, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 3, r->record_id, r->record_id_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 4, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 5, r->record_id, r->record_id_len);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  s->n = s->iChain = 0;
  s->bForgotten = 0;
  if (rc == SQLITE_ROW) {
    s->n = sqlite3_column_int64(pStmt, 0);
    s->iChain = sqlite3_column_int64(pStmt, 1);
    s->bForgotten = sqlite3_column_int(pStmt, 2);
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The content hash of a put: evidence_sha256('pyevidence content 2', tenant,
** record_id, revision, kind, body, source, expires_at). */
static void batchContentHash(const EvidencePut *r, char zHex[65]) {
  static const char zDomain[] = "pyevidence content 2";
  EvidenceHash h;
  evidenceHashInit(&h);
  evidenceHashText(&h, zDomain, sizeof(zDomain) - 1);
  evidenceHashText(&h, r->tenant, r->tenant_len);
  evidenceHashText(&h, r->record_id, r->record_id_len);
  evidenceHashText(&h, r->revision, r->revision_len);
  evidenceHashText(&h, r->kind, r->kind_len);
  evidenceHashText(&h, r->body, r->body_len);
  evidenceHashText(&h, r->source, r->source_len);
  evidenceHashInt(&h, r->expires_at);
  evidenceHashFinish(&h, zHex);
}

/* The chain hash of a put: evidence_sha256('pyevidence chain 2', previous,
** chain_seq, record_id, seq, 'put', content_hash). */
static void batchChainHash(const char *zPrevious, const EvidencePut *r, const BatchVersion *v,
                           char zHex[65]) {
  static const char zDomain[] = "pyevidence chain 2";
  EvidenceHash h;
  evidenceHashInit(&h);
  evidenceHashText(&h, zDomain, sizeof(zDomain) - 1);
  evidenceHashText(&h, zPrevious, strlen(zPrevious));
  evidenceHashInt(&h, v->chainSeq);
  evidenceHashText(&h, r->record_id, r->record_id_len);
  evidenceHashInt(&h, v->seq);
  evidenceHashText(&h, "put", 3);
  evidenceHashText(&h, v->zContent, 64);
  evidenceHashFinish(&h, zHex);
}

/* Numbers and hashes every record's version, reading each tenant's chain head
** and each record's latest version once. aLast receives the index of each record's
** last occurrence, *pnLast how many there are. */
static int batchLink(sqlite3 *db, EvidenceBatch *p, const EvidencePut *aRec, size_t n, BatchVersion *aVer,
                     BatchTable *pTenants, BatchTable *pRecords, size_t *aLast, size_t *pnLast) {
  size_t i, nLast = 0;
  int rc = SQLITE_OK;
  for (i = 0; i < n && rc == SQLITE_OK; i++) {
    BatchSlot *pTenant = batchFind(pTenants, aRec, i, 0);
    BatchSlot *pRecord = batchFind(pRecords, aRec, i, 1);
    if (pTenant->iRec == 0) {
      rc = batchReadHead(db, p, &aRec[i], pTenant);
      pTenant->iRec = i + 1;
    }
    if (rc == SQLITE_OK && pRecord->iRec == 0) {
      rc = batchReadLatest(db, p, &aRec[i], pRecord);
      pRecord->nBefore = pRecord->n;
      pRecord->iRec = i + 1;
      aLast[nLast++] = i; /* updated below to the last occurrence */
    }
    if (rc != SQLITE_OK) break;
    aVer[i].seq = ++pRecord->n;
    aVer[i].previous = pRecord->iChain;
    aVer[i].chainSeq = pRecord->iChain = ++pTenant->n;
    pRecord->iLast = i;
    batchContentHash(&aRec[i], aVer[i].zContent);
    batchChainHash(pTenant->zHash, &aRec[i], &aVer[i], aVer[i].zChain);
    memcpy(pTenant->zHash, aVer[i].zChain, 65);
  }
  for (i = 0; rc == SQLITE_OK && i < nLast; i++) aLast[i] = batchFind(pRecords, aRec, aLast[i], 1)->iLast;
  *pnLast = nLast;
  return rc;
}

/* Appends version v of record r, its hashes stored as the 32 bytes they stand for. */
static int batchWriteVersion(sqlite3 *db, EvidenceBatch *p, const EvidencePut *r, const BatchVersion *v) {
  sqlite3_stmt *pStmt = 0;
  unsigned char aContent[32], aChain[32];
  int rc = batchStmt(db, p, BATCH_VERSION, &pStmt);
  if (!evidenceHashBytes(v->zContent, 64, aContent) || !evidenceHashBytes(v->zChain, 64, aChain)) {
    rc = SQLITE_INTERNAL; /* evidenceHashFinish writes 64 lowercase hex digits: never */
  }
  if (rc == SQLITE_OK) rc = bindText(pStmt, 1, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 2, v->chainSeq);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 3, r->record_id, r->record_id_len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 4, v->seq);
  if (rc == SQLITE_OK) {
    rc = v->previous ? sqlite3_bind_int64(pStmt, 5, v->previous) : sqlite3_bind_null(pStmt, 5);
  }
  if (rc == SQLITE_OK) rc = bindText(pStmt, 6, r->revision, r->revision_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 7, r->kind, r->kind_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 8, r->body, r->body_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 9, r->source, r->source_len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 10, r->expires_at);
  if (rc == SQLITE_OK) rc = sqlite3_bind_blob(pStmt, 11, aContent, 32, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_blob(pStmt, 12, aChain, 32, SQLITE_STATIC);
  return batchStep(pStmt, rc);
}

/* Runs statement id, a write bound to record r's tenant and record_id:
** BATCH_FORGOTTEN_DROP (the batch puts a forgotten record again) or BATCH_VECTOR_DROP
** (it replaced the record's current row: what the trigger evidence_vectors_follow_puts
** does when triggers are on). */
static int batchWriteForRecord(sqlite3 *db, EvidenceBatch *p, int id, const EvidencePut *r) {
  sqlite3_stmt *pStmt = 0;
  int rc = batchStmt(db, p, id, &pStmt);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 1, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 2, r->record_id, r->record_id_len);
  return batchStep(pStmt, rc);
}

/* Points record r's current row, document doc of its scope, at version v. */
static int batchWriteCurrent(sqlite3 *db, EvidenceBatch *p, const EvidencePut *r, int64_t doc,
                             const BatchVersion *v) {
  sqlite3_stmt *pStmt = 0;
  int rc = batchStmt(db, p, BATCH_CURRENT, &pStmt);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 1, r->tenant, r->tenant_len);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 2, r->revision, r->revision_len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, r->expires_at);
  if (rc == SQLITE_OK) rc = bindText(pStmt, 4, r->record_id, r->record_id_len);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 5, doc);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 6, v->chainSeq);
  return batchStep(pStmt, rc);
}

/* Turns the schema's triggers and CHECK constraints off (bOn = 0) or back on for
** this connection. Either way SQLite recompiles the statements it has prepared. */
static int batchSchemaChecks(sqlite3 *db, int bOn) {
  int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, bOn, (int *)0);
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, bOn ? "PRAGMA ignore_check_constraints = 0" : "PRAGMA ignore_check_constraints = 1",
                      0, 0, 0);
  }
  return rc;
}

/* BINARY collation, as SQLite compares the text columns of the key. */
static int compareText(const char *a, size_t na, const char *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c != 0) return c;
  return na < nb ? -1 : na > nb;
}

/* qsort's comparison of two records in the order a batch writes them: (tenant,
** revision, expires_at, record_id), the order the rebuild numbers a scope in too. */
static int compareCurrentKey(const void *pa, const void *pb) {
  const EvidencePut *a = *(const EvidencePut *const *)pa;
  const EvidencePut *b = *(const EvidencePut *const *)pb;
  int c = compareText(a->tenant, a->tenant_len, b->tenant, b->tenant_len);
  if (c == 0) c = compareText(a->revision, a->revision_len, b->revision, b->revision_len);
  if (c == 0) c = a->expires_at < b->expires_at ? -1 : a->expires_at > b->expires_at;
  if (c == 0) c = compareText(a->record_id, a->record_id_len, b->record_id, b->record_id_len);
  return c;
}

int evidenceBatchPut(sqlite3 *db, EvidenceBatch *p, const EvidencePut *aRec, size_t n) {
  BatchVersion *aVer = 0;
  BatchTable tenants = {0, 0}, records = {0, 0};
  size_t *aLast = 0, nLast = 0, nSlot = 16, i;
  const EvidencePut **apCurrent = 0;
  const int bUnchecked = n >= BATCH_UNCHECKED_MIN;
  int rc = SQLITE_OK;
  if (n == 0) return SQLITE_OK;
  while (nSlot < 2 * n) nSlot *= 2;
  aVer = sqlite3_malloc64(n * sizeof(*aVer));
  aLast = sqlite3_malloc64(n * sizeof(*aLast));
  apCurrent = sqlite3_malloc64(n * sizeof(*apCurrent));
  tenants.a = sqlite3_malloc64(nSlot * sizeof(BatchSlot));
  records.a = sqlite3_malloc64(nSlot * sizeof(BatchSlot));
  if (aVer == 0 || aLast == 0 || apCurrent == 0 || tenants.a == 0 || records.a == 0) {
    rc = SQLITE_NOMEM;
  } else {
    memset(tenants.a, 0, nSlot * sizeof(BatchSlot));
    memset(records.a, 0, nSlot * sizeof(BatchSlot));
    tenants.mask = records.mask = nSlot - 1;
    rc = batchLink(db, p, aRec, n, aVer, &tenants, &records, aLast, &nLast);
  }
  /* From here to the end the rows are the writer's own: the triggers that would
  ** recompute them step aside (schema.sql, evidence_writer_vouches). */
  p->bWriting = 1;
  if (rc == SQLITE_OK && bUnchecked) rc = batchSchemaChecks(db, 0);
  for (i = 0; rc == SQLITE_OK && i < n; i++) rc = batchWriteVersion(db, p, &aRec[i], &aVer[i]);
  for (i = 0; rc == SQLITE_OK && i < nLast; i++) {
    if (batchFind(&records, aRec, aLast[i], 1)->bForgotten)
      rc = batchWriteForRecord(db, p, BATCH_FORGOTTEN_DROP, &aRec[aLast[i]]);
  }
  if (rc == SQLITE_OK) {
    for (i = 0; i < nLast; i++) apCurrent[i] = &aRec[aLast[i]];
    qsort(apCurrent, nLast, sizeof(*apCurrent), compareCurrentKey);
  }
  evidenceIndexBegin(p->pIndex);
  for (i = 0; rc == SQLITE_OK && i < nLast; i++) {
    const EvidencePut *r = apCurrent[i];
    size_t iRec = (size_t)(r - aRec);
    const int bNew = batchFind(&records, aRec, iRec, 1)->nBefore == 0;
    int64_t doc = 0;
    /* the index first: it reads the current row this one replaces, if the record had
    ** any version before the batch, and gives the row its document number */
    rc = evidenceIndexRecord(db, p->pIndex, r->tenant, r->tenant_len, r->record_id, r->record_id_len,
                             r->revision, r->revision_len, r->expires_at, r->body, r->body_len, bNew, &doc);
    if (rc == SQLITE_OK) rc = batchWriteCurrent(db, p, r, doc, &aVer[iRec]);
    if (rc == SQLITE_OK && bUnchecked && !bNew) rc = batchWriteForRecord(db, p, BATCH_VECTOR_DROP, r);
  }
  if (rc == SQLITE_OK) rc = evidenceIndexFinish(db, p->pIndex);
  sqlite3_free(p->zErr);
  p->zErr = 0;
  if (bUnchecked) {
    /* back on whatever happened: every later statement is checked in full again */
    int rcOn;
    if (rc != SQLITE_OK) p->zErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    rcOn = batchSchemaChecks(db, 1);
    if (rc == SQLITE_OK) rc = rcOn;
  }
  p->bWriting = 0;
  sqlite3_free(aVer);
  sqlite3_free(aLast);
  sqlite3_free(apCurrent);
  sqlite3_free(tenants.a);
  sqlite3_free(records.a);
  return rc;
}

static void vouchesFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const EvidenceBatch *p = sqlite3_user_data(ctx);
  (void)argc;
  (void)argv;
  sqlite3_result_int(ctx, p->bWriting);
}

int evidenceBatchOpen(sqlite3 *db, EvidenceBatch **ppBatch) {
  EvidenceBatch *p = sqlite3_malloc(sizeof(*p));
  *ppBatch = p;
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  if (evidenceIndexWriterOpen(&p->pIndex) != SQLITE_OK) return SQLITE_NOMEM;
  /* INNOCUOUS: schema.sql's triggers call it, also under trusted_schema=OFF. Not
  ** DETERMINISTIC: its value changes between statements. */
  return sqlite3_create_function(db, "evidence_writer_vouches", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, p,
                                 vouchesFunc, 0, 0);
}

const char *evidenceBatchErrmsg(const EvidenceBatch *p, sqlite3 *db) {
  return p->zErr ? p->zErr : sqlite3_errmsg(db);
}

void evidenceBatchFree(EvidenceBatch *p) {
  int i;
  if (p == 0) return;
  sqlite3_free(p->zErr);
  for (i = 0; i < N_BATCH_STMT; i++) sqlite3_finalize(p->aStmt[i]);
  evidenceIndexWriterFree(p->pIndex);
  sqlite3_free(p);
}

int evidenceBatchReindex(sqlite3 *db, EvidenceBatch *p, int (*xProgress)(void *, int64_t, int64_t),
                         void *pArg) {
  int rc;
  /* the rebuild renumbers the current rows itself: the triggers that check a number
  ** step aside, as for the writer's own rows */
  p->bWriting = 1;
  rc = evidenceIndexRebuild(db, p->pIndex, xProgress, pArg);
  p->bWriting = 0;
  return rc;
}

int evidenceBatchIndexBroken(const EvidenceBatch *p) {
  return evidenceIndexWriterBroken(p->pIndex);
}
