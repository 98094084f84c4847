/*
** test_store.c: the native engine's C API (evidence_store.h), tested directly.
**
**   test_store SCHEMA.sql
**
** Built with the extension's sources and -DEVIDENCE_TEST, so it can count
** token_overlap() calls; run plain, under ASan+UBSan and under valgrind.
** Prints each failure, then "N passed, N failed".
*/
#define _POSIX_C_SOURCE 200809L /* sigaction() under -std=c11 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../evidence_store.h"
#include "../evidence_stmt_cache.h" /* EVIDENCE_STMT_CACHE_SIZE */

extern int evidenceTestOverlapCalls;

static int nPass = 0, nFail = 0;

#define CHECK(cond)                                          \
  do {                                                       \
    if (cond) {                                              \
      nPass++;                                               \
    } else {                                                 \
      nFail++;                                               \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                        \
  } while (0)

static char *readFile(const char *zPath) {
  FILE *f = fopen(zPath, "rb");
  char *z = 0;
  long n;
  if (f == 0) return 0;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    z = malloc((size_t)n + 1);
    if (z && fread(z, 1, (size_t)n, f) == (size_t)n) {
      z[n] = 0;
    } else {
      free(z);
      z = 0;
    }
  }
  fclose(f);
  return z;
}

static int put(EvidenceStore *p, const char *tenant, const char *id, const char *revision, const char *body,
               int64_t expires_at) {
  return evidence_store_put(p, tenant, strlen(tenant), id, strlen(id), revision, strlen(revision), "runbook",
                            7, body, strlen(body), "src://x", 7, expires_at);
}

static void testRetrieve(EvidenceStore *p) {
  EvidenceRows *r = 0;
  char zId[32];
  int i;
  for (i = 0; i < 1000; i++) {
    snprintf(zId, sizeof(zId), "r%04d", i);
    CHECK(put(p, "team-a", zId, "v1", i % 10 == 0 ? "queue lag" : (i % 2 ? "queue" : "disk"), 100 + i % 3) ==
          0);
  }
  CHECK(put(p, "team-b", "other", "v1", "queue lag", 1000) == 0);
  evidenceTestOverlapCalls = 0;
  CHECK(evidence_store_retrieve(p, "team-a", 6, "v1", 2, 100, "queue lag", 9, 5, &r) == 0);
  /* Scored once per eligible row: expiry 100 is out, so 2/3 of the rows are eligible. */
  CHECK(r != 0 && r->eligible_count == 666);
  CHECK(evidenceTestOverlapCalls == 666);
  if (evidenceTestOverlapCalls != 666) printf("token_overlap calls: %d\n", evidenceTestOverlapCalls);
  CHECK(r != 0 && r->n_rows == 5);
  if (r && r->n_rows == 5) {
    CHECK(r->rows[0].score == 2 && memcmp(r->rows[0].record_id, "r0010", 5) == 0);
    CHECK(r->rows[0].body_len == 9 && memcmp(r->rows[0].body, "queue lag", 9) == 0);
    CHECK(r->rows[4].score == 2 && memcmp(r->rows[4].record_id, "r0070", 5) == 0);
  }
  evidence_rows_free(r);

  /* Nothing matched: the count still comes back. */
  CHECK(evidence_store_retrieve(p, "team-a", 6, "v1", 2, 100, "latency", 7, 5, &r) == 0);
  CHECK(r != 0 && r->n_rows == 0 && r->eligible_count == 666);
  evidence_rows_free(r);

  CHECK(evidence_store_candidates(p, "team-b", 6, "v1", 2, 0, &r) == 0);
  CHECK(r != 0 && r->n_rows == 1 && r->eligible_count == 1 && r->rows[0].score == 0);
  evidence_rows_free(r);
}

static void testNulAndForget(EvidenceStore *p) {
  EvidenceRows *r = 0;
  int deleted = -1;
  /* Strings with NUL characters travel with their lengths. */
  CHECK(evidence_store_put(p, "t\0x", 3, "id\0", 3, "v", 1, "working", 7, "a\0queue", 7, "s", 1, 5) == 0);
  CHECK(evidence_store_retrieve(p, "t\0x", 3, "v", 1, 0, "queue", 5, 10, &r) == 0);
  CHECK(r != 0 && r->n_rows == 1 && r->rows[0].record_id_len == 3 && r->rows[0].body_len == 7);
  evidence_rows_free(r);
  CHECK(evidence_store_retrieve(p, "t", 1, "v", 1, 0, "queue", 5, 10, &r) == 0);
  CHECK(r != 0 && r->eligible_count == 0);
  evidence_rows_free(r);
  CHECK(evidence_store_forget(p, "t", 1, "id\0", 3, &deleted) == 0 && deleted == 0);
  CHECK(evidence_store_forget(p, "t\0x", 3, "id\0", 3, &deleted) == 0 && deleted == 1);
  CHECK(evidence_store_forget(p, "t\0x", 3, "id\0", 3, &deleted) == 0 && deleted == 0);
}

/* The one integer a statement returns (-1: none), run read-only or, for a PRAGMA that
** reads a setting, with every permission. */
static int64_t queryInt(EvidenceStore *p, const char *zSql, int bReadOnly) {
  EvidenceTable *t = 0;
  int64_t n = -1;
  if (evidence_store_query(p, zSql, strlen(zSql), 0, 0, bReadOnly, &t) == 0 && t->n_rows == 1) {
    n = t->cells[0].i;
  }
  evidence_table_free(t);
  return n;
}

static int64_t count(EvidenceStore *p, const char *zSql) {
  return queryInt(p, zSql, 1);
}

