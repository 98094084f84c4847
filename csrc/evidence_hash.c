/*
** evidence_hash.c: the scalar function evidence_sha256(), the hash of record versions.
**
**   SELECT evidence_sha256('pyevidence content 2', 'team-a', 42);
**
** evidence_sha256(a, b, ...) is the SHA-256, as 64 lowercase hex digits, of the
** arguments in a length-prefixed encoding, so that no two argument lists share
** an encoding ('ab','c' differs from 'a','bc'). Each argument contributes
**
**   text     't' <decimal byte length> ':' <its UTF-8 bytes>
**   integer  'i' <decimal length of its decimal form> ':' <its decimal form>
**   NULL     'n0:'
**
** Floats and blobs are refused: a version hash must not depend on how a number
** prints. schema.sql builds the content and chain hashes of evidence_versions
** from it; pyevidence/storage/versions.py is the same encoding in Python (the engine
** without this extension registers that one), and tests/test_versions.py
** proves the two equal on random arguments.
**
** SHA-256 itself is FIPS 180-4, written out here so the extension needs no
** crypto library; tests compare it with Python's hashlib.
**
** evidence_hash_bytes(hex) is the 32-byte blob that a value of evidence_sha256()
** stands for: evidence_versions stores its hashes so (schema version 8), and
** lower(hex(blob)) gives the hex back. It takes exactly 64 lowercase hex digits, or
** NULL (NULL); anything else is an error, so no other value becomes a hash.
*/
#include <stdint.h>
#include <string.h>

#include "evidence_hash.h"
#include "evidence_sqlite.h"

typedef EvidenceHash Sha256;

static const uint32_t aRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

static void sha256BlockPortable(Sha256 *s, const unsigned char *p) {
  uint32_t w[64], a, b, c, d, e, f, g, h;
  int i;
  for (i = 0; i < 16; i++) {
    w[i] =
        (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  }
  for (i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
  e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
  for (i = 0; i < 64; i++) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + aRound[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g, g = f, f = e, e = d + t1;
    d = c, c = b, b = a, a = t1 + t2;
  }
  s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
  s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

/* The same compression with the x86 SHA extensions (SHA-NI), where the CPU has
** them: two rounds per instruction, the message schedule four words at a time.
** The state lives in two registers as (A, B, E, F) and (C, D, G, H), the order
** the round instruction takes. Chosen once per process; EVIDENCE_NO_SIMD builds
** the portable code only (make test-c runs the SQL tests both ways). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(EVIDENCE_NO_SIMD)
#include <cpuid.h>
#include <immintrin.h>

static int bShaNi; /* set before any hashing, by sha256Detect */

__attribute__((constructor)) static void sha256Detect(void) {
  unsigned a, b, c, d;
  int bSse41 = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1);
  bShaNi = bSse41 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}

__attribute__((target("sha,sse4.1"))) static void sha256BlockNi(Sha256 *s, const unsigned char *p) {
  const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i abcd = _mm_loadu_si128((const __m128i *)&s->h[0]);
  __m128i efgh = _mm_loadu_si128((const __m128i *)&s->h[4]);
  __m128i w[4], abef, cdgh, abefStart, cdghStart;
  int g;
  abcd = _mm_shuffle_epi32(abcd, 0xB1);     /* C D A B, low lane first */
  efgh = _mm_shuffle_epi32(efgh, 0x1B);     /* H G F E */
  abef = _mm_alignr_epi8(abcd, efgh, 8);    /* F E B A: A in the high lane */
  cdgh = _mm_blend_epi16(efgh, abcd, 0xF0); /* H G D C */
  abefStart = abef, cdghStart = cdgh;
  for (g = 0; g < 16; g++) {
    __m128i *pW = &w[g & 3], wk;
    if (g < 4) {
      *pW = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), byteSwap);
    } else {
      /* W[t..t+3] from W[t-16..t-13] (this slot), W[t-15..], W[t-7..t-4] and W[t-4..t-1] */
      __m128i prev = w[(g - 1) & 3];
      __m128i t =
          _mm_add_epi32(_mm_sha256msg1_epu32(*pW, w[(g - 3) & 3]), _mm_alignr_epi8(prev, w[(g - 2) & 3], 4));
      *pW = _mm_sha256msg2_epu32(t, prev);
    }
    wk = _mm_add_epi32(*pW, _mm_loadu_si128((const __m128i *)&aRound[4 * g]));
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
  }
  abef = _mm_add_epi32(abef, abefStart);
  cdgh = _mm_add_epi32(cdgh, cdghStart);
  abef = _mm_shuffle_epi32(abef, 0x1B);                                     /* A B E F, low lane first */
  cdgh = _mm_shuffle_epi32(cdgh, 0xB1);                                     /* G H C D */
  _mm_storeu_si128((__m128i *)&s->h[0], _mm_blend_epi16(abef, cdgh, 0xF0)); /* A B C D */
  _mm_storeu_si128((__m128i *)&s->h[4], _mm_alignr_epi8(cdgh, abef, 8));    /* E F G H */
}

static void sha256Block(Sha256 *s, const unsigned char *p) {
  if (bShaNi) {
    sha256BlockNi(s, p);
  } else {
    sha256BlockPortable(s, p);
  }
}
#else
static void sha256Block(Sha256 *s, const unsigned char *p) {
  sha256BlockPortable(s, p);
}
#endif

static void sha256Init(Sha256 *s) {
  static const uint32_t aInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, aInit, sizeof(aInit));
  s->nBytes = 0;
  s->nBuf = 0;
}

