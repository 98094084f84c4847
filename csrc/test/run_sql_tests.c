/*
** run_sql_tests.c: runs SQL test files against the pyevidence extension.
**
**   run_sql_tests [--init SCHEMA.sql] FILE.sql ...
**
** Each file is run on a fresh in-memory database, after SCHEMA.sql if given with the extension
** registered statically (the same sources as evidence.so, built with
** -DSQLITE_CORE), so the suite runs as is under AddressSanitizer and valgrind.
**
** The file format, one rule per statement:
**   - a statement that returns columns (a SELECT) must return exactly one row
**     whose only value is the integer 1: write each case as a truth;
**   - a statement that returns no columns (CREATE, INSERT, ...) must succeed;
**   - a statement right after a comment line "-- error: TEXT" must fail with
**     an error message containing TEXT.
**
** It prints each failure with its line number, then "N passed, N failed".
*/
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int evidenceRegister(sqlite3 *db);
extern int evidenceTestSetsBuilt; /* counted by evidence_tokens.c under EVIDENCE_TEST */

static int nPass = 0, nFail = 0;

/* test_sets_built(): how many query token sets were built since the last call. */
static void setsBuiltFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_int(ctx, evidenceTestSetsBuilt);
  evidenceTestSetsBuilt = 0;
}

static void fail(const char *zFile, int iLine, const char *zSql, const char *zWhy) {
  nFail++;
  printf("FAIL %s:%d: %s\n    %s\n", zFile, iLine, zWhy, zSql);
}

/* Runs one statement and checks it against the file's rule. */
static void runCase(sqlite3 *db, const char *zFile, int iLine, const char *zSql, const char *zError) {
  sqlite3_stmt *pStmt = 0;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0);
  int nRow = 0, bOk = 1;
  char zWhy[512];
  if (rc == SQLITE_OK && pStmt == 0) return; /* only comments */
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
      nRow++;
      if (sqlite3_column_count(pStmt) != 1 || sqlite3_column_type(pStmt, 0) != SQLITE_INTEGER ||
          sqlite3_column_int64(pStmt, 0) != 1) {
        bOk = 0;
      }
    }
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (zError) {
    if (rc == SQLITE_OK) {
      snprintf(zWhy, sizeof(zWhy), "expected an error containing \"%s\", but it succeeded", zError);
      fail(zFile, iLine, zSql, zWhy);
    } else if (strstr(sqlite3_errmsg(db), zError) == 0) {
      snprintf(zWhy, sizeof(zWhy), "expected an error containing \"%s\", got \"%s\"", zError,
               sqlite3_errmsg(db));
      fail(zFile, iLine, zSql, zWhy);
    } else {
      nPass++;
    }
  } else if (rc != SQLITE_OK) {
    snprintf(zWhy, sizeof(zWhy), "error: %s", sqlite3_errmsg(db));
    fail(zFile, iLine, zSql, zWhy);
  } else if (pStmt && sqlite3_column_count(pStmt) > 0 && (nRow != 1 || !bOk)) {
    snprintf(zWhy, sizeof(zWhy), "expected one row holding 1, got %d row(s)%s", nRow,
             bOk ? "" : " with other values");
    fail(zFile, iLine, zSql, zWhy);
  } else {
    nPass++;
  }
  sqlite3_finalize(pStmt);
}

static char *readFile(const char *zPath) {
  FILE *f = fopen(zPath, "rb");
  char *z;
  long n;
  if (f == 0) return 0;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  z = malloc((size_t)n + 1);
  if (z && fread(z, 1, (size_t)n, f) != (size_t)n) {
    free(z);
    z = 0;
  }
  if (z) z[n] = 0;
  fclose(f);
  return z;
}

static int runFile(const char *zFile, const char *zInit) {
  char *zText = readFile(zFile), *zLine, *zNext;
  char *zStmt, *zError = 0;
  size_t nStmt = 0;
  int iLine = 0, iStart = 0;
  sqlite3 *db = 0;
  if (zText == 0) {
    fprintf(stderr, "cannot read %s\n", zFile);
    return 1;
  }
  zStmt = malloc(strlen(zText) + 1);
  if (zStmt == 0 || sqlite3_open(":memory:", &db) != SQLITE_OK || evidenceRegister(db) != SQLITE_OK ||
      sqlite3_create_function(db, "test_sets_built", 0, SQLITE_UTF8, 0, setsBuiltFunc, 0, 0)) {
    fprintf(stderr, "cannot set up a database for %s\n", zFile);
    return 1;
  }
  if (zInit) {
    char *zSchema = readFile(zInit), *zErr = 0;
    if (zSchema == 0 || sqlite3_exec(db, zSchema, 0, 0, &zErr) != SQLITE_OK) {
      fprintf(stderr, "cannot run %s: %s\n", zInit, zErr ? zErr : "unreadable");
      return 1;
    }
    free(zSchema);
  }
  zStmt[0] = 0;
  for (zLine = zText; *zLine; zLine = zNext) {
    size_t nLine;
    zNext = strchr(zLine, '\n');
    zNext = zNext ? zNext + 1 : zLine + strlen(zLine);
    nLine = (size_t)(zNext - zLine);
    iLine++;
    if (nStmt == 0 && strncmp(zLine, "-- error: ", 10) == 0) {
      free(zError);
      zError = malloc(nLine);
      memcpy(zError, zLine + 10, nLine - 10);
      zError[nLine - 10] = 0;
      zError[strcspn(zError, "\r\n")] = 0;
      continue;
    }
    if (nStmt == 0 && strspn(zLine, " \t\r\n") == nLine) continue;
    if (nStmt == 0 && strncmp(zLine, "--", 2) == 0) continue;
    if (nStmt == 0) iStart = iLine;
    memcpy(zStmt + nStmt, zLine, nLine);
    nStmt += nLine;
    zStmt[nStmt] = 0;
    if (sqlite3_complete(zStmt)) {
      runCase(db, zFile, iStart, zStmt, zError);
      free(zError);
      zError = 0;
      nStmt = 0;
      zStmt[0] = 0;
    }
  }
  if (nStmt > 0) fail(zFile, iStart, zStmt, "incomplete statement at end of file");
  free(zError);
  free(zStmt);
  free(zText);
  return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *zInit = 0;
  int i, rc = 0, nFile = 0;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--init") == 0 && i + 1 < argc) {
      zInit = argv[++i];
    } else {
      rc |= runFile(argv[i], zInit);
      nFile++;
    }
  }
  if (nFile == 0) {
    fprintf(stderr, "usage: %s [--init SCHEMA.sql] FILE.sql ...\n", argv[0]);
    return 2;
  }
  printf("%d passed, %d failed\n", nPass, nFail);
  return rc || nFail ? 1 : 0;
}