static void testPutMany(EvidenceStore *p) {
  /* Packed: tenant, record_id, revision, kind, body, source of each record, back to back. */
  static const char zData[] =
      "tbr1v1runbookfirst bodys"
      "tbr2v1workingother bodys"
      "tbr1v2incidentsecond bodys";
  const size_t aLen[] = {2, 2, 2, 7, 10, 1, 2, 2, 2, 7, 10, 1, 2, 2, 2, 8, 11, 1};
  const int64_t aExpires[] = {10, 20, 30};
  CHECK(evidence_store_put_many(p, zData, sizeof(zData) - 1, aLen, aExpires, 3) == 0);
  CHECK(count(p, "SELECT count(*) FROM evidence_versions WHERE tenant = 'tb'") == 3);
  CHECK(count(p, "SELECT count(*) FROM evidence WHERE tenant = 'tb'") == 2);
  /* The later duplicate is the record's second version and its current row. */
  CHECK(count(p,
              "SELECT version FROM evidence WHERE tenant = 'tb' AND record_id = 'r1' AND revision = 'v2'"
              " AND body = 'second body' AND expires_at = 30") == 2);
  CHECK(count(p, "SELECT max(chain_seq) FROM evidence_versions WHERE tenant = 'tb'") == 3);
  /* Lengths that do not add up to the data are refused, and nothing is written. */
  CHECK(evidence_store_put_many(p, zData, sizeof(zData) - 2, aLen, aExpires, 3) == 21); /* SQLITE_MISUSE */
  CHECK(strstr(evidence_store_errmsg(p), "field lengths") != 0);
  CHECK(evidence_store_put_many(p, zData, 10, aLen, aExpires, 3) == 21); /* SQLITE_MISUSE */
  CHECK(count(p, "SELECT count(*) FROM evidence_versions WHERE tenant = 'tb'") == 3);
  CHECK(evidence_store_put_many(p, zData, 0, aLen, aExpires, 0) == 0);
}

static void testQuery(EvidenceStore *p) {
  EvidenceTable *t = 0;
  EvidenceValue params[3];
  const char *zSql = "SELECT ?1 + 1, ?2 || 'b', length(?3), NULL";
  memset(params, 0, sizeof(params));
  params[0].type = 1, params[0].i = 41;
  params[1].type = 3, params[1].z = "a", params[1].n = 1;
  params[2].type = 4, params[2].z = "\0\0", params[2].n = 2;
  CHECK(evidence_store_query(p, zSql, strlen(zSql), params, 3, 1, &t) == 0);
  CHECK(t != 0 && t->n_rows == 1 && t->n_cols == 4);
  if (t && t->n_rows == 1) {
    CHECK(t->cells[0].type == 1 && t->cells[0].i == 42);
    CHECK(t->cells[1].type == 3 && t->cells[1].n == 2 && memcmp(t->cells[1].z, "ab", 2) == 0);
    CHECK(t->cells[2].type == 1 && t->cells[2].i == 2);
    CHECK(t->cells[3].type == 5);
    CHECK(strcmp(t->names[1], "?2 || 'b'") == 0);
  }
  evidence_table_free(t);

  t = (EvidenceTable *)1;
  CHECK(evidence_store_query(p, "SELECT * FROM nowhere", 21, 0, 0, 1, &t) != 0 && t == 0);
  CHECK(strstr(evidence_store_errmsg(p), "no such table: nowhere") != 0);
  CHECK(evidence_store_query(p, "DELETE FROM evidence", 20, 0, 0, 1, &t) != 0 && t == 0);
  CHECK(strstr(evidence_store_errmsg(p), "read-only") != 0);
  {
    /* Read-only means read-only: no writes, transactions, ATTACH or settings. */
    static const char *const azRefused[] = {"BEGIN",
                                            "ATTACH ':memory:' AS other",
                                            "PRAGMA journal_mode = DELETE",
                                            "PRAGMA user_version = 9",
                                            "CREATE TABLE x(a)",
                                            "PRAGMA wal_checkpoint"};
    static const char *const azAllowed[] = {
        "PRAGMA user_version", "SELECT name FROM pragma_table_info('evidence')",
        "PRAGMA table_info(evidence)", "SELECT count(*) FROM evidence_eligible('team-a', 'v1', 0)"};
    size_t i;
    for (i = 0; i < sizeof(azRefused) / sizeof(azRefused[0]); i++) {
      CHECK(evidence_store_query(p, azRefused[i], strlen(azRefused[i]), 0, 0, 1, &t) != 0 && t == 0);
      CHECK(strstr(evidence_store_errmsg(p), "read-only") != 0);
    }
    for (i = 0; i < sizeof(azAllowed) / sizeof(azAllowed[0]); i++) {
      int rc = evidence_store_query(p, azAllowed[i], strlen(azAllowed[i]), 0, 0, 1, &t);
      CHECK(rc == 0 && t && t->n_rows > 0);
      if (rc) printf("    %s: %s\n", azAllowed[i], evidence_store_errmsg(p));
      evidence_table_free(t);
    }
    /* Without read_only, the store's own calls may write. */
    CHECK(evidence_store_query(p, "PRAGMA user_version = 1", 23, 0, 0, 0, &t) == 0);
    evidence_table_free(t);
  }
  CHECK(evidence_store_query(p, "SELECT 1; SELECT 2", 18, 0, 0, 1, &t) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "one SQL statement") != 0);
  CHECK(evidence_store_query(p, "SELECT 1; -- x\nSELECT 2", 23, 0, 0, 1, &t) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "one SQL statement") != 0);
  /* Comments, white space and semicolons after the statement are not another one. */
  CHECK(evidence_store_query(p, "SELECT 1; -- done\n ;; /* end */", 31, 0, 0, 1, &t) == 0);
  CHECK(t != 0 && t->n_rows == 1);
  evidence_table_free(t);
  CHECK(evidence_store_query(p, "SELECT ?", 8, 0, 0, 1, &t) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "1 parameter(s), 0 value(s)") != 0);
}

