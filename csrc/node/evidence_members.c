/*
** evidence_members.c: the membership as the leader lists it, each member checked
** (evidence_members.h).
**
** A member answers when a dqlite node takes the handshake at its address and replies
** to a LEADER request (wireProbe). One that does not is down, cannot be reached from
** this machine, or sent no reply within 5 s (paused, overloaded): the listing does not
** tell these apart, the removal does. The leader's own view of its followers is not
** part of dqlite's protocol.
*/
#include "evidence_members.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct MembersAnswer {
  WireMember members[WIRE_MAX_MEMBERS];
  int answers[WIRE_MAX_MEMBERS];
  int n;
  char leader[WIRE_ADDRESS_MAX];
} MembersAnswer;

static int membersAttempt(WireWait *w, const char *seed, void *ctx, char *zErr, int nErr) {
  MembersAnswer *a = ctx;
  char zWhy[512];
  int fd;
  if (wireDialLeader(w, seed, &fd, a->leader, sizeof(a->leader), zErr, nErr) != 0) return WIRE_FAILED;
  if (wireMembers(w, fd, a->members, WIRE_MAX_MEMBERS, &a->n, zWhy, sizeof(zWhy)) != 0) {
    wireSetError(zErr, nErr, "leader %s: %s", a->leader, zWhy);
    close(fd);
    return WIRE_FAILED;
  }
  close(fd);
  for (int i = 0; i < a->n; i++) {
    a->answers[i] = strcmp(a->members[i].address, a->leader) == 0 ||
                    wireProbe(w, a->members[i].address, zWhy, sizeof(zWhy)) == WIRE_PROBE_ANSWERS;
  }
  if (w->stopped) {
    wireSetError(zErr, nErr, "stopped");
    return WIRE_FAILED; /* wireRetry takes the signal */
  }
  return 0;
}

/* A JSON string: quotes, backslashes, control characters and bytes above ASCII escaped, so
** the line is valid JSON whatever bytes a peer sent as an address. */
static void writeJsonText(FILE *out, const char *z) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)z; *p; p++) {
    if (*p == '"' || *p == '\\') {
      fprintf(out, "\\%c", *p);
    } else if (*p < 0x20 || *p >= 0x7f) {
      fprintf(out, "\\u%04x", *p);
    } else {
      fputc(*p, out);
    }
  }
  fputc('"', out);
}

static int byId(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int evidenceMembers(const char *const *seeds, int n_seeds, int timeout_ms, const sigset_t *stop, FILE *out,
                    char *zErr, int nErr) {
  MembersAnswer *a = calloc(1, sizeof(*a));
  uint64_t order[WIRE_MAX_MEMBERS][2]; /* (id, index) */
  int rc;
  if (a == 0) {
    wireSetError(zErr, nErr, "out of memory");
    return WIRE_FAILED;
  }
  rc = wireRetry(seeds, n_seeds, timeout_ms, stop, "list the members", membersAttempt, a, zErr, nErr);
  if (rc == 0) {
    const char *leader = "null";
    char zLeader[24];
    for (int i = 0; i < a->n; i++) {
      order[i][0] = a->members[i].id;
      order[i][1] = (uint64_t)i;
      if (strcmp(a->members[i].address, a->leader) == 0) {
        snprintf(zLeader, sizeof(zLeader), "%llu", (unsigned long long)a->members[i].id);
        leader = zLeader;
      }
    }
    qsort(order, (size_t)a->n, sizeof(order[0]), byId);
    fprintf(out, "{\"leader\": %s, \"members\": [", leader);
    for (int k = 0; k < a->n; k++) {
      const int i = (int)order[k][1];
      fprintf(out, "%s{\"address\": ", k ? ", " : "");
      writeJsonText(out, a->members[i].address);
      fprintf(out, ", \"answers\": %s, \"id\": %llu, \"role\": \"%s\"}", a->answers[i] ? "true" : "false",
              (unsigned long long)a->members[i].id, wireRoleName(a->members[i].role));
    }
    fprintf(out, "]}\n");
  }
  free(a);
  return rc;
}
