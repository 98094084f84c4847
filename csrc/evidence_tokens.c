/*
** evidence_tokens.c: the token rule, and counting the distinct tokens two texts share.
**
** The rule is defined by pyevidence/core/tokens.py:
**     re.findall(r"[a-z0-9]+", text.lower())
** Python lowercases with full Unicode rules and only then keeps ASCII letters
** and digits. Reproducing that needs no Unicode tables, because only three
** kinds of code point lowercase to text that holds ASCII letters or digits
** (checked over every code point by tests/test_extension.py):
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
** this scanner also sees C4 B0 or E2 84 AA. tests/test_extension.py checks
** this on random bytes.
**
** This file is the reference scanner, byte by byte. evidence_tokenset.c
** matches bodies against a query with a faster, wide scan of the same rule,
** and falls back to this one for texts holding U+0130 or U+212A.
*/
#include "evidence_tokens.h"
#include "evidence_sqlite.h"

#include <string.h>

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

size_t evidenceTokenNext(const unsigned char *z, size_t n, size_t *pi, char *zBuf, size_t nCap) {
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

int evidenceHasSpecial(const unsigned char *z, size_t n) {
  const unsigned char *p = z, *pEnd = z + n;
  while ((p = memchr(p, 0xC4, (size_t)(pEnd - p))) != 0) {
    if (p + 1 < pEnd && p[1] == 0xB0) return 1;
    p++;
  }
  for (p = z; (p = memchr(p, 0xE2, (size_t)(pEnd - p))) != 0; p++) {
    if (p + 2 < pEnd && p[1] == 0x84 && p[2] == 0xAA) return 1;
  }
  return 0;
}

int evidenceTokenize(const unsigned char *z, size_t n,
                     int (*xToken)(void *pArg, const char *zTok, size_t nTok), void *pArg) {
  char *zBuf;
  size_t i = 0, nTok;
  int rc = 0;
  if (n == 0) return 0;
  zBuf = sqlite3_malloc64(n);
  if (zBuf == 0) return SQLITE_NOMEM;
  while (rc == 0 && (nTok = evidenceTokenNext(z, n, &i, zBuf, n)) > 0) {
    rc = xToken(pArg, zBuf, nTok);
  }
  sqlite3_free(zBuf);
  return rc;
}