/* The one text cell of a statement run without the gate (kept), or "" when none. */
static void queryText(EvidenceStore *p, const char *zSql, const EvidenceValue *aParam, int nParam, char *zOut,
                      size_t nOut) {
  EvidenceTable *t = 0;
  zOut[0] = 0;
  if (evidence_store_query(p, zSql, strlen(zSql), aParam, nParam, 0, &t) == 0 && t->n_rows == 1 &&
      t->cells[0].type == 3 && t->cells[0].n < nOut) {
    memcpy(zOut, t->cells[0].z, t->cells[0].n);
    zOut[t->cells[0].n] = 0;
  }
  evidence_table_free(t);
}

/* Statements run without the gate are kept and run again: with new bindings, after
** an error, after the schema changed under them, and after the cache evicted them. */
static void testKeptStatements(EvidenceStore *p) {
  static const char zInsert[] = "INSERT INTO kept VALUES (?1) RETURNING a";
  EvidenceTable *t = 0;
  EvidenceValue v;
  char zOut[64], zSql[64];
  int i;
  memset(&v, 0, sizeof(v));
  CHECK(evidence_store_exec(p, "CREATE TABLE kept(a TEXT UNIQUE)", 32) == 0);
  v.type = 3, v.z = "one", v.n = 3;
  queryText(p, zInsert, &v, 1, zOut, sizeof(zOut));
  CHECK(strcmp(zOut, "one") == 0);
  /* The same text again: a UNIQUE failure is reported and leaves the statement usable. */
  CHECK(evidence_store_query(p, zInsert, strlen(zInsert), &v, 1, 0, &t) != 0 && t == 0);
  CHECK(strstr(evidence_store_errmsg(p), "UNIQUE") != 0);
  v.z = "two";
  queryText(p, zInsert, &v, 1, zOut, sizeof(zOut));
  CHECK(strcmp(zOut, "two") == 0);
  /* No binding is left over from an earlier call: a missing value is refused. */
  CHECK(evidence_store_query(p, zInsert, strlen(zInsert), 0, 0, 0, &t) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "1 parameter(s), 0 value(s)") != 0);
  /* The table changes shape under the kept SELECT: its next run has the new columns. */
  CHECK(count(p, "SELECT count(*) FROM kept") == 2);
  CHECK(evidence_store_query(p, "SELECT * FROM kept ORDER BY a", 29, 0, 0, 0, &t) == 0 && t->n_cols == 1);
  evidence_table_free(t);
  CHECK(evidence_store_exec(p, "ALTER TABLE kept ADD COLUMN b INTEGER DEFAULT 7", 47) == 0);
  CHECK(evidence_store_query(p, "SELECT * FROM kept ORDER BY a", 29, 0, 0, 0, &t) == 0);
  CHECK(t != 0 && t->n_cols == 2 && t->n_rows == 2 && strcmp(t->names[1], "b") == 0);
  if (t && t->n_cols == 2 && t->n_rows == 2) CHECK(t->cells[3].type == 1 && t->cells[3].i == 7);
  evidence_table_free(t);
  /* More texts than the cache holds: each still runs, the first ones again after eviction. */
  for (i = 0; i < 2 * EVIDENCE_STMT_CACHE_SIZE + 3; i++) {
    snprintf(zSql, sizeof(zSql), "SELECT 'text %d'", i % (EVIDENCE_STMT_CACHE_SIZE + 5));
    queryText(p, zSql, 0, 0, zOut, sizeof(zOut));
    snprintf(zSql, sizeof(zSql), "text %d", i % (EVIDENCE_STMT_CACHE_SIZE + 5));
    CHECK(strcmp(zOut, zSql) == 0);
  }
  /* A table the kept statement read is gone: the error names it. */
  CHECK(evidence_store_exec(p, "DROP TABLE kept", 15) == 0);
  CHECK(evidence_store_query(p, "SELECT * FROM kept ORDER BY a", 29, 0, 0, 0, &t) != 0 && t == 0);
  CHECK(strstr(evidence_store_errmsg(p), "no such table: kept") != 0);
}

/* Loading is switched on for the one call only: SQL can never load a library. */
static void testLoadExtension(EvidenceStore *p) {
  EvidenceTable *t = 0;
  const char *zLoad = "SELECT load_extension('/nonexistent/libnothing')";
  CHECK(evidence_store_load_extension(p, "/nonexistent/libnothing", 0) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "/nonexistent/libnothing") != 0);
  CHECK(evidence_store_query(p, zLoad, strlen(zLoad), 0, 0, 1, &t) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "function load_extension() is not allowed in read-only SQL") != 0);
}

