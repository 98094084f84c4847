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

#define EVIDENCE_VERSION "0.1.0"

/* Registers token_overlap(), evidence_eligible and evidence_version() on db. */
int evidenceRegister(sqlite3 *db);

/* Registration of each part, called by evidenceRegister(). */
int evidenceOverlapRegister(sqlite3 *db);
int evidenceEligibleRegister(sqlite3 *db);

#endif /* EVIDENCE_SQLITE_H */
