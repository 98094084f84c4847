/*
** evidence_tokenset.c: the query token set, and counting how many of its tokens a body holds.
**
** token_overlap() builds one set per statement from the query and then asks,
** for every eligible row, how many distinct set tokens the body holds. That
** second step is the hot loop of every retrieve, so it avoids the reference
** scanner's byte-by-byte walk:
**
**   1. A wide pass marks, in a bitmap, every byte that is an ASCII letter or
**      digit: 16 bytes per step with SSE2 on x86-64, 8 bytes per step with
**      portable word arithmetic elsewhere. Every other byte separates tokens,
**      as the rule says, so token boundaries are the edges of runs of set bits.
**   2. Each run is one token. A table indexed by its first character holds
**      a bit for each length of the query tokens that start with it: most
**      body tokens fail that one test. A token that passes has a 64-bit key,
**      its first 8 characters lowercased (OR 0x20, which leaves digits
**      unchanged); the key and length find it in an open-addressing table,
**      and a token longer than 8 characters compares the rest byte by byte.
**
** Texts that hold U+0130 or U+212A (whose lowercase forms hold ASCII letters)
** go through the reference scanner in evidence_tokens.c instead: the wide pass
** notes their lead bytes (C4, E2) on the way, and only then is the text
** searched for the exact sequences. Both routes give the same count: the C tests compare them on
** random texts, and the Python tests compare both with pyevidence.tokens.
*/
#include <stdint.h>
#include <string.h>

#include "evidence_sqlite.h"
#include "evidence_tokens.h"

#if defined(__SSE2__) && !defined(EVIDENCE_NO_SIMD)
#include <emmintrin.h>
#define EVIDENCE_SSE2 1
#endif

#ifdef EVIDENCE_TEST
int evidenceTestSetsBuilt = 0; /* lets the C tests check that a query is parsed once per statement */
#endif

typedef struct TokenSlot {
  uint64_t key;   /* the first 8 lowercased characters, zero-padded */
  size_t off;     /* the whole token in zArena */
  uint32_t len;   /* token length; 0 marks an empty slot */
  uint32_t stamp; /* the overlap call that last counted this token */
} TokenSlot;

struct EvidenceTokenSet {
  TokenSlot *aSlot; /* nMask+1 slots, a power of two, at most a quarter full */
  uint32_t nMask;
  int nEntry;                /* distinct tokens held */
  uint32_t stamp;            /* incremented by every overlap call */
  size_t mxTok;              /* length of the longest token held */
  uint64_t aLenByFirst[128]; /* [c] = lengthBit() of every token held that starts with c: most
                             ** body tokens fail this one lookup and cost nothing more */
  char *zArena;              /* the tokens' lowercased characters, back to back */
  size_t nArena;
  char *zScratch;  /* one body token for the reference route, mxTok+1 bytes and 8 of slack */
  uint64_t *aBits; /* the bitmap of token bytes of the current body */
  size_t nBitsAlloc;
};

/* The key of a token of n >= 1 ASCII letters and digits, in either case, whose
** buffer has at least 8 readable bytes from z: bytes past the token are masked off. */
static uint64_t tokenKey(const unsigned char *z, size_t n) {
  uint64_t k, keep = n >= 8 ? ~0ULL : (1ULL << (8 * n)) - 1;
  memcpy(&k, z, 8);
  return (k | 0x2020202020202020ULL) & keep;
}

/* The key of a body token that may end fewer than 8 bytes before the body does. */
static uint64_t bodyTokenKey(const unsigned char *z, size_t n, size_t nAvail) {
  unsigned char a[8] = {0};
  if (nAvail >= 8) return tokenKey(z, n);
  memcpy(a, z, nAvail);
  return tokenKey(a, n);
}

/* Bit n (63 for 63 and longer) of a set's mask of token lengths. */
static uint64_t lengthBit(size_t n) {
  return 1ULL << (n < 63 ? n : 63);
}

static uint32_t slotHash(uint64_t key, size_t len) {
  return (uint32_t)(((key ^ len) * 0x9E3779B97F4A7C15ULL) >> 32);
}

