/*
** evidence_docset.c: docsets and token lists, the token index's building blocks.
**
** A docset is the set of document numbers (0..4095) of one chunk of a scope
** that hold one token, stored in evidence_index_postings.docs. Its encoding
** depends on the set only, so every writer holding the same set writes the same
** bytes: 1 to 255 numbers are that many little-endian uint16, ascending; 256 or
** more are a 512-byte bitset (bit d in byte d >> 3, at bit d & 7). The Python
** copy is pyevidence/storage/index/docsets.py; tests/test_index_docsets.py proves
** the two equal byte for byte.
**
** The SQL functions here are what schema.sql's index triggers call, so a raw-SQL
** write keeps the index in step: evidence_token_list(text) is the text's
** distinct tokens as a JSON array (tokens are [a-z0-9]+, so no escaping), read
** with json_each; evidence_docset_with/without/union edit docsets.
*/
#include "evidence_docset.h"

#include <stdlib.h>
#include <string.h>

#include "evidence_tokens.h"

static int popcount64(uint64_t x) {
  return __builtin_popcountll(x);
}

int evidenceDocsetDecode(const unsigned char *z, size_t n, uint64_t aWord[EVIDENCE_CHUNK_WORDS]) {
  size_t i;
  memset(aWord, 0, EVIDENCE_CHUNK_WORDS * sizeof(uint64_t));
  if (n == EVIDENCE_DOCSET_BITSET_BYTES) {
    int nSet = 0;
    for (i = 0; i < EVIDENCE_CHUNK_WORDS; i++) {
      uint64_t w = 0;
      int b;
      for (b = 7; b >= 0; b--) w = (w << 8) | z[i * 8 + (size_t)b]; /* little-endian, on any host */
      aWord[i] = w;
      nSet += popcount64(w);
    }
    return nSet <= EVIDENCE_DOCSET_MAX_LISTED; /* a set this small is listed, never a bitset */
  }
  if (n % 2 || n > 2 * EVIDENCE_DOCSET_MAX_LISTED) return 1;
  {
    int previous = -1;
    for (i = 0; i < n; i += 2) {
      int d = z[i] | (z[i + 1] << 8);
      if (d <= previous || d >= EVIDENCE_CHUNK_DOCS) return 1;
      aWord[d >> 6] |= (uint64_t)1 << (d & 63);
      previous = d;
    }
  }
  return 0;
}

size_t evidenceDocsetEncode(const uint64_t aWord[EVIDENCE_CHUNK_WORDS], unsigned char *zOut) {
  size_t i, n = 0;
  int nSet = 0;
  /* Most docsets a batch writes are sparse: an empty word costs no call (without
  ** -mpopcnt, __builtin_popcountll is one). */
  for (i = 0; i < EVIDENCE_CHUNK_WORDS; i++) {
    if (aWord[i]) nSet += popcount64(aWord[i]);
  }
  if (nSet > EVIDENCE_DOCSET_MAX_LISTED) {
    for (i = 0; i < EVIDENCE_CHUNK_WORDS; i++) {
      int b;
      for (b = 0; b < 8; b++) zOut[i * 8 + (size_t)b] = (unsigned char)(aWord[i] >> (8 * b));
    }
    return EVIDENCE_DOCSET_BITSET_BYTES;
  }
  for (i = 0; i < EVIDENCE_CHUNK_WORDS; i++) {
    uint64_t w = aWord[i];
    while (w) {
      unsigned d = (unsigned)(i * 64) + (unsigned)__builtin_ctzll(w);
      zOut[n++] = (unsigned char)(d & 0xff);
      zOut[n++] = (unsigned char)(d >> 8);
      w &= w - 1;
    }
  }
  return n;
}

/* ---- token lists ---- */

static int tokenListAppend(void *pArg, const char *zTok, size_t nTok) {
  EvidenceTokenList *p = pArg;
  if (p->nText + nTok > p->nAlloc) {
    size_t nNew = p->nAlloc ? p->nAlloc * 2 : 1024;
    char *zNew;
    while (nNew < p->nText + nTok) nNew *= 2;
    zNew = sqlite3_realloc64(p->zText, nNew);
    if (zNew == 0) return SQLITE_NOMEM;
    p->zText = zNew;
    p->nAlloc = nNew;
  }
  if (p->nToken == p->nTokenAlloc) {
    size_t nNew = p->nTokenAlloc ? p->nTokenAlloc * 2 : 64;
    size_t *aStart = sqlite3_realloc64(p->aStart, nNew * sizeof(size_t));
    size_t *aLen;
    if (aStart == 0) return SQLITE_NOMEM;
    p->aStart = aStart;
    aLen = sqlite3_realloc64(p->aLen, nNew * sizeof(size_t));
    if (aLen == 0) return SQLITE_NOMEM;
    p->aLen = aLen;
    p->nTokenAlloc = nNew;
  }
  memcpy(p->zText + p->nText, zTok, nTok);
  p->aStart[p->nToken] = p->nText;
  p->aLen[p->nToken] = nTok;
  p->nText += nTok;
  p->nToken++;
  return SQLITE_OK;
}

