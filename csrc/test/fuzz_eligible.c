/*
** fuzz_eligible.c: libFuzzer target for evidence_eligible's argument handling.
**
** Decodes up to three SQL values from the input (a type byte, then a length
** and bytes for text or blob, 8 bytes for an integer or a real) and runs
** evidence_eligible with them, and token_overlap with the last one, on an
** in-memory store. Any result or error is fine; a crash, a sanitizer report or
** a row outside the requested tenant is not.
*/
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int evidenceRegister(sqlite3 *db);

static sqlite3 *db;

static const char zSetup[] =
    "CREATE TABLE evidence (tenant TEXT NOT NULL, revision TEXT NOT NULL, expires_at INTEGER NOT NULL,"
    " record_id TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, source TEXT NOT NULL,"
    " version INTEGER NOT NULL, content_hash TEXT NOT NULL,"
    " PRIMARY KEY (tenant, revision, expires_at, record_id), UNIQUE (tenant, record_id)) STRICT, WITHOUT "
    "ROWID;"
    "CREATE INDEX evidence_scope ON evidence (tenant, revision, expires_at);"
    "INSERT INTO evidence VALUES ('a', 'v', 5, 'r1', 'runbook', 'queue lag', 's', 1, 'h1'),"
    " ('a', 'v', 9, 'r2', 'runbook', 'disk', 's', 1, 'h2'), ('b', 'v', 9, 'r3', 'working', 'queue', 's', 1, "
    "'h3'),"
    " ('', '', 0, 'r4', 'incident', CAST(x'00ff' AS TEXT), 's', 1, 'h4');";

/* Binds the next value of the input to parameter i; returns the bytes used. */
static size_t bindNext(sqlite3_stmt *pStmt, int i, const uint8_t *data, size_t size) {
  size_t n;
  if (size == 0) return sqlite3_bind_null(pStmt, i), 0;
  switch (data[0] % 5) {
    case 0: sqlite3_bind_null(pStmt, i); return 1;
    case 1:
    case 2: {
      int64_t v = 0;
      n = size - 1 < 8 ? size - 1 : 8;
      memcpy(&v, data + 1, n);
      if (data[0] % 5 == 1) {
        sqlite3_bind_int64(pStmt, i, v);
      } else {
        double d;
        memcpy(&d, &v, sizeof(d));
        sqlite3_bind_double(pStmt, i, d);
      }
      return 1 + n;
    }
    default:
      n = size > 1 ? data[1] : 0;
      if (n > size - 2 || size < 2) n = size >= 2 ? size - 2 : 0;
      if (data[0] % 5 == 3) {
        sqlite3_bind_text(pStmt, i, (const char *)data + 2, (int)n, SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_blob(pStmt, i, data + 2, (int)n, SQLITE_TRANSIENT);
      }
      return (size >= 2 ? 2 : size) + n;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sqlite3_stmt *pStmt = 0;
  size_t used = 0;
  int i;
  if (db == 0) {
    if (sqlite3_open(":memory:", &db) != SQLITE_OK || evidenceRegister(db) != SQLITE_OK ||
        sqlite3_exec(db, zSetup, 0, 0, 0) != SQLITE_OK) {
      abort();
    }
  }
  if (sqlite3_prepare_v2(
          db, "SELECT tenant, ?1 IS tenant, token_overlap(?3, body) FROM evidence_eligible(?1, ?2, ?3)", -1,
          &pStmt, 0) != SQLITE_OK) {
    abort();
  }
  for (i = 1; i <= 3; i++) used += bindNext(pStmt, i, data + used, size - used);
  while (sqlite3_step(pStmt) == SQLITE_ROW) {
    if (sqlite3_column_int(pStmt, 1) != 1) abort(); /* a row of another tenant */
  }
  sqlite3_finalize(pStmt);
  return 0;
}
