/*
** evidence_remove.c: an operator removes a member that is down (evidence_remove.h).
**
**   evidence_node --remove 3 --cluster 10.0.0.1:9001
**
** An attempt, through one seed: LEADER (who leads?), then CLUSTER to the leader
** (is the node a member, and at which address?), then a LEADER request to the
** member's own address (does it still answer?), and REMOVE to the leader only
** if it is down: its address refuses the connection, cannot be reached, or
** closes it unanswered (wireProbe). A running member is refused rather than
** removed: it would keep running outside the configuration, and a member removed
** while another is down can leave the cluster without a quorum. So the check
** fails closed: a member that may still run (no reply in time, a local error
** such as too many open files) is refused too ("cannot tell"). Before a voter is
** removed, the other voters are checked as well: those that answer (the leader
** counts) must be a majority of the voters left, which always holds when the
** member is really down and a leader is elected, so it catches a misjudged check.
*/
#include "evidence_remove.h"

#include "evidence_wire.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Appends zItem to the list in zOut (nOut bytes, *pUsed of them used), ", " between items.
** Leaves room for ", ..." after each item: when an item does not fit, the list ends with
** ", ..." and -1 is returned. */
static int listAppend(char *zOut, size_t nOut, size_t *pUsed, const char *zItem) {
  static const char zMore[] = ", ...";
  const size_t sep = *pUsed ? 2 : 0, k = strlen(zItem);
  if (*pUsed + sep + k + sizeof(zMore) > nOut) {
    snprintf(zOut + *pUsed, nOut - *pUsed, "%s", *pUsed ? zMore : "...");
    *pUsed = strlen(zOut);
    return -1;
  }
  snprintf(zOut + *pUsed, nOut - *pUsed, "%s%s", sep ? ", " : "", zItem);
  *pUsed += sep + k;
  return 0;
}

/* "1 at 10.0.0.1:9001 (voter), 2 at ..." into zOut: the members but node `except`, ending
** with ", ..." if zOut is too short for them all. */
static void describeMembers(const WireMember *a, int n, uint64_t except, char *zOut, size_t nOut) {
  char zItem[WIRE_ADDRESS_MAX + 48];
  size_t used = 0;
  zOut[0] = 0;
  for (int i = 0; i < n; i++) {
    if (a[i].id == except) continue;
    snprintf(zItem, sizeof(zItem), "%llu at %s (%s)", (unsigned long long)a[i].id, a[i].address,
             wireRoleName(a[i].role));
    if (listAppend(zOut, nOut, &used, zItem) != 0) break;
  }
}

typedef struct RemoveTarget {
  uint64_t id;
  int sent; /* this process sent REMOVE: a reply lost, the node found absent is its doing */
} RemoveTarget;

/* The guard against a probe that misjudged: the voters but the target that answer (the
** leader among them) must be a majority of the voters that would remain. 0 if they are,
** else REMOVE_REFUSED with zMsg saying which do not answer; WIRE_FAILED if a stop signal
** cut a probe short. */
static int checkMajorityLeft(WireWait *w, const WireMember *a, int n, uint64_t id, const char *zLeader,
                             char *zMsg, int nMsg) {
  char zSilent[1536];
  char zItem[WIRE_ADDRESS_MAX + 600];
  char zWhy[512];
  size_t used = 0;
  int voters = 0, answer = 0;
  zSilent[0] = 0;
  for (int i = 0; i < n; i++) {
    if (a[i].id == id || a[i].role != WIRE_ROLE_VOTER) continue;
    voters++;
    if (strcmp(a[i].address, zLeader) == 0 ||
        wireProbe(w, a[i].address, zWhy, sizeof(zWhy)) == WIRE_PROBE_ANSWERS) {
      answer++;
    } else if (!w->stopped) {
      snprintf(zItem, sizeof(zItem), "node %llu (%s)", (unsigned long long)a[i].id, zWhy);
      listAppend(zSilent, sizeof(zSilent), &used, zItem);
    }
    if (w->stopped) {
      wireSetError(zMsg, nMsg, "stopped");
      return WIRE_FAILED;
    }
  }
  if (2 * answer > voters) return 0;
  wireSetError(zMsg, nMsg,
               "only %d of the %d voters that would remain without node %llu answer%s from this machine, "
               "not a majority (not answering: %s); removing node %llu could leave the cluster without a "
               "quorum, so nothing was removed",
               answer, voters, (unsigned long long)id, answer == 1 ? "s" : "", zSilent,
               (unsigned long long)id);
  return REMOVE_REFUSED;
}

static int removeAttempt(WireWait *w, const char *seed, void *ctx, char *zMsg, int nMsg) {
  RemoveTarget *t = ctx;
  const uint64_t id = t->id;
  WireMember members[WIRE_MAX_MEMBERS];
  char zLeader[WIRE_ADDRESS_MAX];
  char zWhy[512];
  char zList[2048];
  const WireMember *target = 0;
  int fd, n, rc, probe;
  if (wireDialLeader(w, seed, &fd, zLeader, sizeof(zLeader), zMsg, nMsg) != 0) return WIRE_FAILED;
  if (wireMembers(w, fd, members, WIRE_MAX_MEMBERS, &n, zWhy, sizeof(zWhy)) != 0) {
    wireSetError(zMsg, nMsg, "leader %s: %s", zLeader, zWhy);
    close(fd);
    return WIRE_FAILED;
  }
  for (int i = 0; i < n; i++) {
    if (members[i].id == id) target = &members[i];
  }
  if (target == 0 && t->sent) { /* the REMOVE of an earlier attempt was committed, its reply lost */
    describeMembers(members, n, id, zList, sizeof(zList));
    wireSetError(zMsg, nMsg, "node %llu removed from the cluster; its members: %s", (unsigned long long)id,
                 zList);
    close(fd);
    return 0;
  }
  if (target == 0) {
    describeMembers(members, n, id, zList, sizeof(zList));
    wireSetError(zMsg, nMsg,
                 "node %llu is not a member of the cluster, so nothing was removed; its members: %s",
                 (unsigned long long)id, zList);
    close(fd);
    return REMOVE_ABSENT;
  }
  probe = strcmp(target->address, zLeader) == 0 ? WIRE_PROBE_ANSWERS
                                                : wireProbe(w, target->address, zWhy, sizeof(zWhy));
  if (w->stopped) { /* the check was cut short: wireRetry takes the signal */
    wireSetError(zMsg, nMsg, "stopped");
    close(fd);
    return WIRE_FAILED;
  }
  if (probe == WIRE_PROBE_ANSWERS) {
    wireSetError(zMsg, nMsg,
                 "node %llu still answers at %s, so it was not removed: stop it first (SIGTERM), then remove "
                 "it; a member is removed only once it is down",
                 (unsigned long long)id, target->address);
    close(fd);
    return REMOVE_REFUSED;
  }
  if (probe == WIRE_PROBE_UNSURE) {
    wireSetError(zMsg, nMsg, "cannot tell whether node %llu at %s is down: %s; nothing was removed",
                 (unsigned long long)id, target->address, zWhy);
    close(fd);
    return REMOVE_REFUSED;
  }
  if (target->role == WIRE_ROLE_VOTER &&
      (rc = checkMajorityLeft(w, members, n, id, zLeader, zMsg, nMsg)) != 0) {
    close(fd);
    return rc;
  }
  t->sent = 1; /* before the reply: a leader may commit the REMOVE and lose its answer */
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
  RemoveTarget target = {id, 0};
  return wireRetry(seeds, n_seeds, timeout_ms, stop, "remove the member", removeAttempt, &target, zMsg, nMsg);
}
