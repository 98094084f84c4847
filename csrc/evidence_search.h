/*
** evidence_search.h: retrieval through the token index (evidence_search.c).
*/
#ifndef EVIDENCE_SEARCH_H
#define EVIDENCE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "evidence_sqlite.h"

typedef struct EvidenceSearcher EvidenceSearcher;

/* One hit: the record and its score. */
typedef struct EvidenceSearchHit {
  char *zRecordId;
  size_t nRecordId;
  int64_t score;
} EvidenceSearchHit;

typedef struct EvidenceSearchResult {
  EvidenceSearchHit *aHit; /* best first, ties by record_id */
  int nHit;
  int64_t nEligible; /* the scope's rows with expires_at > now */
} EvidenceSearchResult;

/* A searcher for the pyevidence tables of database zSchema ("main", or an attached
** one) of db; it keeps its prepared statements. */
int evidenceSearcherOpen(sqlite3 *db, const char *zSchema, EvidenceSearcher **pp);
void evidenceSearcherFree(EvidenceSearcher *p);

/* The hits for query among the eligible rows of (tenant, revision) at now, at most
** limit (>= 1), exactly as the scan ranks them. Runs inside the caller's transaction
** or statement (one snapshot). On an error, *pzErr (free with sqlite3_free) says why. */
int evidenceSearch(EvidenceSearcher *p, const char *tenant, size_t tenant_len, const char *revision,
                   size_t revision_len, int64_t now, const char *query, size_t query_len, int limit,
                   EvidenceSearchResult *pOut, char **pzErr);
void evidenceSearchResultClear(EvidenceSearchResult *p);

/* Registers the table-valued function evidence_search(tenant, revision, now, query, limit). */
int evidenceSearchRegister(sqlite3 *db);

#endif /* EVIDENCE_SEARCH_H */