/* The read-only gate runs only allow-listed functions and pragmas, and names what it refuses. */
static void testReadOnlyGate(EvidenceStore *p) {
  static const struct {
    const char *zSql;
    const char *zMessage;
  } aRefused[] = {
      {"SELECT fts3_tokenizer('simple')", "function fts3_tokenizer() is not allowed in read-only SQL"},
      {"SELECT length(Fts3_Tokenizer('simple', x'4141414141414141'))",
       "function fts3_tokenizer() is not allowed in read-only SQL"},
      {"SELECT sqlite_log(1, 'x')", "function sqlite_log() is not allowed in read-only SQL"},
      {"PRAGMA optimize", "pragma optimize is not allowed in read-only SQL"},
      {"SELECT * FROM pragma_optimize", "pragma optimize is not allowed in read-only SQL"},
      {"PRAGMA cache_size = 1", "pragma cache_size with a value is not allowed in read-only SQL"},
      {"SELECT sql FROM sqlite_stmt", "table sqlite_stmt is not allowed in read-only SQL"},
      {"SELECT 1 WHERE EXISTS (SELECT * FROM dbstat)", "table dbstat is not allowed in read-only SQL"},
  };
  static const char *const azAllowed[] = {"SELECT upper('a'), json_array(1) ->> 0, token_overlap('a', 'a')",
                                          "SELECT count(*) FROM pragma_function_list", "PRAGMA quick_check",
                                          "SELECT count(*) FROM evidence_versions, json_each('[1]')"};
  EvidenceTable *t = 0;
  size_t i;
  for (i = 0; i < sizeof(aRefused) / sizeof(aRefused[0]); i++) {
    t = (EvidenceTable *)1;
    CHECK(evidence_store_query(p, aRefused[i].zSql, strlen(aRefused[i].zSql), 0, 0, 1, &t) != 0 && t == 0);
    CHECK(strstr(evidence_store_errmsg(p), aRefused[i].zMessage) != 0);
    if (strstr(evidence_store_errmsg(p), aRefused[i].zMessage) == 0) {
      printf("    %s: %s\n", aRefused[i].zSql, evidence_store_errmsg(p));
    }
  }
  /* Nothing was written: PRAGMA optimize would have created sqlite_stat1. */
  {
    const char *zStat = "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'";
    CHECK(evidence_store_query(p, zStat, strlen(zStat), 0, 0, 1, &t) == 0);
    CHECK(t != 0 && t->n_rows == 1 && t->cells[0].i == 0);
    evidence_table_free(t);
  }
  for (i = 0; i < sizeof(azAllowed) / sizeof(azAllowed[0]); i++) {
    int rc = evidence_store_query(p, azAllowed[i], strlen(azAllowed[i]), 0, 0, 1, &t);
    CHECK(rc == 0 && t != 0 && t->n_rows > 0);
    if (rc) printf("    %s: %s\n", azAllowed[i], evidence_store_errmsg(p));
    evidence_table_free(t);
  }
  /* The store's own statements (read_only off) are not gated. */
  CHECK(evidence_store_query(p, "SELECT last_insert_rowid()", 26, 0, 0, 0, &t) == 0);
  evidence_table_free(t);
}

/* Names are plain file names, never URIs, even on an SQLite built with SQLITE_USE_URI:
** "file:...?mode=memory" is a file by that name in the working directory, which a
** backup then refuses to overwrite through the other spelling either. */
static void testPlainNames(void) {
  static const char zName[] = "file:test_store-plain.db?mode=memory";
  EvidenceStore *p = 0;
  FILE *pFile;
  remove(zName);
  CHECK(evidence_store_open(zName, 0, &p) == 0);
  CHECK(evidence_store_exec(p, "CREATE TABLE t(x);", 18) == 0);
  evidence_store_close(p);
  pFile = fopen(zName, "rb");
  CHECK(pFile != 0);
  if (pFile) fclose(pFile);
  CHECK(evidence_store_open(":memory:", 0, &p) == 0);
  CHECK(evidence_store_backup(p, zName) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "already exists") != 0);
  evidence_store_close(p);
  remove(zName);
}

/* The same rows and eligible count from the index as from the scan. */
static int sameRows(const EvidenceRows *a, const EvidenceRows *b) {
  size_t i;
  if (a->n_rows != b->n_rows || a->eligible_count != b->eligible_count) return 0;
  for (i = 0; i < a->n_rows; i++) {
    const EvidenceRow *x = &a->rows[i], *y = &b->rows[i];
    if (x->score != y->score || x->record_id_len != y->record_id_len ||
        memcmp(x->record_id, y->record_id, x->record_id_len) != 0 || x->body_len != y->body_len ||
        memcmp(x->body, y->body, x->body_len) != 0 || x->version != y->version ||
        x->expires_at != y->expires_at) {
      return 0;
    }
  }
  return 1;
}

static int nProgress = 0;

static int countProgress(void *pArg, int64_t done, int64_t total) {
  (void)pArg;
  nProgress++;
  return done > total;
}

static int stopProgress(void *pArg, int64_t done, int64_t total) {
  (void)pArg;
  (void)total;
  return done > 0 || nProgress++ > 0;
}

