/*
** fuzz_docset.c: libFuzzer target for docsets and token lists (evidence_docset.c).
**
** The input is read as a docset, and as text. Checks, for every input: a blob that
** decodes re-encodes to the same bytes (the encoding is canonical, so no two blobs
** mean the same set); a decoded set's encoding decodes to the set again; a token
** list is ascending and free of repeats, whatever bytes the text holds.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../evidence_docset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t aWord[EVIDENCE_CHUNK_WORDS], aAgain[EVIDENCE_CHUNK_WORDS];
  unsigned char aOut[EVIDENCE_DOCSET_BITSET_BYTES];
  EvidenceTokenList list;
  size_t i;
  if (evidenceDocsetDecode(data, size, aWord) == 0) {
    size_t n = evidenceDocsetEncode(aWord, aOut);
    if (n != size || (n && memcmp(aOut, data, n) != 0)) abort();
  }
  /* any bits at all: encode, then decode, gives them back */
  memset(aWord, 0, sizeof(aWord));
  memcpy(aWord, data, size < sizeof(aWord) ? size : sizeof(aWord));
  if (evidenceDocsetDecode(aOut, evidenceDocsetEncode(aWord, aOut), aAgain) != 0) abort();
  if (memcmp(aWord, aAgain, sizeof(aWord)) != 0) abort();
  memset(&list, 0, sizeof(list));
  if (evidenceTokenListBuild(&list, data, size) == 0) {
    for (i = 1; i < list.nToken; i++) {
      const char *a = list.zText + list.aStart[i - 1], *b = list.zText + list.aStart[i];
      size_t na = list.aLen[i - 1], nb = list.aLen[i];
      int c = memcmp(a, b, na < nb ? na : nb);
      if (c > 0 || (c == 0 && na >= nb)) abort(); /* strictly ascending: sorted, no repeats */
    }
  }
  evidenceTokenListFree(&list);
  return 0;
}
