/*
** evidence_wire.c: dqlite's wire protocol, the membership requests (evidence_wire.h).
**
** The protocol (the one dqlite's clients speak) is framed in 8-byte words,
** little-endian: after a one-word handshake (the protocol version, 1), every
** message is a header (uint32 body length in words, uint8 type, uint8 schema,
** uint16 unused) and a body of uint64 integers and NUL-terminated UTF-8 texts
** padded to a word. The requests used here:
**   LEADER  to any node: who leads? (a node id and address; id 0: no leader yet)
**   CLUSTER to the leader: the members, each with its role (voter 0, standby 1, spare 2)
**   ADD     to the leader: a node joins as a spare
**   ASSIGN  to the leader: a member gets a role (voter: once it caught up)
**   REMOVE  to the leader: a member leaves the configuration
*/
#include "evidence_wire.h"

#include "evidence_address.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { REQ_LEADER = 0, REQ_ADD = 12, REQ_ASSIGN = 13, REQ_REMOVE = 14, REQ_CLUSTER = 16 };
enum { RES_FAILURE = 0, RES_LEADER = 1, RES_SERVERS = 3, RES_EMPTY = 8 };

#define WIRE_PROTOCOL_VERSION 1
#define WIRE_MAX_BODY (1 << 20)  /* a membership list is far smaller; more is a wrong peer */
#define WIRE_DIAL_TIMEOUT_S 5    /* connect(): a peer that does not answer is passed over */
#define WIRE_PROBE_TIMEOUT_S 5   /* the reply to the LEADER request of wireProbe() */
#define WIRE_ASK_TIMEOUT_S 10    /* the replies to LEADER and CLUSTER: answered at once */
#define WIRE_COMMIT_TIMEOUT_S 60 /* ADD, ASSIGN, REMOVE: a commit; ASSIGN, the node's catch-up */

/* How a round trip failed (wireRoundTrip), for wireProbe() to tell a node that is down
** from one that may still run. */
enum {
  RT_ERROR = -1,   /* a local error, or a reply that is not dqlite's protocol */
  RT_FAILURE = -2, /* a FAILURE reply: a dqlite node answered */
  RT_CLOSED = -3,  /* the peer closed or reset the connection before any byte of a reply */
  RT_TIMEOUT = -4  /* no (whole) reply in time */
};

/* A message body being written or read: bytes and a cursor. */
typedef struct WireBuf {
  unsigned char *a;
  size_t n;   /* bytes in a */
  size_t pos; /* read cursor */
} WireBuf;

void wireSetError(char *zErr, int nErr, const char *zFormat, ...) {
  va_list ap;
  va_start(ap, zFormat);
  vsnprintf(zErr, (size_t)nErr, zFormat, ap);
  va_end(ap);
}

static void bufPutU64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t bufGetU64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static int bufReadU64(WireBuf *b, uint64_t *v) {
  if (b->n - b->pos < 8) return -1;
  *v = bufGetU64(b->a + b->pos);
  b->pos += 8;
  return 0;
}

/* A text of the body, in place (it is NUL-terminated there); -1 if malformed. */
static int bufReadText(WireBuf *b, const char **z) {
  const unsigned char *start = b->a + b->pos;
  const unsigned char *nul = memchr(start, 0, b->n - b->pos);
  size_t used;
  if (nul == 0) return -1;
  used = ((size_t)(nul - start) + 1 + 7) / 8 * 8;
  if (used > b->n - b->pos) return -1;
  *z = (const char *)start;
  b->pos += used;
  return 0;
}

/* Words needed for a text: the bytes, the NUL, padding to a word. */
static size_t textWords(const char *z) {
  return (strlen(z) + 1 + 7) / 8;
}

