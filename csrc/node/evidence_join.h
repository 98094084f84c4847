/*
** evidence_join.h: adding a node to a running dqlite cluster, from the node itself.
**
** libdqlite 1.11 has no client API, and a node becomes a member of a cluster
** only when the cluster's leader is asked to add it. evidence_join.c speaks
** the few messages of dqlite's wire protocol this takes (LEADER, CLUSTER, ADD,
** ASSIGN) over a plain TCP socket.
*/
#ifndef EVIDENCE_JOIN_H
#define EVIDENCE_JOIN_H

#include <stdint.h>

/* Makes node (id, address) a voting member of the cluster that one of the
** n_seeds addresses (HOST:PORT, any member) belongs to: asks a seed who leads,
** and asks the leader for the membership, to add the node if it is missing and
** to promote it to voter if it is not one. Nothing changes for a node that is a
** voter already, so a restarted node may join again. Tries the seeds in turn
** until timeout_ms has passed (an election may be under way). Returns 0 on
** success, else -1 with a message in zErr (at most nErr bytes). */
int evidenceJoin(uint64_t id, const char *address, const char *const *seeds, int n_seeds, int timeout_ms,
                 char *zErr, int nErr);

#endif /* EVIDENCE_JOIN_H */