static void testSearch(EvidenceStore *p) {
  static const char *const azQuery[] = {"queue lag", "queue", "disk",  "lag disk queue",
                                        "nothing",   "",      "QUEUE!"};
  static const int64_t aNow[] = {-5, 0, 100, 101, 102, 5000};
  EvidenceRows *a = 0, *b = 0;
  EvidenceTable *t = 0;
  size_t q, n;
  for (q = 0; q < sizeof(azQuery) / sizeof(azQuery[0]); q++) {
    for (n = 0; n < sizeof(aNow) / sizeof(aNow[0]); n++) {
      const char *z = azQuery[q];
      CHECK(evidence_store_search(p, "team-a", 6, "v1", 2, aNow[n], z, strlen(z), 7, &a) == 0);
      CHECK(evidence_store_retrieve(p, "team-a", 6, "v1", 2, aNow[n], z, strlen(z), 7, &b) == 0);
      CHECK(a && b && sameRows(a, b));
      evidence_rows_free(a);
      evidence_rows_free(b);
    }
  }
  /* A scope that does not exist: nothing eligible, no error. */
  CHECK(evidence_store_search(p, "nobody", 6, "v1", 2, 0, "queue", 5, 5, &a) == 0);
  CHECK(a && a->n_rows == 0 && a->eligible_count == 0);
  evidence_rows_free(a);

  /* Rebuilt, the index answers the same, and the rebuild reports its progress. */
  nProgress = 0;
  CHECK(evidence_store_reindex(p, countProgress, 0) == 0);
  CHECK(nProgress >= 2);
  CHECK(evidence_store_search(p, "team-a", 6, "v1", 2, 100, "queue lag", 9, 10, &a) == 0);
  CHECK(evidence_store_retrieve(p, "team-a", 6, "v1", 2, 100, "queue lag", 9, 10, &b) == 0);
  CHECK(a && b && sameRows(a, b));
  evidence_rows_free(a);
  evidence_rows_free(b);
  /* A progress callback that says stop: SQLITE_INTERRUPT, and the index is as it was. */
  nProgress = 0;
  CHECK(evidence_store_reindex(p, stopProgress, 0) == 9 /* SQLITE_INTERRUPT */);
  CHECK(strstr(evidence_store_errmsg(p), "stopped") != 0);
  CHECK(evidence_store_search(p, "team-a", 6, "v1", 2, 0, "queue", 5, 3, &a) == 0);
  CHECK(a && a->n_rows == 3);
  evidence_rows_free(a);

  /* An index that disagrees with the records: a put is refused whole, naming reindex. */
  static const char zBreak[] =
      "UPDATE evidence_index_scopes SET docs = 0, next_doc = 0 WHERE tenant = 'team-a' AND revision = 'v1'";
  static const char zBody[] = "SELECT body FROM evidence WHERE record_id = 'r0001'";
  CHECK(evidence_store_exec(p, zBreak, strlen(zBreak)) == 0);
  CHECK(put(p, "team-a", "r0001", "v1", "queue again", 100) == 11 /* SQLITE_CORRUPT */);
  CHECK(strstr(evidence_store_errmsg(p), "pyevidence reindex") != 0);
  CHECK(evidence_store_query(p, zBody, strlen(zBody), 0, 0, 1, &t) == 0);
  CHECK(t && t->n_rows == 1 && t->cells[0].n == 5 && memcmp(t->cells[0].z, "queue", 5) == 0);
  evidence_table_free(t);
  CHECK(evidence_store_reindex(p, 0, 0) == 0);
  CHECK(put(p, "team-a", "r0001", "v1", "queue again", 100) == 0);
}

/* A put_many batch built record by record: the packed fields, their lengths, the expiries. */
typedef struct Batch {
  char *zData;
  size_t nData, nAlloc;
  size_t aLen[6 * 10000];
  int64_t aExpires[10000];
  size_t nRecord;
} Batch;

static void batchAdd(Batch *b, const char *zId, const char *zRevision, const char *zBody, int64_t expires) {
  const char *az[6];
  int i;
  az[0] = "tg";
  az[1] = zId;
  az[2] = zRevision;
  az[3] = "working";
  az[4] = zBody;
  az[5] = "s://x";
  for (i = 0; i < 6; i++) {
    size_t n = strlen(az[i]);
    if (b->nData + n > b->nAlloc) {
      b->nAlloc = 2 * (b->nData + n) + 4096;
      b->zData = realloc(b->zData, b->nAlloc);
      if (b->zData == 0) abort();
    }
    memcpy(b->zData + b->nData, az[i], n);
    b->nData += n;
    b->aLen[6 * b->nRecord + (size_t)i] = n;
  }
  b->aExpires[b->nRecord++] = expires;
}

static int batchPut(EvidenceStore *p, Batch *b) {
  int rc = evidence_store_put_many(p, b->zData, b->nData, b->aLen, b->aExpires, b->nRecord);
  b->nData = 0;
  b->nRecord = 0;
  return rc;
}

/* The index's answers equal the scan's for the queries, in scope (tg, zRevision). */
static void checkSearch(EvidenceStore *p, const char *zRevision, const char *const *azQuery, int nQuery) {
  EvidenceRows *a = 0, *b = 0;
  int q;
  for (q = 0; q < nQuery; q++) {
    const char *z = azQuery[q];
    CHECK(evidence_store_search(p, "tg", 2, zRevision, strlen(zRevision), 11, z, strlen(z), 10, &a) == 0);
    CHECK(evidence_store_retrieve(p, "tg", 2, zRevision, strlen(zRevision), 11, z, strlen(z), 10, &b) == 0);
    CHECK(a && b && a->n_rows > 0 && sameRows(a, b));
    evidence_rows_free(a);
    evidence_rows_free(b);
  }
}

/* Batches large enough to span several 4,096-document chunks, to change documents in
** all of them (tokens lost and gained in one batch), and to touch 401 scopes at once:
** the index writer groups the postings by counting passes in the first case and by
** qsort in the last (evidence_index_write.c, iwSortPostings). Run under ASan too. */
static void testLargeBatches(EvidenceStore *p) {
  static const char *const azQuery[] = {"common", "extra w3", "lag w7", "k1 w2", "common k2 lag"};
  static const char *const azAlone[] = {"alone u17", "x8"}; /* s0017's body: 17 % 9 = 8 */
  Batch *b = calloc(1, sizeof(Batch));
  char zId[32], zRevision[32], zBody[64];
  int n;
  if (b == 0) abort();
  for (n = 0; n < 9000; n++) {
    snprintf(zId, sizeof(zId), "g%05d", n);
    snprintf(zBody, sizeof(zBody), "common w%d k%d", n % 40, n % 3);
    batchAdd(b, zId, "v1", zBody, 10 + n % 5);
  }
  CHECK(batchPut(p, b) == 0);
  for (n = 0; n < 9000; n += 3) {
    snprintf(zId, sizeof(zId), "g%05d", n);
    snprintf(zBody, sizeof(zBody), "common w%d extra", n % 41);
    batchAdd(b, zId, "v1", zBody, 12);
  }
  for (n = 0; n < 400; n++) {
    snprintf(zId, sizeof(zId), "s%04d", n);
    snprintf(zRevision, sizeof(zRevision), "rev%d", n);
    snprintf(zBody, sizeof(zBody), "alone u%d x%d", n, n % 9);
    batchAdd(b, zId, zRevision, zBody, 12);
  }
  CHECK(batchPut(p, b) == 0);
  CHECK(count(p, "SELECT count(*) FROM evidence_index_scopes WHERE tenant = 'tg'") == 401);
  checkSearch(p, "v1", azQuery, 4);
  checkSearch(p, "rev17", azAlone, 2);
  for (n = 1; n < 9000; n += 5) {
    snprintf(zId, sizeof(zId), "g%05d", n);
    snprintf(zBody, sizeof(zBody), "lag w%d k2", n % 13);
    batchAdd(b, zId, "v1", zBody, 10);
  }
  CHECK(batchPut(p, b) == 0);
  checkSearch(p, "v1", azQuery, 5);
  CHECK(count(p, "SELECT count(*) FROM evidence WHERE tenant = 'tg'") == 9400);
  free(b->zData);
  free(b);
}