static int compareBytes(const char *a, size_t na, const char *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c != 0) return c;
  return na < nb ? -1 : na > nb;
}

/* The first 8 bytes of a token as a big-endian integer, zero-padded. Two keys compare
** as memcmp() compares those bytes, and no token byte is 0 (tokens are ASCII letters
** and digits), so a token 8 bytes long or shorter that is a prefix of another has the
** smaller key or, at 8 bytes, an equal one. */
static uint64_t tokenSortKey(const char *z, size_t n) {
  uint64_t k = 0;
  size_t i;
  for (i = 0; i < 8; i++) k = (k << 8) | (i < n ? (unsigned char)z[i] : 0);
  return k;
}

/* Orders tokens a and b of p by their bytes, as compareBytes() does: the keys decide
** unless they are equal, and then only tokens longer than 8 bytes compare further. */
static int compareTokens(const EvidenceTokenList *p, const uint64_t *aKey, size_t a, size_t b) {
  size_t na = p->aLen[a], nb = p->aLen[b];
  if (aKey[a] != aKey[b]) return aKey[a] < aKey[b] ? -1 : 1;
  if (na <= 8 || nb <= 8) return na < nb ? -1 : na > nb;
  return compareBytes(p->zText + p->aStart[a] + 8, na - 8, p->zText + p->aStart[b] + 8, nb - 8);
}

/* Sorts the token indexes aIdx[0..n) by token bytes: a bottom-up merge sort through
** aTmp (qsort has no context argument in C11, and a long body has many tokens). */
static void tokenListSort(const EvidenceTokenList *p, const uint64_t *aKey, size_t *aIdx, size_t *aTmp,
                          size_t n) {
  size_t width, i;
  for (width = 1; width < n; width *= 2) {
    for (i = 0; i < n; i += 2 * width) {
      size_t lo = i, mid = i + width < n ? i + width : n, hi = i + 2 * width < n ? i + 2 * width : n;
      size_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi) {
        aTmp[k++] = compareTokens(p, aKey, aIdx[a], aIdx[b]) <= 0 ? aIdx[a++] : aIdx[b++];
      }
      while (a < mid) aTmp[k++] = aIdx[a++];
      while (b < hi) aTmp[k++] = aIdx[b++];
    }
    memcpy(aIdx, aTmp, n * sizeof(size_t));
  }
}

int evidenceTokenListBuild(EvidenceTokenList *p, const unsigned char *z, size_t n) {
  size_t *aIdx, *aStart, *aLen, i, nOut = 0, last = 0;
  uint64_t *aKey;
  int rc;
  p->nText = 0;
  p->nToken = 0;
  rc = evidenceTokenize(z, n, tokenListAppend, p);
  if (rc != SQLITE_OK) return rc;
  if (p->nToken < 2) return SQLITE_OK;
  /* in 64 bits: where size_t has 32, a body of a billion bytes could overflow it */
  aIdx = sqlite3_malloc64((sqlite3_uint64)p->nToken * (3 * sizeof(size_t) + sizeof(uint64_t)));
  if (aIdx == 0) return SQLITE_NOMEM;
  aStart = aIdx + p->nToken; /* first the merge sort's scratch, then the distinct tokens */
  aLen = aStart + p->nToken;
  aKey = (uint64_t *)(aLen + p->nToken);
  for (i = 0; i < p->nToken; i++) {
    aIdx[i] = i;
    aKey[i] = tokenSortKey(p->zText + p->aStart[i], p->aLen[i]);
  }
  tokenListSort(p, aKey, aIdx, aStart, p->nToken);
  for (i = 0; i < p->nToken; i++) {
    size_t k = aIdx[i];
    if (nOut > 0 && compareTokens(p, aKey, last, k) == 0) continue; /* a repeat of the token before */
    aStart[nOut] = p->aStart[k];
    aLen[nOut] = p->aLen[k];
    nOut++;
    last = k;
  }
  memcpy(p->aStart, aStart, nOut * sizeof(size_t));
  memcpy(p->aLen, aLen, nOut * sizeof(size_t));
  p->nToken = nOut;
  sqlite3_free(aIdx);
  return SQLITE_OK;
}

void evidenceTokenListFree(EvidenceTokenList *p) {
  sqlite3_free(p->zText);
  sqlite3_free(p->aStart);
  sqlite3_free(p->aLen);
  memset(p, 0, sizeof(*p));
}

/* ---- SQL functions ---- */

