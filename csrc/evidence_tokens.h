/*
** evidence_tokens.h: the token rule in C, and the query token set.
**
** The canonical rule is pyevidence/tokens.py: lowercase with Python's full
** Unicode rules, then every run of [a-z0-9] is a token. See
** evidence_tokens.c for how this C version reproduces it byte for byte.
*/
#ifndef EVIDENCE_TOKENS_H
#define EVIDENCE_TOKENS_H

#include <stddef.h>

typedef struct EvidenceTokenSet EvidenceTokenSet;

/* Calls xToken(pArg, zTok, nTok) for every token of z[0..n), in order, with the
** token already lowercased. nTok is always > 0. Stops early and returns the
** callback's value when it is non-zero; returns 0 otherwise. */
int evidenceTokenize(const unsigned char *z, size_t n,
                     int (*xToken)(void *pArg, const char *zTok, size_t nTok), void *pArg);

/* Builds the set of distinct tokens of z[0..n). Returns NULL when out of
** memory. Free with evidenceTokenSetFree(). */
EvidenceTokenSet *evidenceTokenSetNew(const unsigned char *z, size_t n);
void evidenceTokenSetFree(void *pSet);

/* Number of distinct tokens of z[0..n) that are in the set. The set keeps
** per-call bookkeeping, so one set must not be used by two threads at once. */
int evidenceTokenSetOverlap(EvidenceTokenSet *pSet, const unsigned char *z, size_t n);

/* Number of distinct tokens in the set. */
int evidenceTokenSetSize(const EvidenceTokenSet *pSet);

#endif /* EVIDENCE_TOKENS_H */