/* Forgotten records put again by a batch, small (the triggers on) and large (off): each
** version links to the record's version before it, the tombstone included, and the
** records leave evidence_forgotten (schema version 11). Tenant tg, records f0000... */
static void testReviveForgotten(EvidenceStore *p) {
  Batch *b = calloc(1, sizeof(Batch));
  char zId[32];
  int bDeleted = 0, n, nBatch;
  if (b == 0) abort();
  for (nBatch = 0; nBatch < 2; nBatch++) {
    const int nRecord = nBatch == 0 ? 5 : 300; /* BATCH_UNCHECKED_MIN is 256 */
    for (n = 0; n < nRecord; n++) {
      snprintf(zId, sizeof(zId), "f%d-%04d", nBatch, n);
      batchAdd(b, zId, "v1", "revive me", 10);
    }
    CHECK(batchPut(p, b) == 0);
    for (n = 0; n < nRecord; n += 2) {
      snprintf(zId, sizeof(zId), "f%d-%04d", nBatch, n);
      CHECK(evidence_store_forget(p, "tg", 2, zId, strlen(zId), &bDeleted) == 0 && bDeleted == 1);
    }
    CHECK(count(p, "SELECT count(*) FROM evidence_forgotten WHERE tenant = 'tg'") == (nRecord + 1) / 2);
    for (n = 0; n < nRecord; n++) {
      snprintf(zId, sizeof(zId), "f%d-%04d", nBatch, n);
      batchAdd(b, zId, "v1", "revived", 10);
    }
    CHECK(batchPut(p, b) == 0);
    CHECK(count(p, "SELECT count(*) FROM evidence_forgotten WHERE tenant = 'tg'") == 0);
  }
  /* every version of tg after the first of its record follows that record's latest before it */
  CHECK(count(p,
              "SELECT count(*) FROM evidence_versions AS v WHERE v.tenant = 'tg' AND v.previous IS NOT"
              " (SELECT max(chain_seq) FROM evidence_versions AS w"
              "   WHERE w.tenant = 'tg' AND w.record_id = v.record_id AND w.chain_seq < v.chain_seq)") == 0);
  CHECK(
      count(p,
            "SELECT count(*) FROM evidence WHERE tenant = 'tg' AND record_id LIKE 'f%'"
            " AND body = 'revived' AND version = CASE WHEN substr(record_id, 4) % 2 = 0 THEN 3 ELSE 2 END") ==
      305);
  free(b->zData);
  free(b);
}

/* Batches whose documents straddle two eras of the postings' key (numbers 32,760 to
** 32,779, after numbers skipped as moves leave them), then change documents of both eras:
** the writer's counting passes key each docset by scope, era and token (run under ASan). */
static void testEraBoundary(EvidenceStore *p) {
  static const char *const azQuery[] = {"queue", "lag w1", "moved w0", "w2"};
  static const char zSkip[] = "UPDATE evidence_index_scopes SET next_doc = 32760 WHERE revision = 've'";
  Batch *b = calloc(1, sizeof(Batch));
  char zId[32], zBody[64];
  int n;
  if (b == 0) abort();
  for (n = 0; n < 10; n++) {
    snprintf(zId, sizeof(zId), "e%03d", n);
    snprintf(zBody, sizeof(zBody), "queue w%d", n % 4);
    batchAdd(b, zId, "ve", zBody, 20);
  }
  CHECK(batchPut(p, b) == 0);
  CHECK(evidence_store_exec(p, zSkip, sizeof(zSkip) - 1) == 0);
  for (n = 0; n < 20; n++) {
    snprintf(zId, sizeof(zId), "f%03d", n);
    snprintf(zBody, sizeof(zBody), "queue lag w%d", n % 3);
    batchAdd(b, zId, "ve", zBody, 20 + n % 2);
  }
  CHECK(batchPut(p, b) == 0);
  for (n = 0; n < 10; n += 2) {
    snprintf(zId, sizeof(zId), "e%03d", n);
    snprintf(zBody, sizeof(zBody), "lag w%d", n % 5);
    batchAdd(b, zId, "ve", zBody, 21);
  }
  for (n = 0; n < 20; n += 3) {
    snprintf(zId, sizeof(zId), "f%03d", n);
    snprintf(zBody, sizeof(zBody), "queue moved w%d", n % 2);
    batchAdd(b, zId, "ve", zBody, 20);
  }
  CHECK(batchPut(p, b) == 0);
  CHECK(count(p,
              "SELECT count(DISTINCT era) FROM evidence_index_postings JOIN evidence_index_scopes"
              " USING (scope) WHERE revision = 've'") == 2);
  checkSearch(p, "ve", azQuery, 4);
  free(b->zData);
  free(b);
}

