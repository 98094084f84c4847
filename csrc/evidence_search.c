/*
** evidence_search.c: retrieve through the token index, exactly as the scan ranks.
**
** The scan (evidence_store.c, STMT_RANK) scores every eligible row. This reads
** only the docsets of the query's distinct tokens in the caller's scope
** (schema.sql, "The token index"), so its cost grows with those postings, not
** with the eligible rows:
**
**   1. eligible_count = the scope's docs - its rows with expires_at <= now, the
**      latter summed from evidence_index_expiry: per level L (8 bits of
**      expires_at each), the buckets below now's under now's own prefix, at most
**      255 rows a level, plus the bucket equal to now;
**   2. scores: each query token's docsets are added into bit-sliced counters,
**      one bit plane per bit of the score, 64 documents per word (a docset adds
**      in 64 word operations times the carries, whatever its size);
**   3. hits: from the highest score down, the documents with exactly that score
**      are resolved to record ids, skipping expired ones: one lookup each when
**      few tie, else a walk of the scope's records in record_id order (BINARY),
**      which meets the tied ones in the order the ranking wants them, and stops
**      when the limit is reached.
**
** The result is the scan's, hit for hit (tests/test_index_model.py and the benchmark
** compare them on every query). Step 2 needs (documents / 8) x (bits of the score)
** bytes of memory: 1 MB for a million documents and a query of 255 tokens.
**
** evidence_search(tenant, revision, now, query, limit) is the same search as a
** table-valued function, for the sqlite3 shell and other hosts.
*/
#include "evidence_search.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "evidence_docset.h"

enum { S_SCOPE, S_EXPIRED, S_POSTINGS, S_DOC_BY_NUMBER, S_DOCS_IN_ORDER, N_S_STMT };

static const char *const azSearchSql[N_S_STMT] = {
    "SELECT s.scope, s.docs, s.next_doc, (SELECT max(c.doc) FROM \"%w\".evidence_current AS c"
    " WHERE c.tenant = s.tenant AND c.revision = s.revision)"
    " FROM \"%w\".evidence_index_scopes AS s WHERE s.tenant = ?1 AND s.revision = ?2",
    "SELECT coalesce(sum(rows), 0) FROM \"%w\".evidence_index_expiry"
    " WHERE scope = ?1 AND level = ?2 AND bucket BETWEEN ?3 AND ?4",
    "SELECT chunk, docs FROM \"%w\".evidence_index_postings WHERE scope = ?1 AND era = ?3 AND token = ?2",
    /* a document's record, by evidence_current's key (schema version 12) */
    "SELECT expires_at, record_id FROM \"%w\".evidence_current"
    " WHERE tenant = ?1 AND revision = ?2 AND doc = ?3",
    /* the scope's rows in record_id order: evidence_current's index by record covers it */
    "SELECT record_id, doc, expires_at FROM \"%w\".evidence_current WHERE tenant = ?1 AND revision = ?2"
    " ORDER BY record_id",
};

struct EvidenceSearcher {
  sqlite3 *db;
  char *zSchema;
  sqlite3_stmt *aStmt[N_S_STMT];
};

int evidenceSearcherOpen(sqlite3 *db, const char *zSchema, EvidenceSearcher **pp) {
  EvidenceSearcher *p = sqlite3_malloc(sizeof(*p));
  *pp = p;
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  p->db = db;
  p->zSchema = sqlite3_mprintf("%s", zSchema);
  return p->zSchema ? SQLITE_OK : SQLITE_NOMEM;
}

void evidenceSearcherFree(EvidenceSearcher *p) {
  int i;
  if (p == 0) return;
  for (i = 0; i < N_S_STMT; i++) sqlite3_finalize(p->aStmt[i]);
  sqlite3_free(p->zSchema);
  sqlite3_free(p);
}

void evidenceSearchResultClear(EvidenceSearchResult *r) {
  int i;
  for (i = 0; i < r->nHit; i++) sqlite3_free(r->aHit[i].zRecordId);
  sqlite3_free(r->aHit);
  memset(r, 0, sizeof(*r));
}

/* The state of one search. */
typedef struct Search {
  EvidenceSearcher *p;
  char **pzErr;
  const char *zTenant, *zRevision; /* the scope's, as the caller gave them */
  size_t nTenant, nRevision;
  int64_t scope, docs, nextDoc, now;
  int64_t maxDoc;   /* the scope's highest document number, -1 if it has none */
  size_t nChunk;    /* chunks of 4096 documents: up to the one of maxDoc */
  int nPlane;       /* bits of the highest possible score */
  uint64_t *aPlane; /* word w of plane b of chunk c: aPlane[(c * nPlane + b) * 64 + w] */
  uint64_t *aMask;  /* one bit per document: a set being worked on */
  EvidenceSearchResult *pOut;
  int nWant; /* the limit */
} Search;

