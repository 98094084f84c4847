/*
** evidence_tokens.h: the token rule in C, and the query token set.
**
** The canonical rule is pyevidence/core/tokens.py: lowercase with Python's full
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

/* The reference scanner: finds the next token at or after *pi, copies at most
** nCap of its (lowercased) characters to zBuf, advances *pi past it and returns
** its full length, or 0 at the end of the text. */
size_t evidenceTokenNext(const unsigned char *z, size_t n, size_t *pi, char *zBuf, size_t nCap);

/* Whether z[0..n) holds U+0130 or U+212A, the non-ASCII code points that
** lowercase to ASCII letters (see evidence_tokens.c). */
int evidenceHasSpecial(const unsigned char *z, size_t n);

/* Builds the set of distinct tokens of z[0..n). Returns NULL when out of
** memory. Free with evidenceTokenSetFree(). */
EvidenceTokenSet *evidenceTokenSetNew(const unsigned char *z, size_t n);
void evidenceTokenSetFree(void *pSet);

/* Number of distinct tokens of z[0..n) that are in the set. The set keeps
** per-call bookkeeping, so one set must not be used by two threads at once.
** Scans wide (SSE2, or 8 bytes at a time elsewhere) unless the text holds a
** code point only the reference scanner handles. */
int evidenceTokenSetOverlap(EvidenceTokenSet *pSet, const unsigned char *z, size_t n);

/* The same count through the reference scanner only: for the fallback and for
** the tests that prove the wide scan equal to it. */
int evidenceTokenSetOverlapScalar(EvidenceTokenSet *pSet, const unsigned char *z, size_t n);

#endif /* EVIDENCE_TOKENS_H */
