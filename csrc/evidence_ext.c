/*
** evidence_ext.c: the entry point of the pyevidence SQLite extension.
**
**   sqlite> .load ./evidence
**   sqlite> SELECT evidence_version();                   -- 0.4.0.dev0
**   sqlite> SELECT record_id, source, token_overlap('queue lag', body) AS score
**      ...>   FROM evidence_eligible('team-a', 'v1', 100)
**      ...>  WHERE score > 0 ORDER BY score DESC, record_id LIMIT 5;
**
** Registers on a connection:
**   token_overlap(query, body)   evidence_overlap.c
**   evidence_tokens(text)        evidence_overlap.c
**   evidence_eligible(tenant, revision, now)   evidence_eligible.c
**   evidence_sha256(...)         evidence_hash.c
**   evidence_utf8_valid(x)       evidence_utf8.c
**   evidence_version()           here: the pyevidence release these sources belong to
**   evidence_writer_vouches()    here: 0 (schema.sql's triggers check every write in full); the
**                                native engine's connection has its own (evidence_batch.c)
**
** Built as a loadable extension, SQLite calls sqlite3_evidence_init() (the name
** it derives from "evidence.so"). Built with -DSQLITE_CORE into a program that
** links SQLite itself, the program calls evidenceRegister() on its connection.
*/
#define EVIDENCE_EXT_OWNS_API
#include "evidence_sqlite.h"
SQLITE_EXTENSION_INIT1

static void versionFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx, EVIDENCE_VERSION, -1, SQLITE_STATIC);
}

/* 0: on a connection of the extension, no write is vouched for by pyevidence's writer. */
static void notVouchingFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_int(ctx, 0);
}

int evidenceRegisterWithStats(sqlite3 *db, EvidenceScanStats **ppStats) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function(db, "evidence_version", 0, flags, 0, versionFunc, 0, 0);
  if (rc == SQLITE_OK) rc = evidenceOverlapRegister(db);
  if (rc == SQLITE_OK) rc = evidenceEligibleRegister(db, ppStats);
  if (rc == SQLITE_OK) rc = evidenceHashRegister(db);
  if (rc == SQLITE_OK) rc = evidenceUtf8Register(db);
  if (rc == SQLITE_OK) rc = evidenceDocsetRegister(db);
  if (rc == SQLITE_OK) rc = evidenceSearchRegister(db);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "evidence_writer_vouches", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, 0,
                                 notVouchingFunc, 0, 0);
  }
  return rc;
}

int evidenceRegister(sqlite3 *db) {
  return evidenceRegisterWithStats(db, 0);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_evidence_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  rc = evidenceRegister(db);
  if (rc != SQLITE_OK && pzErrMsg) {
    *pzErrMsg = sqlite3_mprintf("evidence: cannot register functions: %s", sqlite3_errstr(rc));
  }
  return rc;
}