static int searchError(Search *s, int rc, const char *zFormat, ...) {
  va_list ap;
  if (*s->pzErr == 0) {
    va_start(ap, zFormat);
    *s->pzErr = sqlite3_vmprintf(zFormat, ap);
    va_end(ap);
  }
  return rc;
}

static int searchStmt(Search *s, int id, sqlite3_stmt **ppStmt) {
  EvidenceSearcher *p = s->p;
  if (p->aStmt[id] == 0) {
    /* the schema for each %w: S_SCOPE has two, the others one */
    char *zSql = sqlite3_mprintf(azSearchSql[id], p->zSchema, p->zSchema);
    int rc;
    if (zSql == 0) return SQLITE_NOMEM;
    rc = sqlite3_prepare_v3(p->db, zSql, -1, SQLITE_PREPARE_PERSISTENT, &p->aStmt[id], 0);
    sqlite3_free(zSql);
    if (rc != SQLITE_OK) {
      return searchError(s, rc, "%s (is this a pyevidence store of schema version 5 or later?)",
                         sqlite3_errmsg(p->db));
    }
  }
  *ppStmt = p->aStmt[id];
  return SQLITE_OK;
}

static int indexOutOfStep(Search *s) {
  return searchError(
      s, SQLITE_CORRUPT,
      "the token index disagrees with the stored records; rebuild it with `pyevidence reindex`");
}

/* Rows of the scope with bucket lo..hi at level; added to *pn. */
static int searchExpiredRange(Search *s, int level, int64_t lo, int64_t hi, int64_t *pn) {
  sqlite3_stmt *pStmt = 0;
  int rc = searchStmt(s, S_EXPIRED, &pStmt);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_int64(pStmt, 1, s->scope);
  sqlite3_bind_int(pStmt, 2, level);
  sqlite3_bind_int64(pStmt, 3, lo);
  sqlite3_bind_int64(pStmt, 4, hi);
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    int64_t n = sqlite3_column_int64(pStmt, 0);
    rc = SQLITE_OK;
    /* Counts a writer kept never come near 2^63: such a sum is a damaged table, not a count. */
    if (n < 0 || n > INT64_MAX - *pn)
      rc = indexOutOfStep(s);
    else
      *pn += n;
  } else if (rc == SQLITE_ERROR && strcmp(sqlite3_errmsg(s->p->db), "integer overflow") == 0) {
    rc = indexOutOfStep(s); /* sum()'s integer overflow, from counts no writer keeps */
  } else {
    /* any other error is the table's own (where it is not schema.sql's: a view that fails) */
    rc = searchError(s, rc, "%s", sqlite3_errmsg(s->p->db));
  }
  sqlite3_reset(pStmt);
  return rc;
}

/* The scope's rows with expires_at <= now (see the top of this file). */
static int searchExpired(Search *s, int64_t *pn) {
  uint64_t now = (uint64_t)s->now;
  int level, rc = SQLITE_OK;
  *pn = 0;
  if (s->now < 0) return SQLITE_OK; /* expires_at >= 0 > now: none has expired */
  for (level = 0; rc == SQLITE_OK && level < 8; level++) {
    uint64_t cur = now >> (8 * level);
    uint64_t lo = level == 7 ? 0 : (now >> (8 * (level + 1))) << 8;
    if (cur > lo) rc = searchExpiredRange(s, level, (int64_t)lo, (int64_t)(cur - 1), pn);
  }
  if (rc == SQLITE_OK) rc = searchExpiredRange(s, 0, s->now, s->now, pn);
  return rc;
}

/* Adds one docset (aWord) into the counters of chunk c: a ripple-carry add per word. */
static void searchAdd(Search *s, size_t c, const uint64_t *aWord) {
  uint64_t *aChunk = &s->aPlane[c * (size_t)s->nPlane * EVIDENCE_CHUNK_WORDS];
  int w, b;
  for (w = 0; w < EVIDENCE_CHUNK_WORDS; w++) {
    uint64_t carry = aWord[w];
    for (b = 0; carry && b < s->nPlane; b++) {
      uint64_t *pw = &aChunk[b * EVIDENCE_CHUNK_WORDS + w];
      uint64_t next = *pw & carry;
      *pw ^= carry;
      carry = next;
    }
  }
}

