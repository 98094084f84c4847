/*
** evidence_members.h: which members a dqlite cluster has, and which of them answer.
**
**   evidence_node --members --cluster 10.0.0.1:9001
**   {"leader": 1, "members": [{"address": "10.0.0.1:9001", "answers": true, "id": 1, "role": "voter"}, ...]}
**
** What an operator checks before removing a member that is down (evidence_remove.h),
** and what a monitor polls: one line of JSON, keys sorted, members by id.
*/
#ifndef EVIDENCE_MEMBERS_H
#define EVIDENCE_MEMBERS_H

#include <signal.h>
#include <stdio.h>

#include "evidence_wire.h"

/* Asks the leader (found through any of the n_seeds addresses) for the members, and each
** member whether it answers, then writes the line to out. Tries the seeds until timeout_ms
** has passed, as evidenceRemove does. Returns 0, or WIRE_FAILED / WIRE_STOPPED with the
** reason in zErr. */
int evidenceMembers(const char *const *seeds, int n_seeds, int timeout_ms, const sigset_t *stop, FILE *out,
                    char *zErr, int nErr);

#endif /* EVIDENCE_MEMBERS_H */
