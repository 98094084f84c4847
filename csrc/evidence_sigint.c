/*
** evidence_sigint.c: Ctrl-C stops a long call of the store API.
**
** Python, like most hosts, handles SIGINT by noting it and acting when control comes
** back to it, so a put_many of a million records, a scan of a large store or a host's
** runaway query ran to its end before Ctrl-C took effect. While a connection is
** watched, SIGINT also sets a flag that a progress handler on that connection reads
** every PROGRESS_OPS virtual machine instructions: the running statement then fails
** with SQLITE_INTERRUPT, which rolls back the open transaction, and the call returns.
** The signal is passed on to the handler it replaced, so the host still sees it
** (Python raises KeyboardInterrupt as the call returns).
**
** The process has one SIGINT disposition, so one connection is watched at a time, and
** the host watches from the thread that handles its signals. Once installed, the
** handler stays, passing every SIGINT on, so a call costs one sigaction() to see that
** the host has not set another disposition since. If it has, the next watch installs
** again only over the handler it first replaced (Python sets its own again when a program
** goes back to KeyboardInterrupt), and otherwise steps aside: SIG_IGN and SIG_DFL have no
** handler, and another program's handler may not be the host's at all (faulthandler's
** register(SIGINT) only prints the stacks) or may have kept this one to pass SIGINT on
** to (faulthandler's chain=True), where passing it back would recurse until the stack
** overflows. A watch left behind (the host
** interrupted before it could unwatch) is harmless: the next watch moves it, and
** evidence_store_close ends it. Not on Windows, which has no sigaction().
*/
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* sigaction() under -std=c99 */
#endif
#include "evidence_sigint.h"

#ifndef _WIN32
#include <signal.h>
#include <string.h>

/* Tens of microseconds of statement work between two looks at the flag, each a C call. */
#define PROGRESS_OPS 1000

static volatile sig_atomic_t sigintSeen = 0;
static struct sigaction sigintReplaced; /* the host's handler, which every SIGINT reaches */
static int sigintInstalled = 0;         /* sigintReplaced is set, never written again */
static sqlite3 *sigintWatched = 0;      /* the connection the flag interrupts, or 0 */

static void sigintNote(int sig, siginfo_t *info, void *context) {
  sigintSeen = 1;
  if (sigintReplaced.sa_flags & SA_SIGINFO) {
    sigintReplaced.sa_sigaction(sig, info, context);
  } else {
    sigintReplaced.sa_handler(sig);
  }
}

static int sigintProgress(void *unused) {
  (void)unused;
  return sigintSeen;
}

static int isHandler(const struct sigaction *action) {
  if (action->sa_flags & SA_SIGINFO) return action->sa_sigaction != 0;
  return action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

static int isOurs(const struct sigaction *action) {
  return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == sigintNote;
}

static int sameHandler(const struct sigaction *a, const struct sigaction *b) {
  if ((a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO)) return 0;
  if (a->sa_flags & SA_SIGINFO) return a->sa_sigaction == b->sa_sigaction;
  return a->sa_handler == b->sa_handler;
}

int evidenceSigintWatch(sqlite3 *db) {
  struct sigaction current;
  if (sigintWatched != 0) sqlite3_progress_handler(sigintWatched, 0, 0, 0); /* a watch left behind */
  sigintWatched = 0;
  if (sigaction(SIGINT, 0, &current) != 0) return 0;
  if (!isOurs(&current)) { /* the first watch, or the host has set another since */
    struct sigaction mine;
    if (!isHandler(&current)) return 0;
    if (!sigintInstalled) {
      sigintReplaced = current; /* before sigintNote can run, which reads it */
    } else if (!sameHandler(&current, &sigintReplaced)) {
      return 0; /* not the host's handler, which may pass SIGINT on to sigintNote */
    }
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = sigintNote;
    mine.sa_mask = current.sa_mask;
    mine.sa_flags = current.sa_flags | SA_SIGINFO; /* SA_RESETHAND kept: a one-shot stays one */
    if (sigaction(SIGINT, &mine, 0) != 0) return 0;
    sigintInstalled = 1;
  }
  sigintSeen = 0;
  sigintWatched = db;
  sqlite3_progress_handler(db, PROGRESS_OPS, sigintProgress, 0);
  return 1;
}

int evidenceSigintUnwatch(sqlite3 *db) {
  int seen;
  if (db == 0) return 0;
  /* Cleared even when db is not the one watched: another thread's watch may have raced a
  ** watch left behind on it, and a call from any thread must not meet the flag. */
  sqlite3_progress_handler(db, 0, 0, 0);
  if (sigintWatched != db) return 0;
  sigintWatched = 0;
  seen = sigintSeen;
  sigintSeen = 0;
  return seen;
}

#else

int evidenceSigintWatch(sqlite3 *db) {
  (void)db;
  return 0;
}

int evidenceSigintUnwatch(sqlite3 *db) {
  (void)db;
  return 0;
}

#endif
