/*
** evidence_join.h: adding a node to a running dqlite cluster, from the node itself.
**
** A node becomes a member of a cluster only when the cluster's leader is asked
** to add it: evidence_join.c asks, through the requests of evidence_wire.h.
*/
#ifndef EVIDENCE_JOIN_H
#define EVIDENCE_JOIN_H

#include <signal.h>
#include <stdint.h>

#include "evidence_wire.h"

#define JOIN_FAILED WIRE_FAILED   /* no seed led to a join before the deadline: the last reason in zErr */
#define JOIN_REFUSED -2           /* the cluster has this id already, and it is not this node's to take */
#define JOIN_STOPPED WIRE_STOPPED /* a signal of `stop` came: zErr names it */

/* Makes node (id, address) a voting member of the cluster that one of the
** n_seeds addresses (HOST:PORT, any member) belongs to: asks a seed who leads,
** and asks the leader for the membership, to add the node if it is missing and
** to promote it to voter if it is not one. Nothing changes for a node that is a
** voter already, so a restarted node may join again. Refused (JOIN_REFUSED) when
** the id is a member at another address, or when it is a member and the node is
** `fresh` (no Raft state of its own): a member that lost its state must not
** vote again under its id. Tries the seeds in turn until timeout_ms has passed
** (an election may be under way), saying on stderr every 10 s that it still
** tries, and stops early when a signal of `stop` (blocked by the caller) is
** pending. Returns 0 on success, else one of the codes above with a message in
** zErr (at most nErr bytes). */
int evidenceJoin(uint64_t id, const char *address, int fresh, const char *const *seeds, int n_seeds,
                 int timeout_ms, const sigset_t *stop, char *zErr, int nErr);

#endif /* EVIDENCE_JOIN_H */