/* Scores every document: each distinct query token's docsets added into the counters,
** read era by era (the postings' key leads with the era: schema.sql). */
static int searchScore(Search *s, const EvidenceTokenList *pQuery) {
  uint64_t aWord[EVIDENCE_CHUNK_WORDS];
  sqlite3_stmt *pStmt = 0;
  size_t nEra = (s->nChunk + (1 << EVIDENCE_ERA_CHUNK_BITS) - 1) >> EVIDENCE_ERA_CHUNK_BITS;
  size_t i, era;
  int rc = searchStmt(s, S_POSTINGS, &pStmt);
  for (i = 0; rc == SQLITE_OK && i < pQuery->nToken; i++) {
    sqlite3_bind_int64(pStmt, 1, s->scope);
    sqlite3_bind_text64(pStmt, 2, pQuery->zText + pQuery->aStart[i], pQuery->aLen[i], SQLITE_STATIC,
                        SQLITE_UTF8);
    for (era = 0; rc == SQLITE_OK && era < nEra; era++) {
      sqlite3_bind_int64(pStmt, 3, (int64_t)era);
      while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(pStmt, 0);
        if (c < 0 || (uint64_t)c >= s->nChunk ||
            evidenceDocsetDecode(sqlite3_column_blob(pStmt, 1), (size_t)sqlite3_column_bytes(pStmt, 1),
                                 aWord)) {
          sqlite3_reset(pStmt);
          return indexOutOfStep(s);
        }
        searchAdd(s, (size_t)c, aWord);
      }
      sqlite3_reset(pStmt);
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
  }
  return rc;
}

/* Word w of chunk c's plane b. */
#define PLANE(s, c, b, w) \
  ((s)->aPlane[((c) * (size_t)(s)->nPlane + (size_t)(b)) * EVIDENCE_CHUNK_WORDS + (w)])

/* The highest score below `below` that any document has (0: none). Leaves no state. */
static int64_t searchMaxBelow(Search *s, int64_t below) {
  size_t nWord = s->nChunk * EVIDENCE_CHUNK_WORDS, i;
  int64_t best = 0;
  int b;
  /* aMask = documents with 0 < score < below */
  for (i = 0; i < nWord; i++) {
    size_t c = i / EVIDENCE_CHUNK_WORDS, w = i % EVIDENCE_CHUNK_WORDS;
    uint64_t lt = 0, eq = ~(uint64_t)0, any = 0;
    for (b = s->nPlane - 1; b >= 0; b--) {
      uint64_t x = PLANE(s, c, b, w);
      any |= x;
      if ((below >> b) & 1) {
        lt |= eq & ~x;
        eq &= x;
      } else {
        eq &= ~x;
      }
    }
    if (below >> s->nPlane) lt = ~(uint64_t)0; /* below is above every possible score */
    s->aMask[i] = lt & any;
  }
  /* then narrow to the documents with the highest score, bit by bit from the top */
  for (b = s->nPlane - 1; b >= 0; b--) {
    uint64_t any = 0;
    for (i = 0; i < nWord && !any; i++)
      any = s->aMask[i] & PLANE(s, i / EVIDENCE_CHUNK_WORDS, b, i % EVIDENCE_CHUNK_WORDS);
    if (!any) continue;
    best |= (int64_t)1 << b;
    for (i = 0; i < nWord; i++)
      s->aMask[i] &= PLANE(s, i / EVIDENCE_CHUNK_WORDS, b, i % EVIDENCE_CHUNK_WORDS);
  }
  return best;
}

/* aMask = the documents whose score is exactly score (> 0); returns how many. */
static int64_t searchExactly(Search *s, int64_t score) {
  size_t nWord = s->nChunk * EVIDENCE_CHUNK_WORDS, i;
  int64_t n = 0;
  int b;
  for (i = 0; i < nWord; i++) {
    uint64_t eq = ~(uint64_t)0;
    for (b = 0; b < s->nPlane; b++) {
      uint64_t x = PLANE(s, i / EVIDENCE_CHUNK_WORDS, b, i % EVIDENCE_CHUNK_WORDS);
      eq &= ((score >> b) & 1) ? x : ~x;
    }
    s->aMask[i] = eq;
    n += __builtin_popcountll(eq);
  }
  return n;
}

