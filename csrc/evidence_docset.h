/*
** evidence_docset.h: the token index's building blocks (schema.sql, "The token
** index"): docsets, the distinct tokens of a text, and the SQL functions the
** index's triggers call.
*/
#ifndef EVIDENCE_DOCSET_H
#define EVIDENCE_DOCSET_H

#include <stddef.h>
#include <stdint.h>

#include "evidence_sqlite.h"

#define EVIDENCE_CHUNK_BITS 12
#define EVIDENCE_CHUNK_DOCS (1 << EVIDENCE_CHUNK_BITS) /* documents per chunk: 4096 */
#define EVIDENCE_CHUNK_WORDS (EVIDENCE_CHUNK_DOCS / 64)
/* chunks per era, the lead of evidence_index_postings' key (schema.sql: era = chunk >> 3) */
#define EVIDENCE_ERA_CHUNK_BITS 3
/* Document numbers a search covers: below 2^32 (pyevidence/storage/index/docsets.py,
** DOC_NUMBER_LIMIT). A search sizes its counters by the scope's highest number, so a
** larger one, which only a raw write to the index's tables gives, is reported as an index
** out of step instead of an allocation of terabytes. */
#define EVIDENCE_DOC_NUMBER_LIMIT ((int64_t)1 << 32)
#define EVIDENCE_DOCSET_BITSET_BYTES (EVIDENCE_CHUNK_DOCS / 8)            /* 512 */
#define EVIDENCE_DOCSET_MAX_LISTED (EVIDENCE_DOCSET_BITSET_BYTES / 2 - 1) /* 255 */

/* Reads the docset z[0..n) into aWord (bit d of the chunk is aWord[d >> 6] bit d & 63).
** n = 0 is the empty set. Returns 0, or 1 when the bytes are not a canonical docset. */
int evidenceDocsetDecode(const unsigned char *z, size_t n, uint64_t aWord[EVIDENCE_CHUNK_WORDS]);

/* Writes the canonical docset of aWord to zOut (room for EVIDENCE_DOCSET_BITSET_BYTES);
** returns its length (0: the empty set). */
size_t evidenceDocsetEncode(const uint64_t aWord[EVIDENCE_CHUNK_WORDS], unsigned char *zOut);

/* The distinct tokens of a text (the token rule), ascending in byte order. */
typedef struct EvidenceTokenList {
  char *zText;    /* the tokens' characters, back to back */
  size_t nText;   /* bytes used in zText */
  size_t nAlloc;  /* bytes allocated for zText */
  size_t *aStart; /* token i is zText[aStart[i] .. aStart[i] + aLen[i]) */
  size_t *aLen;
  size_t nToken;
  size_t nTokenAlloc;
} EvidenceTokenList;

/* Fills p (emptied first; zero it before the first use) with the distinct tokens of
** z[0..n). Returns SQLITE_OK or SQLITE_NOMEM. */
int evidenceTokenListBuild(EvidenceTokenList *p, const unsigned char *z, size_t n);
void evidenceTokenListFree(EvidenceTokenList *p);

/* Registers evidence_token_list(), evidence_docset_with(), evidence_docset_without()
** and evidence_docset_union(). */
int evidenceDocsetRegister(sqlite3 *db);

#endif /* EVIDENCE_DOCSET_H */
