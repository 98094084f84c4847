/*
** evidence_batch.h: the native engine's batch writer (evidence_batch.c), for
** evidence_store.c. Not part of the API the Python bindings see.
*/
#ifndef EVIDENCE_BATCH_H
#define EVIDENCE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "evidence_sqlite.h"

/* One record of a batch: its fields as (pointer, length) pairs. */
typedef struct EvidencePut {
  const char *tenant;
  size_t tenant_len;
  const char *record_id;
  size_t record_id_len;
  const char *revision;
  size_t revision_len;
  const char *kind;
  size_t kind_len;
  const char *body;
  size_t body_len;
  const char *source;
  size_t source_len;
  int64_t expires_at;
} EvidencePut;

/* The writer's prepared statements, made on first use for one connection. */
typedef struct EvidenceBatch EvidenceBatch;

/* Creates the writer for db and registers on db its evidence_writer_vouches():
** 1 while the writer's own statements run, else 0 (see schema.sql). */
int evidenceBatchOpen(sqlite3 *db, EvidenceBatch **ppBatch);

/* Writes the n records as n puts would (see evidence_batch.c), inside the
** connection's current transaction. Free the writer with evidenceBatchFree
** before closing db. On an error the message is evidenceBatchErrmsg's, or, for
** SQLITE_NOMEM, "out of memory". */
int evidenceBatchPut(sqlite3 *db, EvidenceBatch *pBatch, const EvidencePut *aRec, size_t n);
void evidenceBatchFree(EvidenceBatch *pBatch);

/* The message of the last failed evidenceBatchPut: db's, as it stood when the batch
** failed (turning the schema's checks back on afterwards resets sqlite3_errmsg). */
const char *evidenceBatchErrmsg(const EvidenceBatch *pBatch, sqlite3 *db);

/* Rebuilds the token index from the current rows (evidence_index_write.c). */
int evidenceBatchReindex(sqlite3 *db, EvidenceBatch *pBatch, int (*xProgress)(void *, int64_t, int64_t),
                         void *pArg);

/* After a batch failed with SQLITE_CORRUPT: 1 when the token index disagreed with the
** records (a raw write to its tables; `pyevidence reindex` repairs it), 0 when SQLite did. */
int evidenceBatchIndexBroken(const EvidenceBatch *pBatch);

#endif /* EVIDENCE_BATCH_H */