/* Appends a hit; room for s->nWant of them was made before. */
static int searchHit(Search *s, const unsigned char *zId, int nId, int64_t score) {
  EvidenceSearchResult *r = s->pOut;
  EvidenceSearchHit *h = &r->aHit[r->nHit];
  h->zRecordId = sqlite3_malloc64((size_t)nId + 1);
  if (h->zRecordId == 0) return SQLITE_NOMEM;
  if (nId) memcpy(h->zRecordId, zId, (size_t)nId);
  h->zRecordId[nId] = 0;
  h->nRecordId = (size_t)nId;
  h->score = score;
  r->nHit++;
  return SQLITE_OK;
}

static int compareHitIds(const void *pa, const void *pb) {
  const EvidenceSearchHit *a = pa, *b = pb;
  size_t n = a->nRecordId < b->nRecordId ? a->nRecordId : b->nRecordId;
  int c = memcmp(a->zRecordId, b->zRecordId, n);
  if (c) return c;
  return a->nRecordId < b->nRecordId ? -1 : a->nRecordId > b->nRecordId;
}

static int isSet(const Search *s, int64_t doc) {
  return doc >= 0 && (uint64_t)doc < s->nChunk * EVIDENCE_CHUNK_DOCS &&
         ((s->aMask[doc >> 6] >> (doc & 63)) & 1);
}

/* The tied documents of aMask, few of them: each looked up, the live ones sorted by
** record id, the first ones kept. */
static int searchTiedFew(Search *s, int64_t score, int64_t nTied) {
  EvidenceSearchResult *r = s->pOut;
  EvidenceSearchResult found = {0, 0, 0};
  size_t nWord = s->nChunk * EVIDENCE_CHUNK_WORDS, i;
  sqlite3_stmt *pStmt = 0;
  int rc = searchStmt(s, S_DOC_BY_NUMBER, &pStmt), nSave = s->nWant;
  EvidenceSearchResult *pSave = s->pOut;
  if (rc != SQLITE_OK) return rc;
  found.aHit = sqlite3_malloc64((size_t)nTied * sizeof(EvidenceSearchHit));
  if (found.aHit == 0) return SQLITE_NOMEM;
  s->pOut = &found;
  s->nWant = (int)nTied;
  for (i = 0; rc == SQLITE_OK && i < nWord; i++) {
    uint64_t m = s->aMask[i];
    while (rc == SQLITE_OK && m) {
      int64_t doc = (int64_t)(i * 64 + (size_t)__builtin_ctzll(m));
      m &= m - 1;
      sqlite3_bind_text64(pStmt, 1, s->zTenant, s->nTenant, SQLITE_STATIC, SQLITE_UTF8);
      sqlite3_bind_text64(pStmt, 2, s->zRevision, s->nRevision, SQLITE_STATIC, SQLITE_UTF8);
      sqlite3_bind_int64(pStmt, 3, doc);
      rc = sqlite3_step(pStmt);
      if (rc == SQLITE_ROW) {
        rc = sqlite3_column_int64(pStmt, 0) > s->now
                 ? searchHit(s, sqlite3_column_text(pStmt, 1), sqlite3_column_bytes(pStmt, 1), score)
                 : SQLITE_OK;
      } else if (rc == SQLITE_DONE) {
        rc = indexOutOfStep(s);
      }
      sqlite3_reset(pStmt);
    }
  }
  s->pOut = pSave;
  s->nWant = nSave;
  if (rc == SQLITE_OK) {
    int k;
    qsort(found.aHit, (size_t)found.nHit, sizeof(EvidenceSearchHit), compareHitIds);
    for (k = 0; k < found.nHit; k++) {
      if (r->nHit < s->nWant) {
        r->aHit[r->nHit++] = found.aHit[k];
        found.aHit[k].zRecordId = 0;
      }
    }
  }
  evidenceSearchResultClear(&found);
  return rc;
}

