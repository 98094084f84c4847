/*
** evidence_index_write.h: the native engine's writer of the token index
** (evidence_index_write.c), for the batch writer (evidence_batch.c).
*/
#ifndef EVIDENCE_INDEX_WRITE_H
#define EVIDENCE_INDEX_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "evidence_sqlite.h"

typedef struct EvidenceIndexWriter EvidenceIndexWriter;

int evidenceIndexWriterOpen(EvidenceIndexWriter **pp);
void evidenceIndexWriterFree(EvidenceIndexWriter *p);

/* A batch: Begin, then Record for the new current row of each record, in evidence's
** primary-key order and before that row is written (it reads the old one, unless bNew
** says the record had no version at all before the batch; *pDoc is the row's document
** number, its column doc), then Finish, which writes the postings, expiry counts and
** scopes. */
void evidenceIndexBegin(EvidenceIndexWriter *p);
int evidenceIndexRecord(sqlite3 *db, EvidenceIndexWriter *p, const char *tenant, size_t tenant_len,
                        const char *record_id, size_t record_id_len, const char *revision,
                        size_t revision_len, int64_t expires_at, const char *body, size_t body_len, int bNew,
                        int64_t *pDoc);
int evidenceIndexFinish(sqlite3 *db, EvidenceIndexWriter *p);

/* Rebuilds the whole index from evidence, inside the caller's transaction: the four
** tables emptied, every scope's current rows numbered 0, 1, ... in evidence's
** primary-key order (their column doc), then entered in that order. xProgress (may be 0) hears (done, total)
* now and
** then; a non-zero return stops the rebuild with SQLITE_INTERRUPT. */
int evidenceIndexRebuild(sqlite3 *db, EvidenceIndexWriter *p, int (*xProgress)(void *, int64_t, int64_t),
                         void *pArg);

/* Whether the last batch's SQLITE_CORRUPT came from the index disagreeing with the
** records (a raw write to its tables), not from SQLite: then reindex repairs it. */
int evidenceIndexWriterBroken(const EvidenceIndexWriter *p);

#endif /* EVIDENCE_INDEX_WRITE_H */
