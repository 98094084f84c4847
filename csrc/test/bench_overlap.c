/*
** bench_overlap.c: the two routes of evidenceTokenSetOverlap(), timed on the same bodies.
**
**   bench_overlap [BODIES]
**
** Bodies of 60 words from a Zipf-like vocabulary of 20,000 pseudo-words (about
** 400 bytes, some capitalised, some punctuation), queries of 3-6 words, rare
** and common, as in the Python benchmark's corpus. Rounds alternate the
** reference (byte-by-byte) route and the wide route; it prints the median
** ns per body of each and checks that both counted the same.
*/
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../evidence_tokens.h"

#define N_VOCAB 20000
#define N_WORDS 60
#define N_ROUNDS 7

static uint64_t rng = 7;
static uint64_t next(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1DULL;
}

static char azVocab[N_VOCAB][16];
static double aCum[N_VOCAB];

static int zipfWord(void) {
  double x = (double)(next() >> 11) / 9007199254740992.0 * aCum[N_VOCAB - 1];
  int lo = 0, hi = N_VOCAB - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (aCum[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static double nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmpDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  static const char *const azSyl[] = {"ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu",
                                      "na", "pe", "qu", "ri", "so", "tu", "va", "we", "xi", "zo"};
  int nBody = argc > 1 ? atoi(argv[1]) : 20000, i, j, r, q;
  char **azBody = malloc(sizeof(char *) * (size_t)nBody);
  size_t *anBody = malloc(sizeof(size_t) * (size_t)nBody);
  for (i = 0; i < N_VOCAB; i++) {
    int nSyl = 2 + (int)(next() % 3);
    azVocab[i][0] = 0;
    for (j = 0; j < nSyl; j++) strcat(azVocab[i], azSyl[next() % 20]);
    snprintf(azVocab[i] + strlen(azVocab[i]), 4, "%d", i % 7 ? i % 100 : 0); /* keep words distinct-ish */
    aCum[i] = (i ? aCum[i - 1] : 0) + 1.0 / (i + 1);
  }
  for (i = 0; i < nBody; i++) {
    char z[N_WORDS * 20];
    size_t n = 0;
    for (j = 0; j < N_WORDS; j++) {
      const char *w = azVocab[zipfWord()];
      n += (size_t)snprintf(z + n, sizeof(z) - n, "%s%s", j ? (j % 9 ? " " : ", ") : "", w);
      if (j % 7 == 0) z[n - strlen(w)] = (char)(z[n - strlen(w)] - 32); /* capitalise */
    }
    azBody[i] = malloc(n);
    memcpy(azBody[i], z, n);
    anBody[i] = n;
  }
  printf("| query set | reference ns/body | wide ns/body | speed-up |\n|---|---:|---:|---:|\n");
  for (q = 0; q < 2; q++) {
    char zQuery[200] = "";
    double aRef[N_ROUNDS], aWide[N_ROUNDS];
    long nRef = 0, nWide = 0;
    EvidenceTokenSet *pSet;
    for (j = 0; j < 5; j++) {
      int w = q == 0 ? 5000 + (int)(next() % 15000) : zipfWord();
      strcat(zQuery, azVocab[w]);
      strcat(zQuery, " ");
    }
    pSet = evidenceTokenSetNew((const unsigned char *)zQuery, strlen(zQuery));
    for (r = 0; r < N_ROUNDS; r++) {
      double t0 = nowNs(), t1, t2;
      for (i = 0; i < nBody; i++) {
        nRef += evidenceTokenSetOverlapScalar(pSet, (const unsigned char *)azBody[i], anBody[i]);
      }
      t1 = nowNs();
      for (i = 0; i < nBody; i++) {
        nWide += evidenceTokenSetOverlap(pSet, (const unsigned char *)azBody[i], anBody[i]);
      }
      t2 = nowNs();
      aRef[r] = (t1 - t0) / nBody;
      aWide[r] = (t2 - t1) / nBody;
    }
    if (nRef != nWide) {
      printf("the two routes disagree: %ld and %ld\n", nRef, nWide);
      return 1;
    }
    qsort(aRef, N_ROUNDS, sizeof(double), cmpDouble);
    qsort(aWide, N_ROUNDS, sizeof(double), cmpDouble);
    printf("| %s | %.0f | %.0f | %.1fx |\n", q == 0 ? "rare" : "common", aRef[N_ROUNDS / 2],
           aWide[N_ROUNDS / 2], aRef[N_ROUNDS / 2] / aWide[N_ROUNDS / 2]);
    evidenceTokenSetFree(pSet);
  }
  for (i = 0; i < nBody; i++) free(azBody[i]);
  free(azBody);
  free(anBody);
  return 0;
}