long long wireNowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 0 once fd is ready for `events`; -1 with errno ETIMEDOUT after timeout_s, or
** EINTR and w->stopped set when a stop signal is pending. */
static int wireWaitFor(WireWait *w, int fd, short events, int timeout_s) {
  const long long deadline = wireNowMs() + timeout_s * 1000LL;
  for (;;) {
    struct pollfd p[2] = {{fd, events, 0}, {w->stopFd, POLLIN, 0}}; /* poll() skips a negative fd */
    long long left = deadline - wireNowMs();
    int n;
    if (left <= 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    n = poll(p, 2, (int)left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (p[1].revents != 0) {
      w->stopped = 1;
      errno = EINTR;
      return -1;
    }
    if (p[0].revents != 0) return 0;
  }
}

static int writeAll(WireWait *w, int fd, const unsigned char *p, size_t n, int timeout_s) {
  while (n > 0) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wireWaitFor(w, fd, POLLOUT, timeout_s) != 0) return -1;
      continue;
    }
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* -1 with errno 0 when the peer closed the connection; *pGot: the bytes read. */
static int readAll(WireWait *w, int fd, unsigned char *p, size_t n, int timeout_s, size_t *pGot) {
  *pGot = 0;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wireWaitFor(w, fd, POLLIN, timeout_s) != 0) return -1;
      continue;
    }
    if (r == 0) errno = 0;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    *pGot += (size_t)r;
  }
  return 0;
}

/* Whether a failed connect() says that nothing listens there, or that the host cannot be
** reached (so a node there is down, as far as this machine can tell): anything else is a
** local failure, which says nothing of the node. */
static int isDownErrno(int err) {
  return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == ETIMEDOUT;
}

/* A non-blocking connect() bounded by WIRE_DIAL_TIMEOUT_S; 0, or -1 with errno. */
static int wireConnect(WireWait *w, int fd, const struct addrinfo *ai) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return 0;
  if (errno != EINPROGRESS) return -1;
  if (wireWaitFor(w, fd, POLLOUT, WIRE_DIAL_TIMEOUT_S) != 0) return -1;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return -1;
  errno = err;
  return err == 0 ? 0 : -1;
}

/* Connects to HOST:PORT ([V6ADDR]:PORT for IPv6) and sends the handshake. On failure, *pDown
** is 1 when every address of the host refused the connection, could not be reached, or
** timed out (isDownErrno), or reset it at the handshake; 0 for a local failure (no socket, no
** name resolution, a stop signal). */
static int dialClassified(WireWait *w, const char *address, int *pFd, int *pDown, char *zErr, int nErr) {
  char host[256];
  char port[8];
  unsigned portNumber;
  const char *name = host;
  size_t hostLen;
  struct addrinfo hints, *res = 0, *ai;
  unsigned char hello[8];
  int fd = -1, rc, sawDown = 0, sawOther = 0, err = 0;
  *pDown = 0;
  if (evidenceAddressSplit(address, host, sizeof(host), &portNumber) != 0) {
    wireSetError(zErr, nErr, "%s is not HOST:PORT", address);
    return -1;
  }
  hostLen = strlen(host);
  if (hostLen >= 2 && host[0] == '[' && host[hostLen - 1] == ']') {
    host[hostLen - 1] = 0;
    name = host + 1;
  }
  snprintf(port, sizeof(port), "%u", portNumber);
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if ((rc = getaddrinfo(name, port, &hints, &res)) != 0) {
    wireSetError(zErr, nErr, "cannot resolve %s: %s", name, gai_strerror(rc));
    return -1;
  }
  for (ai = res; ai != 0 && fd < 0 && !w->stopped; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno; /* EMFILE, ENOBUFS, ...: this machine's, not the node's */
      sawOther = 1;
    } else if (wireConnect(w, fd, ai) != 0) {
      err = errno;
      close(fd);
      fd = -1;
      if (isDownErrno(err)) {
        sawDown = 1;
      } else {
        sawOther = 1;
      }
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    *pDown = sawDown && !sawOther && !w->stopped;
    wireSetError(zErr, nErr, "cannot connect to %s: %s", address,
                 w->stopped ? "stopped"
                 : err      ? strerror(err)
                            : "no address");
    return -1;
  }
  bufPutU64(hello, WIRE_PROTOCOL_VERSION);
  if (writeAll(w, fd, hello, sizeof(hello), WIRE_DIAL_TIMEOUT_S) != 0) {
    err = errno;
    *pDown = (err == ECONNRESET || err == EPIPE) && !w->stopped;
    wireSetError(zErr, nErr, "cannot talk to %s: %s", address, w->stopped ? "stopped" : strerror(err));
    close(fd);
    return -1;
  }
  *pFd = fd;
  return 0;
}

int wireDial(WireWait *w, const char *address, int *pFd, char *zErr, int nErr) {
  int down;
  return dialClassified(w, address, pFd, &down, zErr, nErr);
}

