/*
** evidence_join.c: a node asks a running cluster to take it in (evidence_join.h).
**
**   evidence_node --id 2 --address 10.0.0.2:9001 --data /var/lib/evidence --join 10.0.0.1:9001
**
** How it works. A join is four requests of dqlite's wire protocol (evidence_wire.c):
**   LEADER  to a seed: who leads? (a node id and address; id 0: no leader yet)
**   CLUSTER to the leader: the members, each with its role (voter 0, standby 1, spare 2)
**   ADD     to the leader, if the node is not a member: it joins as a spare
**   ASSIGN  to the leader, if the node is not a voter: it becomes one, once it caught up
** Every failure of an attempt (no leader yet, a leader that just lost its
** leadership, a seed that is down) is retried with the next seed until the
** deadline; the last reason is what the caller reports.
*/
#include "evidence_join.h"

#include "evidence_wire.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ROLE_ABSENT -1

/* The role of node id in the leader's membership list, or ROLE_ABSENT, the address it
** is a member at (zAt, "" if absent), and the id of another member at `address` (0 if
** none): dqlite refuses to add a node at an address a member holds. */
static int joinAskRole(WireWait *w, int fd, uint64_t id, const char *address, int *pRole, char *zAt,
                       size_t nAt, uint64_t *pOther, char *zErr, int nErr) {
  WireMember members[WIRE_MAX_MEMBERS];
  int n;
  if (wireMembers(w, fd, members, WIRE_MAX_MEMBERS, &n, zErr, nErr) != 0) return -1;
  *pRole = ROLE_ABSENT;
  *pOther = 0;
  zAt[0] = 0;
  for (int i = 0; i < n; i++) {
    if (members[i].id == id) {
      *pRole = members[i].role;
      snprintf(zAt, nAt, "%s", members[i].address);
    } else if (strcmp(members[i].address, address) == 0) {
      *pOther = members[i].id;
    }
  }
  return 0;
}

/* One attempt through one seed. *pAdded: this process added the node (so a fresh
** node found in the membership is itself, half-way through its join). */
static int joinThrough(WireWait *w, const char *seed, uint64_t id, const char *address, int fresh,
                       int *pAdded, char *zErr, int nErr) {
  char zLeader[WIRE_ADDRESS_MAX];
  char zAt[WIRE_ADDRESS_MAX];
  char zWhy[512];
  uint64_t other;
  int fd, role, rc = JOIN_FAILED;
  if (wireDialLeader(w, seed, &fd, zLeader, sizeof(zLeader), zErr, nErr) != 0) return JOIN_FAILED;
  rc = joinAskRole(w, fd, id, address, &role, zAt, sizeof(zAt), &other, zWhy, sizeof(zWhy));
  if (rc == 0 && role == ROLE_ABSENT && other != 0) {
    wireSetError(zErr, nErr,
                 "%s is the address of node %llu of the cluster already (a member that is down keeps its "
                 "address until it is removed); give this node another --address, or, if node %llu is down "
                 "for good, remove it first: pyevidence node --remove %llu --cluster %s",
                 address, (unsigned long long)other, (unsigned long long)other, (unsigned long long)other,
                 seed);
    close(fd);
    return JOIN_REFUSED;
  }
  if (rc == 0 && role != ROLE_ABSENT && strcmp(zAt, address) != 0) {
    wireSetError(zErr, nErr,
                 "node %llu is a member of the cluster already, at %s; give this node another --id, or "
                 "restart node %llu from its own data directory",
                 (unsigned long long)id, zAt, (unsigned long long)id);
    close(fd);
    return JOIN_REFUSED;
  }
  if (rc == 0 && role != ROLE_ABSENT && fresh && !*pAdded) {
    wireSetError(zErr, nErr,
                 "node %llu is a member of the cluster already, and this data directory holds no state of "
                 "it: a member that lost its state must not vote again under its id; give this node "
                 "another --id (and remove the old member: pyevidence node --remove %llu --cluster %s)",
                 (unsigned long long)id, (unsigned long long)id, seed);
    close(fd);
    return JOIN_REFUSED;
  }
  if (rc == 0 && role == ROLE_ABSENT) {
    *pAdded = 1; /* before the reply: a leader may commit the ADD and lose its answer */
    rc = wireAdd(w, fd, id, address, zWhy, sizeof(zWhy));
  }
  if (rc == 0 && role != WIRE_ROLE_VOTER) rc = wireAssign(w, fd, id, WIRE_ROLE_VOTER, zWhy, sizeof(zWhy));
  close(fd);
  if (rc != 0) wireSetError(zErr, nErr, "leader %s: %s", zLeader, zWhy);
  return rc == 0 ? 0 : JOIN_FAILED;
}

typedef struct JoinTarget {
  uint64_t id;
  const char *address;
  int fresh;
  int added; /* this process added the node */
} JoinTarget;

static int joinAttempt(WireWait *w, const char *seed, void *ctx, char *zErr, int nErr) {
  JoinTarget *t = ctx;
  return joinThrough(w, seed, t->id, t->address, t->fresh, &t->added, zErr, nErr);
}

int evidenceJoin(uint64_t id, const char *address, int fresh, const char *const *seeds, int n_seeds,
                 int timeout_ms, const sigset_t *stop, char *zErr, int nErr) {
  JoinTarget target = {id, address, fresh, 0};
  return wireRetry(seeds, n_seeds, timeout_ms, stop, "join", joinAttempt, &target, zErr, nErr);
}