/* Document numbers near the end of int64, which only a raw write to the index's tables
** (and to evidence_current, with its checks off) gives: a search is sized by the scope's highest document, a
* put that would number one
** past the limit is refused before any overflow, and one not below next_doc or the limit
** is an index out of step. UBSan runs it too. */
static void testDocNumberLimit(EvidenceStore *p) {
  static const char *const azQuery[] = {"queue", "w1"};
  static const char zTop[] =
      "UPDATE evidence_index_scopes SET next_doc = 9223372036854775807"
      " WHERE revision = 'vl'";
  /* The number itself is past evidence_current's CHECK, and the triggers let a number change
  ** only in a scope the index does not hold: with the checks off, the scope's row taken
  ** out and put back, raw SQL can still write it. */
  static const char zFar[] =
      "PRAGMA ignore_check_constraints = 1;"
      "CREATE TEMP TABLE saved_scope AS SELECT * FROM evidence_index_scopes WHERE revision = 'vl';"
      "DELETE FROM evidence_index_scopes WHERE revision = 'vl';"
      "UPDATE evidence_current SET doc = 4294967296 WHERE record_id = 'l001';"
      "INSERT INTO evidence_index_scopes SELECT * FROM temp.saved_scope;"
      "DROP TABLE temp.saved_scope;"
      "PRAGMA ignore_check_constraints = 0;";
  static const char zFarNext[] =
      "UPDATE evidence_index_scopes SET next_doc = 4294967297 WHERE revision = 'vl'";
  EvidenceRows *a = 0;
  Batch *b = calloc(1, sizeof(Batch));
  if (b == 0) abort();
  batchAdd(b, "l000", "vl", "queue w0", 20);
  batchAdd(b, "l001", "vl", "queue w1", 20);
  CHECK(batchPut(p, b) == 0);
  CHECK(evidence_store_exec(p, zTop, sizeof(zTop) - 1) == 0);
  checkSearch(p, "vl", azQuery, 2);
  batchAdd(b, "l002", "vl", "queue w2", 20);
  CHECK(batchPut(p, b) != 0 && strstr(evidence_store_errmsg(p), "pyevidence reindex") != 0);
  CHECK(count(p, "SELECT count(*) FROM evidence WHERE record_id = 'l002'") == 0);
  CHECK(evidence_store_exec(p, zFarNext, sizeof(zFarNext) - 1) == 0);
  CHECK(evidence_store_exec(p, zFar, sizeof(zFar) - 1) == 0);
  CHECK(evidence_store_search(p, "tg", 2, "vl", 2, 11, "queue", 5, 10, &a) != 0);
  CHECK(strstr(evidence_store_errmsg(p), "pyevidence reindex") != 0);
  evidence_rows_free(a);
  free(b->zData);
  free(b);
}

/* A batch large enough to run with the schema's triggers and CHECKs off
** (evidence_batch.c, BATCH_UNCHECKED_MIN) that runs out of room halfway: it writes
** nothing, reports SQLite's own message, and leaves the checks on. */
static void testUncheckedBatchThatFails(EvidenceStore *p) {
  Batch *b = calloc(1, sizeof(Batch));
  const int64_t nBefore = count(p, "SELECT count(*) FROM evidence");
  char zId[32], zSql[64];
  int n;
  if (b == 0) abort();
  snprintf(zSql, sizeof(zSql), "PRAGMA max_page_count = %lld",
           (long long)queryInt(p, "PRAGMA page_count", 0) + 1);
  CHECK(evidence_store_exec(p, zSql, strlen(zSql)) == 0);
  for (n = 0; n < 600; n++) {
    snprintf(zId, sizeof(zId), "full%04d", n);
    batchAdd(b, zId, "v1", "a body that needs some room in the pages of the file", 12);
  }
  CHECK(batchPut(p, b) == 13); /* SQLITE_FULL */
  CHECK(strstr(evidence_store_errmsg(p), "full") != 0);
  CHECK(count(p, "SELECT count(*) FROM evidence") == nBefore);
  CHECK(queryInt(p, "PRAGMA ignore_check_constraints", 0) == 0);
  CHECK(evidence_store_exec(p, "PRAGMA max_page_count = 1000000", 31) == 0);
  free(b->zData);
  free(b);
}

static volatile sig_atomic_t nHostSigints = 0;

static void hostSigint(int sig) {
  (void)sig;
  nHostSigints++;
}

static void setSigint(void (*handler)(int)) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  CHECK(sigaction(SIGINT, &action, 0) == 0);
}

/* Many more than the progress handler's 1,000 instructions, and quick. */
static const char zSigintWork[] =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) SELECT count(*) FROM n";
static const char zSigintEndless[] =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";
#define SQLITE_INTERRUPT_RC 9

