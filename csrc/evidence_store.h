/*
** evidence_store.h: the C API of the native engine, for the Python bindings.
**
** The declarations between the CDEF markers are read verbatim by
** pyevidence/storage/_build_native.py (cffi's cdef), so they are plain C with no
** preprocessor lines: this header is the only copy.
**
** Ownership, in one rule: whatever a function hands out through a pointer to a
** pointer, the caller frees with the matching *_free or *_close function, and
** nothing else. Strings going in are (pointer, length) pairs: they may hold
** NUL characters, and C never keeps them after the call returns.
**
** Every function returns an SQLite result code (SQLITE_OK is 0). After an
** error, evidence_store_errmsg() says what went wrong, until the next call.
** One EvidenceStore must not be used by two threads at once; the Python side
** holds a lock per store.
*/
#ifndef EVIDENCE_STORE_H
#define EVIDENCE_STORE_H

#include <stddef.h>
#include <stdint.h>

/* BEGIN CDEF */
typedef struct EvidenceStore EvidenceStore;

/* A value going into or coming out of SQL: type is one of the SQLite
** fundamental types (1 integer, 2 float, 3 text, 4 blob, 5 null). */
typedef struct EvidenceValue {
  int type;
  int64_t i;
  double d;
  const char *z; /* text (UTF-8) or blob bytes, n of them */
  size_t n;
} EvidenceValue;

/* The rows of a query: n_rows * n_cols values, row by row, and the column names. */
typedef struct EvidenceTable {
  int n_cols;
  size_t n_rows;
  EvidenceValue *cells;
  char **names;
} EvidenceTable;

/* One eligible record, as retrieve and candidates return it. */
typedef struct EvidenceRow {
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
  const char *content_hash; /* of the current version, 64 hex digits */
  size_t content_hash_len;
  int64_t expires_at;
  int64_t version; /* the current version's sequence number */
  int64_t score;
} EvidenceRow;

typedef struct EvidenceRows {
  EvidenceRow *rows;
  size_t n_rows;
  int64_t eligible_count; /* records in scope before scoring */
} EvidenceRows;

/* Opens the database at the file system path (read_only: as it is; otherwise
** created if absent) and registers token_overlap() and evidence_eligible on it.
** The path is a plain file name, never a URI: "file:x" opens the file ./file:x.
** *out is set even on failure, so the error message can be read; close it in
** every case. */
int evidence_store_open(const char *path, int read_only, EvidenceStore **out);
void evidence_store_close(EvidenceStore *store);
const char *evidence_store_errmsg(EvidenceStore *store);

/* Loads a SQLite extension (sqlite-vec) from the file at the UTF-8 path into this
** connection only. Extension loading is switched on for this one call through
** sqlite3_db_config, so SQL can never load a library itself (load_extension()
** stays off). */
int evidence_store_load_extension(EvidenceStore *store, const char *path, const char *entry_point);

/* Runs SQL text of one or more statements, discarding any rows. */
int evidence_store_exec(EvidenceStore *store, const char *sql, size_t sql_len);

/* 1 while a transaction is open on the store's connection, else 0. */
int evidence_store_in_transaction(EvidenceStore *store);

/* Runs one statement with n_params bound values and returns its rows in *out.
** With read_only set, the read-only gate (evidence_store.c) refuses, before it runs,
** a statement that could write or change the connection, and any function or pragma
** not on its allow-lists; the error message names what it refused. Without it, the
** statement is the caller's own: prepared once and kept for the next call with the same
** text (evidence_stmt_cache.h). */
int evidence_store_query(EvidenceStore *store, const char *sql, size_t sql_len, const EvidenceValue *params,
                         int n_params, int read_only, EvidenceTable **out);
void evidence_table_free(EvidenceTable *table);