static void sha256Update(Sha256 *s, const void *pData, size_t n) {
  const unsigned char *p = pData;
  s->nBytes += n;
  while (n > 0) {
    size_t nTake = 64 - s->nBuf < n ? 64 - s->nBuf : n;
    if (s->nBuf == 0 && n >= 64) {
      sha256Block(s, p); /* whole blocks straight from the input */
      nTake = 64;
    } else {
      memcpy(s->buf + s->nBuf, p, nTake);
      s->nBuf += nTake;
      if (s->nBuf == 64) {
        sha256Block(s, s->buf);
        s->nBuf = 0;
      }
    }
    p += nTake;
    n -= nTake;
  }
}

/* Pads, finishes and writes the digest as 64 hex digits and a NUL into zHex. */
static void sha256Hex(Sha256 *s, char zHex[65]) {
  static const char aDigit[] = "0123456789abcdef";
  unsigned char aLen[8];
  uint64_t nBits = s->nBytes * 8;
  int i;
  for (i = 0; i < 8; i++) aLen[i] = (unsigned char)(nBits >> (56 - 8 * i));
  sha256Update(s, "\x80", 1);
  while (s->nBuf != 56) sha256Update(s, "", 1); /* "" supplies its NUL: one zero byte */
  sha256Update(s, aLen, 8);
  for (i = 0; i < 32; i++) {
    unsigned char byte = (unsigned char)(s->h[i / 4] >> (24 - 8 * (i % 4)));
    zHex[2 * i] = aDigit[byte >> 4];
    zHex[2 * i + 1] = aDigit[byte & 15];
  }
  zHex[64] = 0;
}

/* Feeds one argument in the encoding described at the top of this file. */
static void sha256Field(Sha256 *s, char cTag, const void *pData, size_t n) {
  char zPrefix[32];
  sqlite3_snprintf((int)sizeof(zPrefix), zPrefix, "%c%llu:", cTag, (unsigned long long)n);
  sha256Update(s, zPrefix, strlen(zPrefix));
  sha256Update(s, pData, n);
}

void evidenceHashInit(EvidenceHash *s) {
  sha256Init(s);
}

void evidenceHashText(EvidenceHash *s, const char *z, size_t n) {
  sha256Field(s, 't', z, n);
}

void evidenceHashInt(EvidenceHash *s, int64_t i) {
  char zNum[32];
  sqlite3_snprintf((int)sizeof(zNum), zNum, "%lld", (long long)i);
  sha256Field(s, 'i', zNum, strlen(zNum));
}

void evidenceHashFinish(EvidenceHash *s, char zHex[65]) {
  sha256Hex(s, zHex);
}

static void sha256Func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Sha256 s;
  char zHex[65];
  int i;
  sha256Init(&s);
  for (i = 0; i < argc; i++) {
    switch (sqlite3_value_type(argv[i])) {
      case SQLITE_TEXT: {
        const unsigned char *z = sqlite3_value_text(argv[i]);
        if (z == 0) {
          sqlite3_result_error_nomem(ctx);
          return;
        }
        sha256Field(&s, 't', z, (size_t)sqlite3_value_bytes(argv[i]));
        break;
      }
      case SQLITE_INTEGER: evidenceHashInt(&s, sqlite3_value_int64(argv[i])); break;
      case SQLITE_NULL: sha256Field(&s, 'n', "", 0); break;
      default: {
        char *zMsg =
            sqlite3_mprintf("evidence_sha256(): argument %d is a %s; it takes only text, integers and NULL",
                            i + 1, sqlite3_value_type(argv[i]) == SQLITE_FLOAT ? "float" : "blob");
        if (zMsg == 0) {
          sqlite3_result_error_nomem(ctx);
        } else {
          sqlite3_result_error(ctx, zMsg, -1);
          sqlite3_free(zMsg);
        }
        return;
      }
    }
  }
  sha256Hex(&s, zHex);
  sqlite3_result_text(ctx, zHex, 64, SQLITE_TRANSIENT);
}

int evidenceHashBytes(const char *zHex, size_t nHex, unsigned char aOut[32]) {
  size_t i;
  if (nHex != 64) return 0;
  for (i = 0; i < 64; i++) {
    char c = zHex[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return 0;
    if (i % 2 == 0) {
      aOut[i / 2] = (unsigned char)(v << 4);
    } else {
      aOut[i / 2] |= (unsigned char)v;
    }
  }
  return 1;
}

static void hashBytesFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned char aOut[32];
  int eType = sqlite3_value_type(argv[0]);
  (void)argc;
  if (eType == SQLITE_NULL) return; /* NULL in, NULL out */
  if (eType == SQLITE_TEXT) {
    const char *z = (const char *)sqlite3_value_text(argv[0]);
    if (z == 0) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    if (evidenceHashBytes(z, (size_t)sqlite3_value_bytes(argv[0]), aOut)) {
      sqlite3_result_blob(ctx, aOut, 32, SQLITE_TRANSIENT);
      return;
    }
  }
  sqlite3_result_error(
      ctx, "evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())", -1);
}

int evidenceHashRegister(sqlite3 *db) {
  /* INNOCUOUS: the triggers of schema.sql call it, also under trusted_schema=OFF. */
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function(db, "evidence_sha256", -1, flags, 0, sha256Func, 0, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "evidence_hash_bytes", 1, flags, 0, hashBytesFunc, 0, 0);
  return rc;
}