/* Ctrl-C while a store is watched stops its statement, and the host still hears it. */
static void testSigint(void) {
  const char *zWork = zSigintWork, *zEndless = zSigintEndless;
  EvidenceStore *a = 0, *b = 0;
  setSigint(hostSigint);
  CHECK(evidence_store_open(":memory:", 0, &a) == 0);
  CHECK(evidence_store_open(":memory:", 0, &b) == 0);

  CHECK(evidence_store_watch_sigint(a) == 1);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0); /* no SIGINT: it runs */
  raise(SIGINT);
  CHECK(nHostSigints == 1);
  CHECK(evidence_store_exec(a, zEndless, strlen(zEndless)) == SQLITE_INTERRUPT_RC);
  CHECK(evidence_store_unwatch_sigint(a) == 1);
  CHECK(evidence_store_unwatch_sigint(a) == 0);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);
  raise(SIGINT); /* unwatched: only the host hears it */
  CHECK(nHostSigints == 2);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);

  /* A watch left behind moves to the store watched next. */
  CHECK(evidence_store_watch_sigint(a) == 1);
  CHECK(evidence_store_watch_sigint(b) == 1);
  raise(SIGINT);
  CHECK(nHostSigints == 3);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);
  CHECK(evidence_store_exec(b, zEndless, strlen(zEndless)) == SQLITE_INTERRUPT_RC);
  CHECK(evidence_store_unwatch_sigint(a) == 0);
  evidence_store_close(b); /* ends its watch: a is watched again, not a closed connection */
  CHECK(evidence_store_watch_sigint(a) == 1);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);

  /* SIGINT ignored, or left to end the process: no handler to pass it to, no watch, and a
  ** watch left behind on the same store ends. */
  setSigint(SIG_IGN);
  raise(SIGINT);
  CHECK(evidence_store_watch_sigint(a) == 0);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);
  setSigint(SIG_DFL);
  CHECK(evidence_store_watch_sigint(a) == 0);
  CHECK(evidence_store_watch_sigint(0) == 0 && evidence_store_unwatch_sigint(0) == 0);
  CHECK(nHostSigints == 3);
  evidence_store_close(a);
}

/* A handler someone other than the host set since, as faulthandler.register(SIGINT) does:
** chain=True keeps the handler it replaced (the store's) to pass SIGINT on to. */
static struct sigaction otherPassesTo;
static volatile sig_atomic_t nOtherSigints = 0;

static void otherSigint(int sig) {
  nOtherSigints++;
  if (otherPassesTo.sa_flags & SA_SIGINFO) {
    otherPassesTo.sa_sigaction(sig, 0, 0);
  } else if (otherPassesTo.sa_handler != SIG_DFL && otherPassesTo.sa_handler != SIG_IGN) {
    otherPassesTo.sa_handler(sig);
  }
}

/* The store's handler installs again only over the host's: not over one that passes
** SIGINT on to it (each would call the other until the stack overflows), nor over one
** that does not (Python would not raise KeyboardInterrupt, and nothing may stop). */
static void testSigintOtherHandler(void) {
  const char *zWork = zSigintWork;
  EvidenceStore *a = 0;
  struct sigaction other;
  int nHost = nHostSigints;
  setSigint(hostSigint);
  CHECK(evidence_store_open(":memory:", 0, &a) == 0);
  CHECK(evidence_store_watch_sigint(a) == 1); /* the host's handler again: watched */
  evidence_store_unwatch_sigint(a);

  memset(&other, 0, sizeof other);
  other.sa_handler = otherSigint;
  sigemptyset(&other.sa_mask);
  other.sa_flags = SA_NODEFER; /* as faulthandler's chain=True */
  CHECK(sigaction(SIGINT, &other, &otherPassesTo) == 0);
  if (evidence_store_watch_sigint(a) == 0) {
    raise(SIGINT);
    CHECK(nOtherSigints == 1 && nHostSigints == nHost + 1);
  } else {
    CHECK(!"watched over a handler that passes SIGINT on to the store's: SIGINT would recurse");
    evidence_store_unwatch_sigint(a);
  }
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);

  otherPassesTo.sa_flags = 0;
  otherPassesTo.sa_handler = SIG_DFL; /* passes nothing on: it alone hears SIGINT */
  CHECK(evidence_store_watch_sigint(a) == 0);
  raise(SIGINT);
  CHECK(nOtherSigints == 2 && nHostSigints == nHost + 1);
  CHECK(evidence_store_exec(a, zWork, strlen(zWork)) == 0);

  setSigint(hostSigint); /* the host's own again (Python's, as a program sets it back) */
  CHECK(evidence_store_watch_sigint(a) == 1);
  raise(SIGINT);
  CHECK(nHostSigints == nHost + 2);
  CHECK(evidence_store_exec(a, zSigintEndless, strlen(zSigintEndless)) == SQLITE_INTERRUPT_RC);
  CHECK(evidence_store_unwatch_sigint(a) == 1);
  setSigint(SIG_DFL);
  evidence_store_close(a);
}

int main(int argc, char **argv) {
  EvidenceStore *p = 0;
  char *zSchema;
  if (argc != 2 || (zSchema = readFile(argv[1])) == 0) {
    fprintf(stderr, "usage: %s SCHEMA.sql\n", argv[0]);
    return 2;
  }
  CHECK(evidence_store_open(":memory:", 0, &p) == 0);
  CHECK(evidence_store_exec(p, zSchema, strlen(zSchema)) == 0);
  free(zSchema);
  testRetrieve(p);
  testSearch(p);
  testNulAndForget(p);
  testPutMany(p);
  testLargeBatches(p);
  testReviveForgotten(p);
  testEraBoundary(p);
  testDocNumberLimit(p);
  testUncheckedBatchThatFails(p);
  testQuery(p);
  testKeptStatements(p);
  testLoadExtension(p);
  testReadOnlyGate(p);
  evidence_store_close(p);

  /* A failed open still hands back a store to read the error from, and to close. */
  CHECK(evidence_store_open("/nonexistent-dir/x.db", 0, &p) != 0);
  CHECK(p != 0 && strstr(evidence_store_errmsg(p), "unable to open") != 0);
  evidence_store_close(p);

  testPlainNames();
  testSigint();
  testSigintOtherHandler();

  printf("%d passed, %d failed\n", nPass, nFail);
  return nFail ? 1 : 0;
}
