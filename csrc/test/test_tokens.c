/*
** test_tokens.c: the wide scan of evidence_tokenset.c against the reference scanner.
**
**   test_tokens [ROUNDS]
**
** Three bodies in four hold neither U+0130 nor U+212A, so they take the wide
** route; the fourth takes the reference route through the dispatcher.
**
** Draws random queries and bodies from pieces chosen to stress the token rule
** (both cases, digits, separators, NUL, U+0130, U+212A, their truncated forms,
** other non-ASCII bytes, long runs) and checks that evidenceTokenSetOverlap()
** and evidenceTokenSetOverlapScalar() agree. Built twice: with SSE2 and with
** -DEVIDENCE_NO_SIMD, the portable 8-byte path. Prints "N passed, N failed".
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../evidence_tokens.h"

static const char *const azPiece[] = {"a",
                                      "Q",
                                      "z",
                                      "Z",
                                      "0",
                                      "9",
                                      "queue",
                                      "QUEUE",
                                      "lag",
                                      " ",
                                      "-",
                                      "_",
                                      ".",
                                      "\n",
                                      "@",
                                      "[",
                                      "`",
                                      "{",
                                      "/",
                                      ":",
                                      "\x7f",
                                      "\x01",
                                      "é",
                                      "ß",
                                      "\xc4\xb0",
                                      "\xe2\x84\xaa",
                                      "\xc4",
                                      "\xe2",
                                      "\xe2\x84",
                                      "\xff",
                                      "\x80",
                                      "日本",
                                      "k8s",
                                      "KKKKKKKKKKKK",
                                      "abcdefghijklmnopq",
                                      "i",
                                      "k"};
#define N_PIECE (sizeof(azPiece) / sizeof(azPiece[0]))

static uint64_t rngState = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void) { /* xorshift64*: deterministic across runs */
  rngState ^= rngState >> 12;
  rngState ^= rngState << 25;
  rngState ^= rngState >> 27;
  return rngState * 0x2545F4914F6CDD1DULL;
}

static int isSpecial(const char *zPiece) {
  return strcmp(zPiece, "\xc4\xb0") == 0 || strcmp(zPiece, "\xe2\x84\xaa") == 0;
}

/* A random text of up to nMax pieces into z (room for 32 * nMax + 1 bytes); returns its length.
** Without bSpecial it holds no U+0130 or U+212A, so the wide scan handles it. */
static size_t randomText(char *z, int nMax, int bWithNul, int bSpecial) {
  size_t n = 0;
  int i, nPiece = (int)(next() % (uint64_t)(nMax + 1));
  for (i = 0; i < nPiece; i++) {
    if (bWithNul && next() % 17 == 0) {
      z[n++] = 0;
      continue;
    }
    {
      const char *zPiece = azPiece[next() % N_PIECE];
      size_t m = strlen(zPiece);
      if (!bSpecial && isSpecial(zPiece)) zPiece = "K", m = 1;
      memcpy(z + n, zPiece, m);
      n += m;
    }
  }
  return n;
}

int main(int argc, char **argv) {
  static char zQuery[32 * 12 + 1], zBody[32 * 200 + 1];
  long nRound = argc > 1 ? atol(argv[1]) : 200000, r;
  int nPass = 0, nFail = 0;
  for (r = 0; r < nRound; r++) {
    size_t nQuery = randomText(zQuery, 12, 1, 1);
    EvidenceTokenSet *pSet = evidenceTokenSetNew((const unsigned char *)zQuery, nQuery);
    int j;
    if (pSet == 0) return 2;
    for (j = 0; j < 4; j++) {
      size_t nBody = randomText(zBody, j == 3 ? 200 : 40, j % 2, j == 0);
      int nWide = evidenceTokenSetOverlap(pSet, (const unsigned char *)zBody, nBody);
      int nRef = evidenceTokenSetOverlapScalar(pSet, (const unsigned char *)zBody, nBody);
      if (nWide == nRef) {
        nPass++;
      } else if (nFail++ < 10) {
        printf("FAIL round %ld: wide %d, reference %d (query %zu bytes, body %zu bytes)\n", r, nWide, nRef,
               nQuery, nBody);
      }
    }
    evidenceTokenSetFree(pSet);
  }
  printf("%d passed, %d failed\n", nPass, nFail);
  return nFail ? 1 : 0;
}
