/*
** evidence_crash.h: a node that crashes says where, in its own log.
**
** A node is a long-running process built on libdqlite and libraft; a fault in
** any of them otherwise ends it with nothing but "killed by signal 11". With
** the handler installed, a fatal signal first writes the node's id, the signal
** and a stack trace (glibc's backtrace) to stderr, then ends the process the
** way the signal would have (status and core dump unchanged).
*/
#ifndef EVIDENCE_CRASH_H
#define EVIDENCE_CRASH_H

/* Installs the handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT, for
** node `id`. Call once, before the node starts its threads. Does nothing in a
** build with AddressSanitizer, which reports these faults itself. */
void evidenceCrashReportInstall(unsigned long long id);

#endif /* EVIDENCE_CRASH_H */