/* Stores a new version of each of the n records, in order, and makes the last
** version of each record its current one: what n puts would store, written as a
** batch (evidence_batch.c). The records arrive packed, one buffer for all: data
** holds, record after record, the UTF-8 bytes of tenant, record_id, revision,
** kind, body and source back to back (data_len bytes in all), lengths the 6 * n
** byte counts in that order, expires_at the n expiry times. Outside a
** transaction it runs in one of its own (all or nothing); inside the caller's,
** the caller rolls back after an error. Arguments are assumed valid: the Python
** side validates them (UTF-8 included), and schema.sql's checks of appended
** versions step aside for this writer (evidence_writer_vouches); the tables'
** CHECKs and the check of each current row against its version still hold. */
int evidence_store_put_many(EvidenceStore *store, const char *data, size_t data_len, const size_t *lengths,
                            const int64_t *expires_at, size_t n);

/* Stores a new version of the record (tenant, record_id) and makes it the current
** one: evidence_store_put_many of one record. */
int evidence_store_put(EvidenceStore *store, const char *tenant, size_t tenant_len, const char *record_id,
                       size_t record_id_len, const char *revision, size_t revision_len, const char *kind,
                       size_t kind_len, const char *body, size_t body_len, const char *source,
                       size_t source_len, int64_t expires_at);

/* Forgets one record of one tenant (its current row, and the content of its
** versions); *deleted is 1 when there was a current row. */
int evidence_store_forget(EvidenceStore *store, const char *tenant, size_t tenant_len, const char *record_id,
                          size_t record_id_len, int *deleted);

/* The ranked hits for query among the eligible records, at most limit, and the
** eligible count, from one statement (one snapshot). Ranking runs in SQL:
** token_overlap over evidence_eligible, score descending, record_id ascending. */
int evidence_store_retrieve(EvidenceStore *store, const char *tenant, size_t tenant_len, const char *revision,
                            size_t revision_len, int64_t now, const char *query, size_t query_len, int limit,
                            EvidenceRows **out);

/* The same hits and eligible count as evidence_store_retrieve, found through the token
** index (evidence_search.c): the cost grows with the postings of the query's tokens,
** not with the eligible rows. One snapshot: inside the caller's transaction, or a read
** transaction of its own. */
int evidence_store_search(EvidenceStore *store, const char *tenant, size_t tenant_len, const char *revision,
                          size_t revision_len, int64_t now, const char *query, size_t query_len, int limit,
                          EvidenceRows **out);

/* Rebuilds the token index from the current rows: emptied, then every record entered
** again, numbered densely (what `pyevidence reindex` and the upgrade to schema 5 run).
** Inside the caller's transaction, or one of its own (all or nothing). progress (may be
** NULL) is called with (arg, done, total) every few thousand records; a non-zero return
** stops the rebuild, which then fails with SQLITE_INTERRUPT and changes nothing. */
int evidence_store_reindex(EvidenceStore *store, int (*progress)(void *, int64_t, int64_t), void *arg);

/* Every eligible record (score 0), ordered by record_id, for scorers that run
** outside SQLite. */
int evidence_store_candidates(EvidenceStore *store, const char *tenant, size_t tenant_len,
                              const char *revision, size_t revision_len, int64_t now, EvidenceRows **out);
void evidence_rows_free(EvidenceRows *rows);

/* Ctrl-C for a host that handles SIGINT when control comes back to it (Python): from
** watch until unwatch, a SIGINT interrupts the statement the store runs (the call fails
** with SQLITE_INTERRUPT, its transaction rolled back); every SIGINT still reaches the
** host's handler (evidence_sigint.c). watch returns 0 and does nothing when SIGINT has
** no handler (ignored, or the default); unwatch returns 1 if a SIGINT arrived. One store
** is watched at a time, from the thread that handles the host's signals; close unwatches. */
int evidence_store_watch_sigint(EvidenceStore *store);
int evidence_store_unwatch_sigint(EvidenceStore *store);

/* Copies the whole database into a new file at the file system path dest_path
** (a plain name, as for evidence_store_open), as one consistent snapshot (SQLite's
** online backup, all pages in one step, so writers on other connections may commit
** meanwhile without tearing the copy). dest_path must not exist or be an empty
** file: a database with pages in it is never overwritten. */
int evidence_store_backup(EvidenceStore *store, const char *dest_path);
/* END CDEF */

#endif /* EVIDENCE_STORE_H */
