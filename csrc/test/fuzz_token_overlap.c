/*
** fuzz_token_overlap.c: libFuzzer target for the token rule and the query token set.
**
** The first input byte splits the rest into a query and a body. Checks, for
** every input: the wide scan and the reference scanner count the same; the
** count is symmetric (the distinct tokens two texts share do not depend on
** which is the query); evidenceTokenize() walks both texts. The reference
** scanner itself is proven equal to pyevidence/core/tokens.py by the Python tests.
*/
#include <stdint.h>
#include <stdlib.h>

#include "../evidence_tokens.h"

static int ignoreToken(void *pArg, const char *zTok, size_t nTok) {
  (void)pArg;
  (void)zTok;
  return nTok == 0; /* a token is never empty */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const unsigned char *zQuery, *zBody;
  size_t nQuery, nBody;
  EvidenceTokenSet *pQuery, *pBody;
  if (size < 1) return 0;
  nQuery = (size_t)data[0] * (size - 1) / 255;
  zQuery = data + 1;
  zBody = data + 1 + nQuery;
  nBody = size - 1 - nQuery;
  pQuery = evidenceTokenSetNew(zQuery, nQuery);
  pBody = evidenceTokenSetNew(zBody, nBody);
  if (pQuery && pBody) {
    int nWide = evidenceTokenSetOverlap(pQuery, zBody, nBody);
    if (nWide != evidenceTokenSetOverlapScalar(pQuery, zBody, nBody)) abort();
    if (nWide != evidenceTokenSetOverlap(pBody, zQuery, nQuery)) abort();
    if (evidenceTokenize(zQuery, nQuery, ignoreToken, 0) != 0) abort();
    if (evidenceTokenize(zBody, nBody, ignoreToken, 0) != 0) abort();
  }
  evidenceTokenSetFree(pQuery);
  evidenceTokenSetFree(pBody);
  return 0;
}
