/*
** evidence_utf8.c: the scalar function evidence_utf8_valid(), the door check of
** schema.sql that keeps text SQLite would store but Python cannot read out.
**
**   SELECT evidence_utf8_valid(CAST('queue lag' AS BLOB));   -- 1
**   SELECT evidence_utf8_valid(x'71ff');                     -- 0: 0xff is never UTF-8
**   SELECT evidence_utf8_valid(x'eda080');                   -- 0: an encoded surrogate
**   SELECT evidence_utf8_valid(NULL);                        -- NULL
**
** evidence_utf8_valid(x) is 1 when the bytes of x are well-formed UTF-8 as
** RFC 3629 defines it (what Python's bytes.decode("utf-8") accepts: no overlong
** forms, no surrogates U+D800..U+DFFF, nothing above U+10FFFF; NUL is a
** character like any other), 0 otherwise, and NULL for NULL. A number counts as
** its text form, which is ASCII.
**
** SQLite does not check the bytes of a TEXT value: CAST(x'ff' AS TEXT) is stored
** as is, and put() could never have written it. The put trigger of schema.sql
** refuses such text before anything is written. It passes each field as a BLOB
** (CAST(... AS BLOB) keeps the bytes), because the Python engine's copy of this
** function (pyevidence/storage/sql_functions.py) receives TEXT only after Python has
** decoded it, and invalid bytes would fail there with a vague message instead.
** tests/test_raw_sql.py proves the two copies equal on random bytes.
*/
#include "evidence_sqlite.h"

/* The length of the well-formed sequence at z (n bytes available), or 0. */
static int utf8SequenceLength(const unsigned char *z, sqlite3_int64 n) {
  unsigned char c = z[0];
  int nLen, i;
  unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    nLen = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    nLen = 3;
    if (c == 0xe0) lo = 0xa0; /* no overlong forms */
    if (c == 0xed) hi = 0x9f; /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    nLen = 4;
    if (c == 0xf0) lo = 0x90; /* no overlong forms */
    if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
  } else {
    return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5..0xff */
  }
  if (n < nLen || z[1] < lo || z[1] > hi) return 0;
  for (i = 2; i < nLen; i++) {
    if (z[i] < 0x80 || z[i] > 0xbf) return 0;
  }
  return nLen;
}

static int utf8Valid(const unsigned char *z, sqlite3_int64 n) {
  while (n > 0) {
    int nLen = utf8SequenceLength(z, n);
    if (nLen == 0) return 0;
    z += nLen;
    n -= nLen;
  }
  return 1;
}

static void utf8ValidFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *z;
  int n;
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* NULL */
  z = sqlite3_value_blob(argv[0]);                        /* the bytes as they are: no conversion of TEXT */
  n = sqlite3_value_bytes(argv[0]);
  if (z == 0 && n > 0) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_int(ctx, utf8Valid(z, n));
}

/* The function on a database that stores its text as UTF-16. There CAST(text AS BLOB) gives
** UTF-16 bytes, which no UTF-8 check can judge: the put trigger refused non-ASCII text and stored a
** lone surrogate whose bytes happened to be valid UTF-8. SQLite calls the copy registered for
** the database's own encoding, so on such a database every check fails with this message, and
** nothing is written (pyevidence/storage/schema.py refuses such a file on open, alike). */
static void utf8ValidUtf16DbFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_error(ctx,
                       "evidence_utf8_valid(): this database stores its text as UTF-16, and pyevidence"
                       " stores text as UTF-8 only",
                       -1);
}

int evidenceUtf8Register(sqlite3 *db) {
  /* INNOCUOUS: the put trigger of schema.sql calls it, also under trusted_schema=OFF. */
  const int flags = SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function(db, "evidence_utf8_valid", 1, SQLITE_UTF8 | flags, 0, utf8ValidFunc, 0, 0);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "evidence_utf8_valid", 1, SQLITE_UTF16LE | flags, 0,
                                 utf8ValidUtf16DbFunc, 0, 0);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "evidence_utf8_valid", 1, SQLITE_UTF16BE | flags, 0,
                                 utf8ValidUtf16DbFunc, 0, 0);
  }
  return rc;
}