/* The slot holding the token z[0..n) (characters in either case), or an empty one. */
static TokenSlot *tokenFind(EvidenceTokenSet *p, const unsigned char *z, size_t n, uint64_t key) {
  uint32_t i = slotHash(key, n) & p->nMask;
  for (;;) {
    TokenSlot *pSlot = &p->aSlot[i];
    if (pSlot->len == 0) return pSlot;
    if (pSlot->key == key && pSlot->len == n) {
      const char *zHeld = p->zArena + pSlot->off;
      size_t j = 8;
      while (j < n && (z[j] | 0x20) == (unsigned char)zHeld[j]) j++;
      if (j >= n) return pSlot;
    }
    i = (i + 1) & p->nMask;
  }
}

/* Doubles the slot array, keeping the table at most a quarter full. */
static int tokenSetGrow(EvidenceTokenSet *p) {
  uint32_t nOld = p->nMask + 1, j;
  TokenSlot *aOld = p->aSlot;
  TokenSlot *aNew = sqlite3_malloc64((sqlite3_uint64)nOld * 2 * sizeof(TokenSlot));
  if (aNew == 0) return SQLITE_NOMEM;
  memset(aNew, 0, (size_t)nOld * 2 * sizeof(TokenSlot));
  p->aSlot = aNew;
  p->nMask = nOld * 2 - 1;
  for (j = 0; j < nOld; j++) {
    if (aOld[j].len) {
      *tokenFind(p, (const unsigned char *)p->zArena + aOld[j].off, aOld[j].len, aOld[j].key) = aOld[j];
    }
  }
  sqlite3_free(aOld);
  return SQLITE_OK;
}

/* The distinct tokens' characters take at most the query's length, so the
** arena is sized once; the slot array grows with the number of tokens. */
EvidenceTokenSet *evidenceTokenSetNew(const unsigned char *z, size_t n) {
  EvidenceTokenSet *p = sqlite3_malloc64(sizeof(*p));
  size_t i = 0, nTok;
  if (p == 0) return 0;
#ifdef EVIDENCE_TEST
  evidenceTestSetsBuilt++;
#endif
  memset(p, 0, sizeof(*p));
  p->nMask = 15;
  p->aSlot = sqlite3_malloc64((p->nMask + 1) * sizeof(TokenSlot));
  p->zArena = sqlite3_malloc64(n + 8); /* 8 bytes of slack for tokenKey() */
  if (p->aSlot == 0 || p->zArena == 0) goto no_mem;
  memset(p->zArena, 0, n + 8);
  memset(p->aSlot, 0, (p->nMask + 1) * sizeof(TokenSlot));
  while ((nTok = evidenceTokenNext(z, n, &i, p->zArena + p->nArena, n - p->nArena)) > 0) {
    const unsigned char *zTok = (const unsigned char *)p->zArena + p->nArena;
    uint64_t key = tokenKey(zTok, nTok);
    TokenSlot *pSlot;
    if (nTok > UINT32_MAX) continue; /* cannot be in any body SQLite can hold */
    pSlot = tokenFind(p, zTok, nTok, key);
    if (pSlot->len != 0) continue; /* a repeat */
    pSlot->key = key;
    pSlot->off = p->nArena;
    pSlot->len = (uint32_t)nTok;
    p->nArena += nTok;
    p->nEntry++;
    p->aLenByFirst[zTok[0] & 0x7F] |= lengthBit(nTok);
    if (nTok > p->mxTok) p->mxTok = nTok;
    if ((uint32_t)p->nEntry * 4 > p->nMask && tokenSetGrow(p) != SQLITE_OK) goto no_mem;
  }
  p->zScratch = sqlite3_malloc64(p->mxTok + 9);
  if (p->zScratch == 0) goto no_mem;
  memset(p->zScratch, 0, p->mxTok + 9);
  return p;

no_mem:
  evidenceTokenSetFree(p);
  return 0;
}

