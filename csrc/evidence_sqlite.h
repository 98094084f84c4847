/*
** evidence_sqlite.h: the one way every pyevidence C file reaches SQLite.
**
** Built as a loadable extension, calls go through the sqlite3_api table that
** SQLite hands to sqlite3_evidence_init() (evidence_ext.c owns that pointer).
** Built with -DSQLITE_CORE, as in the native engine that links libsqlite3
** directly, the same names are plain function calls.
*/
#ifndef EVIDENCE_SQLITE_H
#define EVIDENCE_SQLITE_H

#include <sqlite3ext.h>

#ifndef EVIDENCE_EXT_OWNS_API
SQLITE_EXTENSION_INIT3
#endif

#define EVIDENCE_VERSION "0.4.0.dev0"

/* What evidence_eligible tells the program that registered it, per connection. */
typedef struct EvidenceScanStats {
  /* Rows the last evidence_eligible scan to run to its end produced; a
  ** caller sets it to -1 before a statement to see whether one did. */
  sqlite3_int64 nLastScanRows;
} EvidenceScanStats;

/* Registers token_overlap(), evidence_tokens(), evidence_eligible, evidence_sha256(),
** evidence_utf8_valid(), evidence_version(), the token index's evidence_token_list()
** and evidence_docset_*(), and evidence_search on db. With ppStats, *ppStats receives
** the connection's scan statistics, valid until the connection closes. */
int evidenceRegister(sqlite3 *db);
int evidenceRegisterWithStats(sqlite3 *db, EvidenceScanStats **ppStats);

/* The argument rules the table-valued functions share (evidence_eligible.c): the
** name of a value type as messages show it, and the integer a real stands for
** (0) or why it stands for none. */
const char *evidenceTypeName(int eType);
const char *evidenceRealToInt64(double r, sqlite3_int64 *piOut);

/* Checks the first n arguments of zFunc against aWant (SQLITE_TEXT or SQLITE_INTEGER; a
** whole real counts as its integer), reading each integer into aInt[i]. Returns
** SQLITE_OK, or SQLITE_ERROR with *pzErr naming the function and argument (free with
** sqlite3_free), or SQLITE_NOMEM. */
int evidenceCheckArgs(const char *zFunc, sqlite3_value **argv, int n, const int *aWant,
                      const char *const *azName, sqlite3_int64 *aInt, char **pzErr);

/* The most arguments a table-valued function of this extension takes. */
#define EVIDENCE_MAX_ARGS 8

/* Plans the required arguments of a table-valued function: the hidden columns
** iFirst .. iFirst + nArg - 1 (nArg <= EVIDENCE_MAX_ARGS), each an equality.
** Returns SQLITE_CONSTRAINT when an argument's constraint is unusable in this plan
** (it depends on a table joined later), so that SQLite tries another order. Otherwise
** SQLITE_OK, with *pMissing the bits of the arguments that have no equality at all:
**   0     every argument is passed to xFilter, in order, as argv[0 .. nArg - 1]; the
**         caller sets idxNum and the cost of its plan;
**   else  the plan is priced out of any real choice (SQLite also plans the terms of an
**         OR alone, so it is not refused), and the caller puts *pMissing in idxNum, so
**         that xFilter can name the arguments left out if this plan is all there is. */
int evidencePlanArgs(sqlite3_index_info *pInfo, int iFirst, int nArg, int *pMissing);

/* Registration of each part, called by evidenceRegister(). */
int evidenceOverlapRegister(sqlite3 *db);
int evidenceEligibleRegister(sqlite3 *db, EvidenceScanStats **ppStats);
int evidenceHashRegister(sqlite3 *db);
int evidenceUtf8Register(sqlite3 *db);
int evidenceDocsetRegister(sqlite3 *db);
int evidenceSearchRegister(sqlite3 *db);

#endif /* EVIDENCE_SQLITE_H */
