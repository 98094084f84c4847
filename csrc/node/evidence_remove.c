/*
** evidence_remove.c: an operator removes a member that is down (evidence_remove.h).
**
**   evidence_node --remove 3 --cluster 10.0.0.1:9001
**
** An attempt, through one seed: LEADER (who leads?), then CLUSTER to the leader
** (is the node a member, and at which address?), then a LEADER request to the
** member's own address (does it still answer?), and REMOVE to the leader only
** if it does not. A running member is refused rather than removed: it would
** keep running outside the configuration, and a member removed while another
** is down can leave the cluster without a quorum.
*/
#include "evidence_remove.h"

#include "evidence_wire.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "1 at 10.0.0.1:9001 (voter), 2 at ..." into zOut: the members but node `except`. */
static void describeMembers(const WireMember *a, int n, uint64_t except, char *zOut, size_t nOut) {
  size_t used = 0;
  zOut[0] = 0;
  for (int i = 0; i < n && used < nOut; i++) {
    if (a[i].id == except) continue;
    int k = snprintf(zOut + used, nOut - used, "%s%llu at %s (%s)", used ? ", " : "",
                     (unsigned long long)a[i].id, a[i].address, wireRoleName(a[i].role));
    if (k < 0) break;
    used += (size_t)k;
  }
}

typedef struct RemoveTarget {
  uint64_t id;
} RemoveTarget;

static int removeAttempt(WireWait *w, const char *seed, void *ctx, char *zMsg, int nMsg) {
  const uint64_t id = ((RemoveTarget *)ctx)->id;
  WireMember members[WIRE_MAX_MEMBERS];
  char zLeader[WIRE_ADDRESS_MAX];
  char zWhy[512];
  char zList[2048];
  const WireMember *target = 0;
  int fd, n, answers;
  if (wireDialLeader(w, seed, &fd, zLeader, sizeof(zLeader), zMsg, nMsg) != 0) return WIRE_FAILED;
  if (wireMembers(w, fd, members, WIRE_MAX_MEMBERS, &n, zWhy, sizeof(zWhy)) != 0) {
    wireSetError(zMsg, nMsg, "leader %s: %s", zLeader, zWhy);
    close(fd);
    return WIRE_FAILED;
  }
  for (int i = 0; i < n; i++) {
    if (members[i].id == id) target = &members[i];
  }
  if (target == 0) {
    describeMembers(members, n, id, zList, sizeof(zList));
    wireSetError(zMsg, nMsg,
                 "node %llu is not a member of the cluster, so nothing was removed; its members: %s",
                 (unsigned long long)id, zList);
    close(fd);
    return REMOVE_ABSENT;
  }
  answers = strcmp(target->address, zLeader) == 0 || wireAnswers(w, target->address);
  if (w->stopped) { /* the check was cut short: wireRetry takes the signal */
    wireSetError(zMsg, nMsg, "stopped");
    close(fd);
    return WIRE_FAILED;
  }
  if (answers) {
    wireSetError(zMsg, nMsg,
                 "node %llu still answers at %s, so it was not removed: stop it first (SIGTERM), then remove "
                 "it; a member is removed only once it is down",
                 (unsigned long long)id, target->address);
    close(fd);
    return REMOVE_REFUSED;
  }
  if (wireRemove(w, fd, id, zWhy, sizeof(zWhy)) != 0) {
    wireSetError(zMsg, nMsg, "leader %s: %s", zLeader, zWhy);
    close(fd);
    return WIRE_FAILED;
  }
  /* The members left, as the leader now lists them; the removal stands either way. */
  if (wireMembers(w, fd, members, WIRE_MAX_MEMBERS, &n, zWhy, sizeof(zWhy)) == 0) {
    describeMembers(members, n, id, zList, sizeof(zList));
    wireSetError(zMsg, nMsg, "node %llu removed from the cluster; its members: %s", (unsigned long long)id,
                 zList);
  } else {
    wireSetError(zMsg, nMsg, "node %llu removed from the cluster", (unsigned long long)id);
  }
  close(fd);
  return 0;
}

int evidenceRemove(uint64_t id, const char *const *seeds, int n_seeds, int timeout_ms, const sigset_t *stop,
                   char *zMsg, int nMsg) {
  RemoveTarget target = {id};
  return wireRetry(seeds, n_seeds, timeout_ms, stop, "remove the member", removeAttempt, &target, zMsg, nMsg);
}
