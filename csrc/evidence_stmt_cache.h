/*
** evidence_stmt_cache.h: the store's own statements, prepared once and kept.
**
** The Python side runs its constant SQL (pyevidence/storage/versions.py, the
** index check) through evidence_store_query once per tenant or scope; preparing
** each time cost more than running it. The cache keeps the most recently used
** statements by their exact text, as Python's sqlite3 module does for the
** fallback engine. Only statements run without the read-only gate are kept: a
** host's own SQL is prepared under the gate's authorizer every time.
*/
#ifndef EVIDENCE_STMT_CACHE_H
#define EVIDENCE_STMT_CACHE_H

#include <stddef.h>

#include "evidence_sqlite.h"

#define EVIDENCE_STMT_CACHE_SIZE 32

typedef struct EvidenceCachedStmt {
  sqlite3_stmt *pStmt;
  char *zSql; /* its text, as given: nSql bytes, the key */
  size_t nSql;
} EvidenceCachedStmt;

/* Most recently used first; nUsed entries. Zeroed is empty. */
typedef struct EvidenceStmtCache {
  EvidenceCachedStmt a[EVIDENCE_STMT_CACHE_SIZE];
  int nUsed;
} EvidenceStmtCache;

/* The kept statement of exactly this text, ready to bind (reset, no bindings), or
** 0 when none is kept or the kept one is running (a call made while it steps). */
sqlite3_stmt *evidenceStmtCacheFind(EvidenceStmtCache *pCache, const char *zSql, size_t nSql);

/* Keeps pStmt, prepared from zSql[0..nSql), reset and unbound for the next Find;
** the least recently used statement is finalized when the cache is full. On
** out-of-memory pStmt is finalized instead. pStmt must not be kept already. */
void evidenceStmtCacheKeep(EvidenceStmtCache *pCache, const char *zSql, size_t nSql, sqlite3_stmt *pStmt);

/* Finalizes every kept statement: before the connection closes. */
void evidenceStmtCacheClear(EvidenceStmtCache *pCache);

#endif
