/*
** evidence_tokens.c: the token rule, and counting the distinct tokens two texts share.
**
** The rule is defined by pyevidence/tokens.py:
**     re.findall(r"[a-z0-9]+", text.lower())
** Python lowercases with full Unicode rules and only then keeps ASCII letters
** and digits. Reproducing that needs no Unicode tables, because only three
** kinds of code point lowercase to text that holds ASCII letters or digits
** (checked over every code point by tests/test_token_rule_c.py):
**
**   - 'A'..'Z', which lowercase to 'a'..'z';
**   - U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE (bytes C4 B0), which
**     lowercases to "i" + U+0307 COMBINING DOT ABOVE: it adds an 'i' to the
**     token and then ends it, since U+0307 is not a token character;
**   - U+212A KELVIN SIGN (bytes E2 84 AA), which lowercases to 'k' and so
**     continues the token.
**
** Every other byte separates tokens: other ASCII characters, NUL (texts are
** read with their full length, never cut at a NUL), and every byte of every
** other multi-byte character. Neither special sequence can appear inside
** another character's encoding (C4 and E2 are lead bytes), so scanning bytes
** is exact for valid UTF-8.
**
** Invalid UTF-8 (possible from SQL, e.g. CAST(x'ff' AS TEXT)) is read by the
** same byte rule, which gives exactly the tokens Python finds in
** bytes.decode("utf-8", "replace"): a malformed sequence becomes U+FFFD there
** and separators here, and the decoder restarts at the next lead byte, where
** this scanner also sees C4 B0 or E2 84 AA. tests/test_token_rule_c.py checks
** this on random bytes.
*/
#include "evidence_tokens.h"
#include "evidence_sqlite.h"

#include <string.h>

#ifdef EVIDENCE_TEST
int evidenceTestSetsBuilt = 0; /* lets the C tests check that a query is parsed once */
#endif

/* The lowercased ASCII letter or digit for each byte, or 0 for a separator. */
/* clang-format off */
static const unsigned char aTokenChar[256] = {
  /* 0x00 */   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
  /* 0x10 */   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
  /* 0x20 */   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
  /* 0x30 */ '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',   0,   0,   0,   0,   0,   0,
  /* 0x40 */   0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
  /* 0x50 */ 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z',   0,   0,   0,   0,   0,
  /* 0x60 */   0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
  /* 0x70 */ 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z',   0,   0,   0,   0,   0,
  /* 0x80..0xFF: 0, every byte of a non-ASCII character separates */
};
/* clang-format on */

/* How a byte sequence at z[i] extends a token: returns the number of bytes
** consumed (0 when z[i] is a separator) and sets *pc to the token character
** and *pbEnds to whether the token must end after it. */
static size_t tokenStep(const unsigned char *z, size_t n, size_t i, unsigned char *pc, int *pbEnds) {
  unsigned char c = aTokenChar[z[i]];
  *pbEnds = 0;
  if (c) {
    *pc = c;
    return 1;
  }
  if (z[i] == 0xC4 && i + 1 < n && z[i + 1] == 0xB0) {
    *pc = 'i';
    *pbEnds = 1;
    return 2;
  }
  if (z[i] == 0xE2 && i + 2 < n && z[i + 1] == 0x84 && z[i + 2] == 0xAA) {
    *pc = 'k';
    return 3;
  }
  return 0;
}

/* Finds the next token at or after *pi. Copies at most nCap of its characters
** to zBuf and returns its full length (0 at the end of the text). */
static size_t tokenNext(const unsigned char *z, size_t n, size_t *pi, char *zBuf, size_t nCap) {
  size_t i = *pi, nTok = 0;
  unsigned char c;
  int bEnds;
  while (i < n) {
    size_t nStep = tokenStep(z, n, i, &c, &bEnds);
    if (nStep == 0) {
      if (nTok) break;
      i++;
      continue;
    }
    if (nTok < nCap) zBuf[nTok] = (char)c;
    nTok++;
    i += nStep;
    if (bEnds) break;
  }
  *pi = i;
  return nTok;
}

int evidenceTokenize(const unsigned char *z, size_t n,
                     int (*xToken)(void *pArg, const char *zTok, size_t nTok), void *pArg) {
  char *zBuf;
  size_t i = 0, nTok;
  int rc = 0;
  if (n == 0) return 0;
  zBuf = sqlite3_malloc64(n);
  if (zBuf == 0) return SQLITE_NOMEM;
  while (rc == 0 && (nTok = tokenNext(z, n, &i, zBuf, n)) > 0) {
    rc = xToken(pArg, zBuf, nTok);
  }
  sqlite3_free(zBuf);
  return rc;
}

