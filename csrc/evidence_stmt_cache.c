/*
** evidence_stmt_cache.c: the store's own statements, prepared once and kept
** (see evidence_stmt_cache.h).
*/
#include "evidence_stmt_cache.h"

#include <string.h>

/* Moves entry i to the front, shifting the ones before it back by one. */
static void cacheToFront(EvidenceStmtCache *pCache, int i) {
  EvidenceCachedStmt hit = pCache->a[i];
  memmove(&pCache->a[1], &pCache->a[0], (size_t)i * sizeof(hit));
  pCache->a[0] = hit;
}

sqlite3_stmt *evidenceStmtCacheFind(EvidenceStmtCache *pCache, const char *zSql, size_t nSql) {
  int i;
  for (i = 0; i < pCache->nUsed; i++) {
    EvidenceCachedStmt *e = &pCache->a[i];
    if (e->nSql == nSql && memcmp(e->zSql, zSql, nSql) == 0) {
      if (sqlite3_stmt_busy(e->pStmt)) return 0; /* the caller prepares its own copy */
      cacheToFront(pCache, i);
      return pCache->a[0].pStmt;
    }
  }
  return 0;
}

void evidenceStmtCacheKeep(EvidenceStmtCache *pCache, const char *zSql, size_t nSql, sqlite3_stmt *pStmt) {
  char *zCopy = sqlite3_malloc64(nSql ? nSql : 1);
  EvidenceCachedStmt *pLast;
  /* Reset ends the statement's read of the database: a kept statement never holds
  ** a snapshot open, which would stop checkpoints (forget's erasure) and writers. */
  sqlite3_reset(pStmt);
  sqlite3_clear_bindings(pStmt);
  if (zCopy == 0) {
    sqlite3_finalize(pStmt);
    return;
  }
  memcpy(zCopy, zSql, nSql);
  if (pCache->nUsed == EVIDENCE_STMT_CACHE_SIZE) {
    pLast = &pCache->a[EVIDENCE_STMT_CACHE_SIZE - 1];
    sqlite3_finalize(pLast->pStmt);
    sqlite3_free(pLast->zSql);
    pCache->nUsed--;
  }
  pCache->a[pCache->nUsed].pStmt = pStmt;
  pCache->a[pCache->nUsed].zSql = zCopy;
  pCache->a[pCache->nUsed].nSql = nSql;
  cacheToFront(pCache, pCache->nUsed);
  pCache->nUsed++;
}

void evidenceStmtCacheClear(EvidenceStmtCache *pCache) {
  int i;
  for (i = 0; i < pCache->nUsed; i++) {
    sqlite3_finalize(pCache->a[i].pStmt);
    sqlite3_free(pCache->a[i].zSql);
  }
  memset(pCache, 0, sizeof(*pCache));
}