/* Sends one request and reads its response into *pRes (the caller frees pRes->a), waiting
** up to timeout_s for it: 0, or one of the RT_* codes with the reason in zErr (for a FAILURE
** response, the server's message). */
static int wireRoundTrip(WireWait *w, int fd, int type, const unsigned char *body, size_t nBody, int expect,
                         int timeout_s, WireBuf *pRes, char *zErr, int nErr) {
  unsigned char header[8];
  uint64_t code;
  const char *zMsg;
  size_t nWords = nBody / 8, got = 0;
  int err;
  pRes->a = 0;
  memset(header, 0, sizeof(header));
  for (int i = 0; i < 4; i++) header[i] = (unsigned char)(nWords >> (8 * i));
  header[4] = (unsigned char)type;
  if (writeAll(w, fd, header, 8, timeout_s) != 0 || writeAll(w, fd, body, nBody, timeout_s) != 0) {
    err = errno;
    wireSetError(zErr, nErr, "the connection failed: %s", w->stopped ? "stopped" : strerror(err));
    return err == ECONNRESET || err == EPIPE ? RT_CLOSED : err == ETIMEDOUT ? RT_TIMEOUT : RT_ERROR;
  }
  if (readAll(w, fd, header, 8, timeout_s, &got) != 0) {
    err = errno;
    if (w->stopped) {
      wireSetError(zErr, nErr, "stopped");
      return RT_ERROR;
    }
    if (err == ETIMEDOUT) {
      wireSetError(zErr, nErr, "no reply within %d s", timeout_s);
      return RT_TIMEOUT;
    }
    wireSetError(zErr, nErr, "the connection failed: %s", err ? strerror(err) : "closed by the peer");
    return got == 0 && (err == 0 || err == ECONNRESET) ? RT_CLOSED : RT_ERROR;
  }
  nWords = (size_t)header[0] | (size_t)header[1] << 8 | (size_t)header[2] << 16 | (size_t)header[3] << 24;
  if (nWords * 8 > WIRE_MAX_BODY) {
    wireSetError(zErr, nErr, "the peer sent a %zu-byte message: not a dqlite node?", nWords * 8);
    return RT_ERROR;
  }
  pRes->n = nWords * 8;
  pRes->pos = 0;
  pRes->a = malloc(pRes->n + 1);
  if (pRes->a == 0) {
    wireSetError(zErr, nErr, "out of memory");
    return RT_ERROR;
  }
  if (readAll(w, fd, pRes->a, pRes->n, timeout_s, &got) != 0) {
    err = errno;
    wireSetError(zErr, nErr, "the connection failed while reading a reply: %s",
                 w->stopped ? "stopped"
                 : err      ? strerror(err)
                            : "closed by the peer");
    free(pRes->a);
    pRes->a = 0;
    return err == ETIMEDOUT && !w->stopped ? RT_TIMEOUT : RT_ERROR;
  }
  if (header[4] == RES_FAILURE) {
    if (bufReadU64(pRes, &code) == 0 && bufReadText(pRes, &zMsg) == 0) {
      wireSetError(zErr, nErr, "%s (code %llu)", zMsg, (unsigned long long)code);
    } else {
      wireSetError(zErr, nErr, "the request failed");
    }
    free(pRes->a);
    pRes->a = 0;
    return RT_FAILURE;
  }
  if (header[4] != expect) {
    wireSetError(zErr, nErr, "unexpected reply type %d to request %d: not a dqlite node?", header[4], type);
    free(pRes->a);
    pRes->a = 0;
    return RT_ERROR;
  }
  return 0;
}

/* Asks the node on fd who leads, waiting timeout_s for the reply: copies the leader's address
** into zLeader, "" if none yet. 0, or an RT_* code. */
static int askLeader(WireWait *w, int fd, int timeout_s, char *zLeader, size_t nLeader, char *zErr,
                     int nErr) {
  unsigned char body[8];
  WireBuf res;
  uint64_t id;
  const char *z;
  int rc;
  bufPutU64(body, 0);
  rc = wireRoundTrip(w, fd, REQ_LEADER, body, 8, RES_LEADER, timeout_s, &res, zErr, nErr);
  if (rc != 0) return rc;
  if (bufReadU64(&res, &id) != 0 || bufReadText(&res, &z) != 0 || strlen(z) >= nLeader) {
    wireSetError(zErr, nErr, "malformed leader reply: not a dqlite node?");
    free(res.a);
    return RT_ERROR;
  }
  snprintf(zLeader, nLeader, "%s", id == 0 ? "" : z);
  free(res.a);
  return 0;
}