/* The tied documents of aMask, many of them: the scope's records walked in record_id
** order, the live tied ones kept until the limit is reached. */
static int searchTiedMany(Search *s, int64_t score) {
  sqlite3_stmt *pStmt = 0;
  int rc = searchStmt(s, S_DOCS_IN_ORDER, &pStmt);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text64(pStmt, 1, s->zTenant, s->nTenant, SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_text64(pStmt, 2, s->zRevision, s->nRevision, SQLITE_STATIC, SQLITE_UTF8);
  while (s->pOut->nHit < s->nWant && (rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    if (isSet(s, sqlite3_column_int64(pStmt, 1)) && sqlite3_column_int64(pStmt, 2) > s->now) {
      rc = searchHit(s, sqlite3_column_text(pStmt, 0), sqlite3_column_bytes(pStmt, 0), score);
      if (rc != SQLITE_OK) break;
    }
  }
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int searchRank(Search *s) {
  int64_t score = searchMaxBelow(s, INT64_MAX);
  int rc = SQLITE_OK;
  while (rc == SQLITE_OK && score > 0 && s->pOut->nHit < s->nWant) {
    int64_t nTied = searchExactly(s, score);
    double need = (double)(s->nWant - s->pOut->nHit);
    /* a lookup per tied document, or a walk of about need * docs / nTied records */
    if ((double)nTied * (double)nTied <= need * (double)s->docs) {
      rc = searchTiedFew(s, score, nTied);
    } else {
      rc = searchTiedMany(s, score);
    }
    if (rc == SQLITE_OK) score = searchMaxBelow(s, score);
  }
  return rc;
}

int evidenceSearch(EvidenceSearcher *p, const char *tenant, size_t tenant_len, const char *revision,
                   size_t revision_len, int64_t now, const char *query, size_t query_len, int limit,
                   EvidenceSearchResult *pOut, char **pzErr) {
  EvidenceTokenList tokens;
  sqlite3_stmt *pStmt = 0;
  Search s;
  int64_t nExpired = 0;
  int rc, bFound = 0;
  memset(&s, 0, sizeof(s));
  memset(&tokens, 0, sizeof(tokens));
  memset(pOut, 0, sizeof(*pOut));
  *pzErr = 0;
  s.p = p;
  s.pzErr = pzErr;
  s.now = now;
  s.pOut = pOut;
  s.nWant = limit;
  s.zTenant = tenant;
  s.nTenant = tenant_len;
  s.zRevision = revision;
  s.nRevision = revision_len;
  rc = searchStmt(&s, S_SCOPE, &pStmt);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text64(pStmt, 1, tenant, tenant_len, SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_text64(pStmt, 2, revision, revision_len, SQLITE_STATIC, SQLITE_UTF8);
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    bFound = 1;
    s.scope = sqlite3_column_int64(pStmt, 0);
    s.docs = sqlite3_column_int64(pStmt, 1);
    s.nextDoc = sqlite3_column_int64(pStmt, 2);
    s.maxDoc = sqlite3_column_type(pStmt, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(pStmt, 3);
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_OK || !bFound) return rc; /* no such scope: nothing eligible */
  if (s.maxDoc >= s.nextDoc || s.maxDoc >= EVIDENCE_DOC_NUMBER_LIMIT) return indexOutOfStep(&s);
  rc = searchExpired(&s, &nExpired);
  if (rc != SQLITE_OK) return rc;
  if (nExpired > s.docs) return indexOutOfStep(&s);
  pOut->nEligible = s.docs - nExpired;
  if (pOut->nEligible == 0 || limit < 1) return SQLITE_OK;
  pOut->aHit = sqlite3_malloc64((size_t)limit * sizeof(EvidenceSearchHit));
  rc = pOut->aHit ? evidenceTokenListBuild(&tokens, (const unsigned char *)query, query_len) : SQLITE_NOMEM;
  if (rc == SQLITE_OK && tokens.nToken > 0) {
    s.nChunk = s.maxDoc < 0 ? 0 : (size_t)(s.maxDoc >> EVIDENCE_CHUNK_BITS) + 1;
    while (((size_t)1 << s.nPlane) <= tokens.nToken) s.nPlane++;
    s.aPlane = sqlite3_malloc64(s.nChunk * (size_t)s.nPlane * EVIDENCE_CHUNK_WORDS * sizeof(uint64_t));
    s.aMask = sqlite3_malloc64(s.nChunk * EVIDENCE_CHUNK_WORDS * sizeof(uint64_t));
    if (s.nChunk && (s.aPlane == 0 || s.aMask == 0)) {
      rc = SQLITE_NOMEM;
    } else if (s.nChunk) {
      memset(s.aPlane, 0, s.nChunk * (size_t)s.nPlane * EVIDENCE_CHUNK_WORDS * sizeof(uint64_t));
      rc = searchScore(&s, &tokens);
      if (rc == SQLITE_OK) rc = searchRank(&s);
    }
  }
  sqlite3_free(s.aPlane);
  sqlite3_free(s.aMask);
  evidenceTokenListFree(&tokens);
  if (rc == SQLITE_NOMEM) searchError(&s, rc, "out of memory");
  if (rc != SQLITE_OK) evidenceSearchResultClear(pOut);
  return rc;
}