void evidenceTokenSetFree(void *pSet) {
  EvidenceTokenSet *p = pSet;
  if (p == 0) return;
  sqlite3_free(p->aSlot);
  sqlite3_free(p->zArena);
  sqlite3_free(p->zScratch);
  sqlite3_free(p->aBits);
  sqlite3_free(p);
}

/* Starts an overlap call: a fresh stamp, so no token counts as found yet. */
static void newStamp(EvidenceTokenSet *p) {
  if (++p->stamp == 0) {
    /* The stamp wrapped: forget every mark so none is mistaken for this call's. */
    uint32_t j;
    for (j = 0; j <= p->nMask; j++) p->aSlot[j].stamp = 0;
    p->stamp = 1;
  }
}

/* Counts the token z[0..n), whose key is key, if it is in the set and not yet
** counted in this call. */
static int countToken(EvidenceTokenSet *p, const unsigned char *z, size_t n, uint64_t key) {
  TokenSlot *pSlot = tokenFind(p, z, n, key);
  if (pSlot->len == 0 || pSlot->stamp == p->stamp) return 0;
  pSlot->stamp = p->stamp;
  return 1;
}

/* Whether the token z[0..n) could be in the set at all: a token of that first
** character (in either case: held tokens are lowercase) and length is. */
static int mayMatch(const EvidenceTokenSet *p, const unsigned char *z, size_t n) {
  return (p->aLenByFirst[(z[0] | 0x20) & 0x7F] & lengthBit(n)) != 0 && n <= p->mxTok;
}

int evidenceTokenSetOverlapScalar(EvidenceTokenSet *p, const unsigned char *z, size_t n) {
  size_t i = 0, nTok;
  int nShared = 0;
  if (p->nEntry == 0) return 0;
  newStamp(p);
  while ((nTok = evidenceTokenNext(z, n, &i, p->zScratch, p->mxTok + 1)) > 0) {
    const unsigned char *zTok = (const unsigned char *)p->zScratch;
    if (!mayMatch(p, zTok, nTok)) continue;
    nShared += countToken(p, zTok, nTok, tokenKey(zTok, nTok));
    if (nShared == p->nEntry) break; /* every query token found */
  }
  return nShared;
}

/* ---- The wide pass: one bit per byte, set for ASCII letters and digits. */

#ifdef EVIDENCE_SSE2
/* The token-byte mask of 16 bytes: bit i for z[i]. Signed compares leave
** bytes >= 0x80 (negative) out of both ranges. *pLead is set non-zero when a
** byte is C4 or E2, the lead bytes of U+0130 and U+212A. */
static uint32_t tokenMaskStep(const unsigned char *z, uint32_t *pLead) {
  __m128i v = _mm_loadu_si128((const __m128i *)z);
  __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
  __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                                 _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
  __m128i digit =
      _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
  __m128i lead = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xC4)),
                              _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xE2)));
  *pLead |= (uint32_t)_mm_movemask_epi8(lead);
  return (uint32_t)_mm_movemask_epi8(_mm_or_si128(letter, digit));
}
#define MASK_STEP 16
#else
/* The token-byte mask of 8 bytes: bit i for z[i]. Each range test adds a bias
** that carries into a byte's top bit exactly when the byte is in range; the
** top bits are cleared first, so no sum carries into the next byte. *pLead is
** set non-zero when a byte is C4 or E2, the lead bytes of U+0130 and U+212A. */
static uint32_t tokenMaskStep(const unsigned char *z, uint32_t *pLead) {
  const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
  uint64_t w = 0, seven, lower, letter, digit, m;
  int i;
  for (i = 7; i >= 0; i--) {
    w = (w << 8) | z[i]; /* little-endian, on any host */
    *pLead |= (z[i] == 0xC4) | (z[i] == 0xE2);
  }
  seven = w & ~high;
  lower = seven | (0x20 * ones);
  letter = (lower + (0x80 - 'a') * ones) & ~(lower + (0x7F - 'z') * ones);
  digit = (seven + (0x80 - '0') * ones) & ~(seven + (0x7F - '9') * ones);
  m = (letter | digit) & ~w & high;
  return (uint32_t)(((m >> 7) * 0x0102040810204080ULL) >> 56);
}
#define MASK_STEP 8
#endif

