/*
** evidence_hash.h: evidence_sha256()'s field encoding for C callers.
**
** The batch writer (evidence_batch.c) hashes versions in C with the same
** encoding the SQL function uses (see evidence_hash.c), so its hashes are the
** function's, byte for byte:
**
**   EvidenceHash h;
**   char zHex[65];
**   evidenceHashInit(&h);
**   evidenceHashText(&h, "pyevidence content 2", 20);
**   evidenceHashInt(&h, 42);
**   evidenceHashFinish(&h, zHex);   // 64 lowercase hex digits and a NUL
*/
#ifndef EVIDENCE_HASH_H
#define EVIDENCE_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct EvidenceHash {
  uint32_t h[8];
  uint64_t nBytes;       /* message bytes so far */
  unsigned char buf[64]; /* the block being filled */
  size_t nBuf;
} EvidenceHash;

void evidenceHashInit(EvidenceHash *s);
/* One text field: 't' <byte length> ':' <bytes>. */
void evidenceHashText(EvidenceHash *s, const char *z, size_t n);
/* One integer field: 'i' <length of its decimal form> ':' <decimal form>. */
void evidenceHashInt(EvidenceHash *s, int64_t i);
/* Pads, finishes and writes the digest as 64 hex digits and a NUL. */
void evidenceHashFinish(EvidenceHash *s, char zHex[65]);
/* The 32 bytes that nHex lowercase hex digits stand for, into aOut: 1, or 0 when
** they are not exactly 64 such digits (evidence_hash_bytes(), the stored form). */
int evidenceHashBytes(const char *zHex, size_t nHex, unsigned char aOut[32]);

#endif /* EVIDENCE_HASH_H */