/* ---- The query token set: an open-addressing hash set of distinct tokens. */

typedef struct TokenSlot {
  unsigned hash;  /* hash of the token */
  unsigned stamp; /* the overlap call that last counted this token */
  size_t off;     /* offset of the token in zArena */
  size_t len;     /* token length; 0 marks an empty slot */
} TokenSlot;

struct EvidenceTokenSet {
  TokenSlot *aSlot; /* nMask+1 slots, a power of two, at most half full */
  unsigned nMask;
  int nEntry;     /* distinct tokens held */
  unsigned stamp; /* incremented by every overlap call */
  size_t mxTok;   /* length of the longest token held */
  char *zArena;   /* the tokens' characters, back to back */
  size_t nArena;
  char *zScratch; /* room for one body token of up to mxTok characters */
};

static unsigned tokenHash(const char *z, size_t n) {
  unsigned h = 2166136261u; /* FNV-1a */
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)z[i]) * 16777619u;
  return h;
}

static TokenSlot *tokenFind(EvidenceTokenSet *p, const char *z, size_t n, unsigned h) {
  unsigned i = h & p->nMask;
  for (;;) {
    TokenSlot *pSlot = &p->aSlot[i];
    if (pSlot->len == 0) return pSlot;
    if (pSlot->hash == h && pSlot->len == n && memcmp(p->zArena + pSlot->off, z, n) == 0) {
      return pSlot;
    }
    i = (i + 1) & p->nMask;
  }
}

/* Doubles the slot array, keeping the table at most half full. */
static int tokenSetGrow(EvidenceTokenSet *p) {
  unsigned nOld = p->nMask + 1, j;
  TokenSlot *aOld = p->aSlot;
  TokenSlot *aNew = sqlite3_malloc64((sqlite3_uint64)nOld * 2 * sizeof(TokenSlot));
  if (aNew == 0) return SQLITE_NOMEM;
  memset(aNew, 0, (size_t)nOld * 2 * sizeof(TokenSlot));
  p->aSlot = aNew;
  p->nMask = nOld * 2 - 1;
  for (j = 0; j < nOld; j++) {
    if (aOld[j].len) *tokenFind(p, p->zArena + aOld[j].off, aOld[j].len, aOld[j].hash) = aOld[j];
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
  p->zArena = sqlite3_malloc64(n + 1);
  p->zScratch = sqlite3_malloc64(n + 1);
  if (p->aSlot == 0 || p->zArena == 0 || p->zScratch == 0) goto no_mem;
  memset(p->aSlot, 0, (p->nMask + 1) * sizeof(TokenSlot));
  while ((nTok = tokenNext(z, n, &i, p->zArena + p->nArena, n + 1 - p->nArena)) > 0) {
    const char *zTok = p->zArena + p->nArena;
    unsigned h = tokenHash(zTok, nTok);
    TokenSlot *pSlot = tokenFind(p, zTok, nTok, h);
    if (pSlot->len != 0) continue; /* a repeat */
    pSlot->hash = h;
    pSlot->off = p->nArena;
    pSlot->len = nTok;
    p->nArena += nTok;
    p->nEntry++;
    if (nTok > p->mxTok) p->mxTok = nTok;
    if ((unsigned)p->nEntry * 2 > p->nMask && tokenSetGrow(p) != SQLITE_OK) goto no_mem;
  }
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
  sqlite3_free(p);
}

int evidenceTokenSetSize(const EvidenceTokenSet *p) {
  return p->nEntry;
}

int evidenceTokenSetOverlap(EvidenceTokenSet *p, const unsigned char *z, size_t n) {
  size_t i = 0, nTok;
  int nShared = 0;
  if (p->nEntry == 0) return 0;
  if (++p->stamp == 0) {
    /* The stamp wrapped: forget every mark so none is mistaken for this call's. */
    unsigned j;
    for (j = 0; j <= p->nMask; j++) p->aSlot[j].stamp = 0;
    p->stamp = 1;
  }
  while ((nTok = tokenNext(z, n, &i, p->zScratch, p->mxTok)) > 0) {
    TokenSlot *pSlot;
    if (nTok > p->mxTok) continue; /* longer than every query token */
    pSlot = tokenFind(p, p->zScratch, nTok, tokenHash(p->zScratch, nTok));
    if (pSlot->len != 0 && pSlot->stamp != p->stamp) {
      pSlot->stamp = p->stamp;
      if (++nShared == p->nEntry) break; /* every query token found */
    }
  }
  return nShared;
}
