/*
** evidence_sigint.h: Ctrl-C stops a long call of the store API (evidence_sigint.c).
**
**   if (evidenceSigintWatch(db)) { ... run statements ... evidenceSigintUnwatch(db); }
*/
#ifndef EVIDENCE_SIGINT_H
#define EVIDENCE_SIGINT_H

#include "evidence_sqlite.h"

/* From now on a SIGINT interrupts db's statements and still reaches the handler it
** replaced. Returns 1 if watching, 0 if SIGINT has no handler to chain to (ignored, or
** the default, which ends the process), if its handler is another than the one the first
** watch replaced (set since, by someone other than the host), or where signals are not
** supported. */
int evidenceSigintWatch(sqlite3 *db);

/* Stops watching db (nothing if it is not watched); SIGINT still reaches the host's
** handler. Returns 1 if a SIGINT arrived while db was watched. */
int evidenceSigintUnwatch(sqlite3 *db);

#endif /* EVIDENCE_SIGINT_H */
