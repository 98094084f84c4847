/*
** evidence_crash.c: the stack of a crashing node, written to its log
** (evidence_crash.h).
**
** Only async-signal-safe calls run in the handler: write(), signal(),
** raise(), and backtrace_symbols_fd(), which writes without allocating.
** backtrace() itself may allocate the first time it runs (it loads libgcc's
** unwinder), so it runs once at install time, when that is still safe.
*/
#include "evidence_crash.h"

#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define EVIDENCE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EVIDENCE_ASAN 1
#endif
#endif

#define MAX_FRAMES 64

static const int aFatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

/* Formatted at install time: the handler cannot call snprintf(). */
static char zHeader[96];
static size_t nHeader;

static void writeAll(const char *z, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, z, n);
    if (w <= 0) return;
    z += w;
    n -= (size_t)w;
  }
}

/* "0x" and the address in hex, into z (at least 19 bytes); returns its length. */
static size_t formatAddress(char *z, uintptr_t a) {
  char aDigit[16];
  size_t n = 0, i = 0;
  do {
    aDigit[n++] = "0123456789abcdef"[a & 15];
    a >>= 4;
  } while (a != 0);
  z[i++] = '0';
  z[i++] = 'x';
  while (n > 0) z[i++] = aDigit[--n];
  return i;
}

static void onFatalSignal(int sig, siginfo_t *pInfo, void *pContext) {
  void *aFrame[MAX_FRAMES];
  char zAddress[24];
  const char *zName = sig == SIGSEGV  ? "SIGSEGV"
                      : sig == SIGBUS ? "SIGBUS"
                      : sig == SIGILL ? "SIGILL"
                      : sig == SIGFPE ? "SIGFPE"
                                      : "SIGABRT";
  int nFrame;
  (void)pContext;
  writeAll(zHeader, nHeader);
  writeAll(zName, strlen(zName));
  if (sig != SIGABRT) {
    /* The address that faulted: a small one is a call or a read through a null-based pointer. */
    writeAll(" at ", 4);
    writeAll(zAddress, formatAddress(zAddress, (uintptr_t)pInfo->si_addr));
  }
  /* The stack comes last: if the unwinder cannot walk it (a jump to a bad address), it faults
  ** in here and the process ends with what was written so far. */
  writeAll("; stack (innermost first):\n", 27);
  nFrame = backtrace(aFrame, MAX_FRAMES);
  backtrace_symbols_fd(aFrame, nFrame, STDERR_FILENO);
  /* Ends the process as the signal would have (its status, its core dump):
  ** the signal stays blocked until the handler returns, then takes the
  ** default action. */
  signal(sig, SIG_DFL);
  raise(sig);
}

void evidenceCrashReportInstall(unsigned long long id) {
#ifdef EVIDENCE_ASAN
  (void)id;
#else
  void *aFrame[1];
  struct sigaction action;
  int n = snprintf(zHeader, sizeof(zHeader), "evidence_node: node %llu crashed: ", id);
  nHeader = n > 0 && (size_t)n < sizeof(zHeader) ? (size_t)n : 0;
  (void)backtrace(aFrame, 1);
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = onFatalSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < sizeof(aFatal) / sizeof(aFatal[0]); i++) sigaction(aFatal[i], &action, 0);
#endif
}
