/*
** evidence_wire.h: the few requests of dqlite's wire protocol that change a
** cluster's membership, spoken from C over a plain TCP socket.
**
** libdqlite 1.11 has no client API, and a cluster's membership changes only
** when its leader is asked. evidence_join.c (a node joining) and
** evidence_remove.c (an operator removing a member that is down) use these.
** Every wait here ends early when a stop signal (SIGTERM, SIGINT) is pending.
*/
#ifndef EVIDENCE_WIRE_H
#define EVIDENCE_WIRE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

enum { WIRE_ROLE_VOTER = 0, WIRE_ROLE_STANDBY = 1, WIRE_ROLE_SPARE = 2 };

#define WIRE_ADDRESS_MAX 256
#define WIRE_MAX_MEMBERS 64 /* more is not a cluster pyevidence runs, or not a dqlite peer */

/* The waits of one operation. stopFd is a signalfd of the stop signals (blocked by
** the caller), -1 if none: the waits then run to their timeouts. */
typedef struct WireWait {
  int stopFd;
  int stopped; /* a wait ended because a stop signal came */
} WireWait;

/* One member as the leader lists it. */
typedef struct WireMember {
  uint64_t id;
  char address[WIRE_ADDRESS_MAX];
  int role; /* WIRE_ROLE_* */
} WireMember;

/* Milliseconds of a monotonic clock. */
long long wireNowMs(void);

/* zErr = the formatted message, cut to nErr bytes. */
void wireSetError(char *zErr, int nErr, const char *zFormat, ...);

/* Connects to HOST:PORT ([V6ADDR]:PORT for IPv6) and sends the handshake: 0 and the socket in
** *pFd, or -1 with the reason in zErr. A peer that does not take the connection is given 5 s.
** The replies to LEADER and CLUSTER are waited for 10 s, those to ADD, ASSIGN and REMOVE
** (a commit) 60 s. */
int wireDial(WireWait *w, const char *address, int *pFd, char *zErr, int nErr);

/* Asks the node on fd who leads: its address into zLeader ("" if none yet). */
int wireAskLeader(WireWait *w, int fd, char *zLeader, size_t nLeader, char *zErr, int nErr);

/* Asks seed who leads and connects to the leader: 0 with the socket in *pFd and the leader's
** address in zLeader, or -1 with the reason in zErr (no leader yet: an election). */
int wireDialLeader(WireWait *w, const char *seed, int *pFd, char *zLeader, size_t nLeader, char *zErr,
                   int nErr);

/* What wireProbe() found at a member's address. */
enum {
  WIRE_PROBE_ANSWERS = 0, /* a dqlite node replied (who leads, or a FAILURE): it runs */
  WIRE_PROBE_DOWN = 1,    /* the connection was refused, the host unreachable, connect() timed out
                             (5 s), or the peer closed or reset the connection before any reply */
  WIRE_PROBE_UNSURE = 2   /* anything else: a local error (EMFILE, ENOBUFS, a name that does not
                             resolve), no reply within 5 s (a paused or overloaded node, or no
                             dqlite node), a reply that is not dqlite's protocol, a stop signal */
};

/* Whether a dqlite node answers at address, as seen from this machine: asks it who leads.
** Returns a WIRE_PROBE_* code, with what was found in zWhy. At most 10 s. */
int wireProbe(WireWait *w, const char *address, char *zWhy, int nWhy);

/* "voter", "standby" or "spare". */
const char *wireRoleName(int role);

/* The leader's membership list, into a[0..*pN). */
int wireMembers(WireWait *w, int fd, WireMember *a, int nMax, int *pN, char *zErr, int nErr);

/* Requests to the leader: add node (id, address) as a spare, give a member a role, remove a
** member. Each returns once the leader committed the change (ASSIGN to voter: once the node
** caught up with the log), or -1 with the reason in zErr. */
int wireAdd(WireWait *w, int fd, uint64_t id, const char *address, char *zErr, int nErr);
int wireAssign(WireWait *w, int fd, uint64_t id, int role, char *zErr, int nErr);
int wireRemove(WireWait *w, int fd, uint64_t id, char *zErr, int nErr);

#define WIRE_FAILED -1  /* an attempt failed, and may succeed through another seed or later */
#define WIRE_STOPPED -3 /* a stop signal came */

/* One attempt at an operation through one seed: 0 or a code of the caller's on an outcome,
** WIRE_FAILED (with the reason in zErr) to try again. */
typedef int (*WireAttempt)(WireWait *w, const char *seed, void *ctx, char *zErr, int nErr);

/* Runs attempt through the seeds in turn, pausing 200 ms after each round, until it returns
** anything but WIRE_FAILED or timeout_ms has passed (the last reason then in zErr), saying on
** stderr every 10 s that it still tries to `doing`. A pending signal of `stop` (blocked by the
** caller) ends it at once, even in the middle of an attempt: WIRE_STOPPED, zErr naming it and
** the reason of the last attempt it did not cut short ("SIGTERM; last: ..."; "SIGTERM" alone
** if there was none). */
int wireRetry(const char *const *seeds, int n_seeds, int timeout_ms, const sigset_t *stop, const char *doing,
              WireAttempt attempt, void *ctx, char *zErr, int nErr);

#endif /* EVIDENCE_WIRE_H */
