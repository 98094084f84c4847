/*
** evidence_remove.h: removing a member that is down from a running dqlite cluster.
**
**   evidence_node --remove 3 --cluster 10.0.0.1:9001
**
** A member whose machine is gone keeps its vote and its address until it is
** removed: the cluster then tolerates one failure fewer, and no node can join
** at that address. Only a member that is down is removed: a running one still
** answers at its address, and is refused (stop it first). A cluster whose
** leader is up keeps its quorum without the member, since it had it without
** that member's vote already.
*/
#ifndef EVIDENCE_REMOVE_H
#define EVIDENCE_REMOVE_H

#include <signal.h>
#include <stdint.h>

#include "evidence_wire.h"

#define REMOVE_ABSENT 1 /* not a member: nothing to do (zMsg lists the members) */
#define REMOVE_FAILED \
  WIRE_FAILED /* no seed led to the removal before the deadline: the last reason in zMsg */
#define REMOVE_REFUSED                                                                        \
  -2 /* the member still answers at its address, it cannot be told whether it is down, or the \
     ** voters left that answer would not be a majority: zMsg says which */
#define REMOVE_STOPPED WIRE_STOPPED /* a signal of `stop` came: zMsg names it */

/* Removes node id from the cluster that one of the n_seeds addresses (HOST:PORT, any
** member) belongs to: asks a seed who leads, and asks the leader for the membership and to
** remove the node. Tries the seeds in turn until timeout_ms has passed (an election may be
** under way), saying on stderr every 10 s that it still tries, and stops early when a signal
** of `stop` (blocked by the caller) is pending. Returns 0 with the members left in zMsg, or
** one of the codes above with a message in zMsg (at most nMsg bytes). Removing a node that
** is not a member changes nothing, so a removal whose reply was lost may be asked again (a
** REMOVE of this call whose reply was lost, found done by a later attempt, is success). */
int evidenceRemove(uint64_t id, const char *const *seeds, int n_seeds, int timeout_ms, const sigset_t *stop,
                   char *zMsg, int nMsg);

#endif /* EVIDENCE_REMOVE_H */