/* Fills p->aBits for z[0..n); bits past n stay clear, so every run ends. Sets
** *pbLead when z holds a lead byte of U+0130 or U+212A (maybe of another character). */
static int markTokenBytes(EvidenceTokenSet *p, const unsigned char *z, size_t n, int *pbLead) {
  size_t nWords = n / 64 + 1, i;
  unsigned char aTail[MASK_STEP];
  uint32_t lead = 0;
  if (nWords > p->nBitsAlloc) {
    uint64_t *aNew = sqlite3_realloc64(p->aBits, nWords * sizeof(uint64_t));
    if (aNew == 0) return SQLITE_NOMEM;
    p->aBits = aNew;
    p->nBitsAlloc = nWords;
  }
  memset(p->aBits, 0, nWords * sizeof(uint64_t));
  for (i = 0; i + MASK_STEP <= n; i += MASK_STEP) {
    p->aBits[i / 64] |= (uint64_t)tokenMaskStep(z + i, &lead) << (i % 64);
  }
  if (i < n) {
    memset(aTail, 0, sizeof(aTail)); /* NUL separates */
    memcpy(aTail, z + i, n - i);
    p->aBits[i / 64] |= (uint64_t)tokenMaskStep(aTail, &lead) << (i % 64);
  }
  *pbLead = lead != 0;
  return SQLITE_OK;
}

static int lowestBit(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(x);
#else
  int n = 0;
  while ((x & 1) == 0) x >>= 1, n++;
  return n;
#endif
}

/* The first position at or after i whose bit is bWant; aBits ends with a clear bit. */
static size_t nextBit(const uint64_t *aBits, size_t nWords, size_t i, int bWant) {
  size_t w = i / 64;
  uint64_t x;
  if (w >= nWords) return nWords * 64;
  x = (bWant ? aBits[w] : ~aBits[w]) & (~0ULL << (i % 64));
  while (x == 0) {
    if (++w >= nWords) return nWords * 64;
    x = bWant ? aBits[w] : ~aBits[w];
  }
  return w * 64 + (size_t)lowestBit(x);
}

int evidenceTokenSetOverlap(EvidenceTokenSet *p, const unsigned char *z, size_t n) {
  size_t nWords = n / 64 + 1, w;
  int nShared = 0, bLead = 0;
  if (p->nEntry == 0) return 0;
  /* Out of memory for the bitmap is no reason to fail: the reference route needs none. */
  if (markTokenBytes(p, z, n, &bLead) != SQLITE_OK || (bLead && evidenceHasSpecial(z, n))) {
    return evidenceTokenSetOverlapScalar(p, z, n);
  }
  newStamp(p);
  /* Visit the first byte of every token: a set bit whose left neighbour is clear.
  ** Most tokens are dismissed by their first character alone; only the rest
  ** have their end found (in the same word, or by nextBit() across words). */
  for (w = 0; w < nWords; w++) {
    uint64_t bits = p->aBits[w];
    uint64_t starts = bits & ~((bits << 1) | (w ? p->aBits[w - 1] >> 63 : 0));
    while (starts) {
      int s = lowestBit(starts);
      size_t start = w * 64 + (size_t)s, end;
      uint64_t lengths = p->aLenByFirst[(z[start] | 0x20) & 0x7F], rest;
      starts &= starts - 1;
      if (lengths == 0) continue;
      rest = ~(bits >> s);
      end = (rest != 0 && s + lowestBit(rest) < 64) ? start + (size_t)lowestBit(rest)
                                                    : nextBit(p->aBits, nWords, start, 0);
      if ((lengths & lengthBit(end - start)) == 0 || end - start > p->mxTok) continue;
      nShared += countToken(p, z + start, end - start, bodyTokenKey(z + start, end - start, n - start));
      if (nShared == p->nEntry) return nShared; /* every query token found */
    }
  }
  return nShared;
}