int wireAskLeader(WireWait *w, int fd, char *zLeader, size_t nLeader, char *zErr, int nErr) {
  return askLeader(w, fd, WIRE_ASK_TIMEOUT_S, zLeader, nLeader, zErr, nErr) == 0 ? 0 : -1;
}

int wireDialLeader(WireWait *w, const char *seed, int *pFd, char *zLeader, size_t nLeader, char *zErr,
                   int nErr) {
  char zWhy[512];
  int fd, rc;
  if (wireDial(w, seed, &fd, zWhy, sizeof(zWhy)) != 0) {
    wireSetError(zErr, nErr, "%s", zWhy);
    return -1;
  }
  rc = askLeader(w, fd, WIRE_ASK_TIMEOUT_S, zLeader, nLeader, zWhy, sizeof(zWhy));
  close(fd);
  if (rc == RT_TIMEOUT) {
    wireSetError(zErr, nErr, "asking %s for the leader: %s (is %s a dqlite node?)", seed, zWhy, seed);
    return -1;
  }
  if (rc != 0) {
    wireSetError(zErr, nErr, "asking %s for the leader: %s", seed, zWhy);
    return -1;
  }
  if (zLeader[0] == 0) {
    wireSetError(zErr, nErr, "%s knows no leader (an election may be under way)", seed);
    return -1;
  }
  if (wireDial(w, zLeader, pFd, zWhy, sizeof(zWhy)) != 0) {
    wireSetError(zErr, nErr, "leader %s: %s", zLeader, zWhy);
    return -1;
  }
  return 0;
}

int wireProbe(WireWait *w, const char *address, char *zWhy, int nWhy) {
  char zLeader[WIRE_ADDRESS_MAX];
  char zErr[512];
  int fd, down, rc;
  if (dialClassified(w, address, &fd, &down, zErr, sizeof(zErr)) != 0) {
    wireSetError(zWhy, nWhy, "%s", zErr);
    return down ? WIRE_PROBE_DOWN : WIRE_PROBE_UNSURE;
  }
  rc = askLeader(w, fd, WIRE_PROBE_TIMEOUT_S, zLeader, sizeof(zLeader), zErr, sizeof(zErr));
  close(fd);
  switch (rc) {
    case 0:
    case RT_FAILURE: /* a dqlite node, which turned the request down: it runs */
      wireSetError(zWhy, nWhy, "a dqlite node answers at %s", address);
      return WIRE_PROBE_ANSWERS;
    case RT_CLOSED:
      wireSetError(zWhy, nWhy, "%s took the connection and closed it: %s", address, zErr);
      return WIRE_PROBE_DOWN;
    case RT_TIMEOUT:
      wireSetError(zWhy, nWhy,
                   "%s took the connection but sent no reply within %d s (a paused or overloaded node "
                   "does not answer either; is %s a dqlite node?)",
                   address, WIRE_PROBE_TIMEOUT_S, address);
      return WIRE_PROBE_UNSURE;
    default: wireSetError(zWhy, nWhy, "%s: %s", address, zErr); return WIRE_PROBE_UNSURE;
  }
}

const char *wireRoleName(int role) {
  return role == WIRE_ROLE_VOTER ? "voter" : role == WIRE_ROLE_STANDBY ? "standby" : "spare";
}

int wireMembers(WireWait *w, int fd, WireMember *a, int nMax, int *pN, char *zErr, int nErr) {
  unsigned char body[8];
  WireBuf res;
  uint64_t n, nodeId, role;
  const char *z;
  bufPutU64(body, 1); /* format 1: with roles */
  if (wireRoundTrip(w, fd, REQ_CLUSTER, body, 8, RES_SERVERS, WIRE_ASK_TIMEOUT_S, &res, zErr, nErr) != 0) {
    return -1;
  }
  if (bufReadU64(&res, &n) != 0) goto malformed;
  if (n > (uint64_t)nMax) {
    wireSetError(zErr, nErr, "the leader lists %llu members, more than %d: not a pyevidence cluster?",
                 (unsigned long long)n, nMax);
    free(res.a);
    return -1;
  }
  for (uint64_t i = 0; i < n; i++) {
    if (bufReadU64(&res, &nodeId) != 0 || bufReadText(&res, &z) != 0 || bufReadU64(&res, &role) != 0 ||
        strlen(z) >= WIRE_ADDRESS_MAX || role > WIRE_ROLE_SPARE) {
      goto malformed;
    }
    a[i].id = nodeId;
    snprintf(a[i].address, sizeof(a[i].address), "%s", z);
    a[i].role = (int)role;
  }
  *pN = (int)n;
  free(res.a);
  return 0;
malformed:
  wireSetError(zErr, nErr, "malformed membership reply");
  free(res.a);
  return -1;
}