static void tokenListFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  EvidenceTokenList list;
  sqlite3_str *pOut;
  size_t i;
  int rc;
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
    sqlite3_result_error(ctx, "evidence_token_list() takes text", -1);
    return;
  }
  memset(&list, 0, sizeof(list));
  rc = evidenceTokenListBuild(&list, sqlite3_value_text(argv[0]), (size_t)sqlite3_value_bytes(argv[0]));
  if (rc != SQLITE_OK) {
    evidenceTokenListFree(&list);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  pOut = sqlite3_str_new(0);
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i < list.nToken; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    sqlite3_str_appendchar(pOut, 1, '"');
    sqlite3_str_append(pOut, list.zText + list.aStart[i], (int)list.aLen[i]);
    sqlite3_str_appendchar(pOut, 1, '"');
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  evidenceTokenListFree(&list);
  if (sqlite3_str_errcode(pOut) != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pOut));
    sqlite3_result_error_nomem(ctx);
    return;
  }
  {
    int n = sqlite3_str_length(pOut);
    sqlite3_result_text(ctx, sqlite3_str_finish(pOut), n, sqlite3_free);
  }
}

/* Reads argument argv[i], a docset or NULL, into aWord; 0 on success, else an error is set. */
static int docsetArg(sqlite3_context *ctx, sqlite3_value *pVal, uint64_t aWord[EVIDENCE_CHUNK_WORDS],
                     const char *zFunc) {
  int eType = sqlite3_value_type(pVal);
  if (eType == SQLITE_NULL) {
    memset(aWord, 0, EVIDENCE_CHUNK_WORDS * sizeof(uint64_t));
    return 0;
  }
  if (eType != SQLITE_BLOB ||
      evidenceDocsetDecode(sqlite3_value_blob(pVal), (size_t)sqlite3_value_bytes(pVal), aWord)) {
    char *zMsg = sqlite3_mprintf("%s(): not a docset (see schema.sql, \"The token index\")", zFunc);
    sqlite3_result_error(ctx, zMsg ? zMsg : "not a docset", -1);
    sqlite3_free(zMsg);
    return 1;
  }
  return 0;
}

/* Reads a document number 0..4095; 0 on success, else an error is set. */
static int docNumberArg(sqlite3_context *ctx, sqlite3_value *pVal, int *pDoc, const char *zFunc) {
  sqlite3_int64 d = sqlite3_value_int64(pVal);
  if (sqlite3_value_type(pVal) != SQLITE_INTEGER || d < 0 || d >= EVIDENCE_CHUNK_DOCS) {
    char *zMsg = sqlite3_mprintf("%s(): a document number in a chunk is an integer from 0 to 4095", zFunc);
    sqlite3_result_error(ctx, zMsg ? zMsg : "bad document number", -1);
    sqlite3_free(zMsg);
    return 1;
  }
  *pDoc = (int)d;
  return 0;
}

static void docsetResult(sqlite3_context *ctx, const uint64_t aWord[EVIDENCE_CHUNK_WORDS]) {
  unsigned char aOut[EVIDENCE_DOCSET_BITSET_BYTES];
  size_t n = evidenceDocsetEncode(aWord, aOut);
  sqlite3_result_blob(ctx, aOut, (int)n, SQLITE_TRANSIENT);
}

/* evidence_docset_with(docs, n) and evidence_docset_without(docs, n); user data: 1 for with. */
static void docsetEditFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  uint64_t aWord[EVIDENCE_CHUNK_WORDS];
  int bWith = sqlite3_user_data(ctx) != 0, d;
  const char *zFunc = bWith ? "evidence_docset_with" : "evidence_docset_without";
  (void)argc;
  if (docsetArg(ctx, argv[0], aWord, zFunc) || docNumberArg(ctx, argv[1], &d, zFunc)) return;
  if (bWith) {
    aWord[d >> 6] |= (uint64_t)1 << (d & 63);
  } else {
    aWord[d >> 6] &= ~((uint64_t)1 << (d & 63));
  }
  docsetResult(ctx, aWord);
}

static void docsetUnionFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  uint64_t aA[EVIDENCE_CHUNK_WORDS], aB[EVIDENCE_CHUNK_WORDS];
  int i;
  (void)argc;
  if (docsetArg(ctx, argv[0], aA, "evidence_docset_union") ||
      docsetArg(ctx, argv[1], aB, "evidence_docset_union"))
    return;
  for (i = 0; i < EVIDENCE_CHUNK_WORDS; i++) aA[i] |= aB[i];
  docsetResult(ctx, aA);
}

int evidenceDocsetRegister(sqlite3 *db) {
  /* INNOCUOUS: schema.sql's triggers call them, also under trusted_schema=OFF; they
  ** compute a value from their arguments and touch nothing else. */
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  static int bWith = 1;
  int rc = sqlite3_create_function(db, "evidence_token_list", 1, flags, 0, tokenListFunc, 0, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "evidence_docset_with", 2, flags, &bWith, docsetEditFunc, 0, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "evidence_docset_without", 2, flags, 0, docsetEditFunc, 0, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "evidence_docset_union", 2, flags, 0, docsetUnionFunc, 0, 0);
  return rc;
}