/* One request whose reply is EMPTY, with a body of `words` uint64 values. */
static int wireChange(WireWait *w, int fd, int type, const uint64_t *words, int nWords, char *zErr,
                      int nErr) {
  unsigned char body[16];
  WireBuf res;
  for (int i = 0; i < nWords; i++) bufPutU64(body + 8 * i, words[i]);
  if (wireRoundTrip(w, fd, type, body, (size_t)nWords * 8, RES_EMPTY, WIRE_COMMIT_TIMEOUT_S, &res, zErr,
                    nErr) != 0) {
    return -1;
  }
  free(res.a);
  return 0;
}

int wireAdd(WireWait *w, int fd, uint64_t id, const char *address, char *zErr, int nErr) {
  size_t n = 8 + 8 * textWords(address);
  unsigned char *body = calloc(1, n);
  WireBuf res;
  int rc;
  if (body == 0) {
    wireSetError(zErr, nErr, "out of memory");
    return -1;
  }
  bufPutU64(body, id);
  memcpy(body + 8, address, strlen(address));
  rc = wireRoundTrip(w, fd, REQ_ADD, body, n, RES_EMPTY, WIRE_COMMIT_TIMEOUT_S, &res, zErr, nErr);
  free(body);
  if (rc != 0) return -1;
  free(res.a);
  return 0;
}

int wireAssign(WireWait *w, int fd, uint64_t id, int role, char *zErr, int nErr) {
  const uint64_t words[2] = {id, (uint64_t)role};
  return wireChange(w, fd, REQ_ASSIGN, words, 2, zErr, nErr);
}

int wireRemove(WireWait *w, int fd, uint64_t id, char *zErr, int nErr) {
  return wireChange(w, fd, REQ_REMOVE, &id, 1, zErr, nErr);
}

int wireRetry(const char *const *seeds, int n_seeds, int timeout_ms, const sigset_t *stop, const char *doing,
              WireAttempt attempt, void *ctx, char *zErr, int nErr) {
  const long long started = wireNowMs(), deadline = started + timeout_ms;
  const struct timespec pause = {0, 200 * 1000 * 1000}, none = {0, 0};
  long long nextReport = started + 10000;
  WireWait w = {signalfd(-1, stop, SFD_CLOEXEC), 0};
  char zLast[1024] = ""; /* the reason of the last attempt a stop signal did not cut short */
  int rc = WIRE_FAILED;
  wireSetError(zErr, nErr, "no seed address given");
  for (int i = 0; n_seeds > 0; i++) {
    int sig;
    errno = 0;
    rc = attempt(&w, seeds[i % n_seeds], ctx, zErr, nErr);
    if (rc != WIRE_FAILED) break;
    if (!w.stopped) snprintf(zLast, sizeof(zLast), "%s", zErr);
    if (!w.stopped && wireNowMs() >= deadline) break;
    if (!w.stopped && wireNowMs() >= nextReport) {
      fprintf(stderr, "evidence_node: still trying to %s, for %lld s of %d: %s\n", doing,
              (wireNowMs() - started) / 1000, timeout_ms / 1000, zErr);
      nextReport += 10000;
    }
    /* Between attempts; at once if a stop signal is pending (it ended the attempt, or
    ** came between two). */
    sig = sigtimedwait(stop, 0, i % n_seeds == n_seeds - 1 && !w.stopped ? &pause : &none);
    if (sig > 0) {
      const char *zSig = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal";
      if (zLast[0]) {
        wireSetError(zErr, nErr, "%s; last: %s", zSig, zLast);
      } else {
        wireSetError(zErr, nErr, "%s", zSig);
      }
      rc = WIRE_STOPPED;
      break;
    }
    w.stopped = 0;
  }
  if (w.stopFd >= 0) close(w.stopFd);
  return rc;
}
