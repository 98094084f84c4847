/*
** evidence_node.c: one node of a replicated pyevidence cluster, on dqlite.
**
**   evidence_node --id 1 --address 127.0.0.1:9001 --data /tmp/n1 --new-cluster
**   evidence_node --id 2 --address 127.0.0.1:9002 --data /tmp/n2 --join 127.0.0.1:9001
**   evidence_node --id 3 --address 127.0.0.1:9003 --data /tmp/n3 --join 127.0.0.1:9001
**   evidence_node --members --cluster 127.0.0.1:9001       (which answer, who leads)
**   evidence_node --remove 3 --cluster 127.0.0.1:9001      (node 3 is down for good)
**
** Runs in the foreground, logs to stderr (a crash report too, evidence_crash.c),
** stops cleanly on SIGTERM or SIGINT (exit status 0). Node 1 starts a new
** cluster, on its first start and only when told so (--new-cluster); every other
** node joins one through --join (any member; several may be given), once, on its
** first start (evidence_join.c). A restarted node keeps its id and data directory
** and needs neither; given --join, it checks it is still a voter. With --members
** or --remove it runs no node: it lists the members (evidence_members.c), or
** asks the cluster to let a member that is down go (evidence_remove.c), and exits.
**
** Why --new-cluster. libdqlite starts a new cluster whenever node 1 starts on an
** empty data directory. Node 1 restarted after losing its directory would then
** lead a cluster of its own, acknowledge writes there, and lose them when the
** other members bring it back into theirs.
**
** How the functions get there. dqlite cannot register SQL functions through its
** API, and its nodes open their SQLite connections themselves. So before the
** node starts, this program registers pyevidence's extension init function
** with sqlite3_auto_extension(): SQLite then runs it on every connection the
** process opens, dqlite's included, and token_overlap(), evidence_eligible,
** evidence_sha256() (which schema.sql's triggers call) exist on all of them.
** Clients (pyevidence/storage/engines/cluster_engine.py) create the schema through the
** cluster; every node runs this same program, so the leader of any term has them.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dqlite.h>

#include "../evidence_sqlite.h"
#include "evidence_address.h"
#include "evidence_crash.h"
#include "evidence_join.h"
#include "evidence_members.h"
#include "evidence_remove.h"

#define MAX_SEEDS 16
#define JOIN_TIMEOUT_MS 120000   /* an election, then the new node catching up */
#define REMOVE_TIMEOUT_MS 60000  /* an election at most */
#define MEMBERS_TIMEOUT_MS 10000 /* a status is wanted now, or the reason there is none */

/* evidence_ext.c: the extension's entry point, built into this program with -DSQLITE_CORE. */
int sqlite3_evidence_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

typedef struct NodeOptions {
  unsigned long long id;
  const char *address;
  const char *data;
  const char *seeds[MAX_SEEDS];
  int n_seeds;
  unsigned latency_ms;          /* 0: dqlite's default */
  int new_cluster;              /* --new-cluster: node 1 may start a cluster on an empty directory */
  unsigned long long remove_id; /* --remove N: no node runs; member N leaves the cluster */
  int members;                  /* --members: no node runs; the members are listed */
  const char *cluster[MAX_SEEDS];
  int n_cluster;
} NodeOptions;

static void usage(FILE *out) {
  fprintf(out,
          "usage: evidence_node --id N --address HOST:PORT --data DIR [--new-cluster | --join HOST:PORT "
          "...] [--latency-ms MS]\n"
          "       evidence_node --members --cluster HOST:PORT ...\n"
          "       evidence_node --remove N --cluster HOST:PORT ...\n"
          "  --id N             this node's id, a positive integer; 1 starts a new cluster\n"
          "  --new-cluster      start a new cluster (node 1's first start only: an empty data\n"
          "                     directory is otherwise refused, as a member that lost its data)\n"
          "  --address H:P      where clients and the other nodes reach this node\n"
          "  --data DIR         this node's data directory (created if missing)\n"
          "  --join H:P         a member of the cluster to join (repeatable)\n"
          "  --latency-ms MS    the network's one-way latency: followers elect a new leader after\n"
          "                     15 x MS without a heartbeat (default 3 s), and a node busy with a\n"
          "                     large write misses them; 50 on loopback, more across machines\n"
          "  --members          run no node: print the members as JSON, which answer, who leads\n"
          "  --remove N         run no node: remove member N, which must be down, from the cluster\n"
          "                     (a machine gone for good); exits once the cluster committed it\n"
          "  --cluster H:P      with --members or --remove: a running member to ask (repeatable)\n");
}

static int parseUnsigned(const char *z, unsigned long long max, unsigned long long *out) {
  char *end;
  unsigned long long v;
  if (z == 0 || *z < '0' || *z > '9') return -1;
  errno = 0;
  v = strtoull(z, &end, 10);
  if (errno != 0 || *end != 0 || v == 0 || v > max) return -1;
  *out = v;
  return 0;
}

static unsigned optionBit(const char *flag) {
  return strcmp(flag, "--id") == 0            ? 1u
         : strcmp(flag, "--address") == 0     ? 2u
         : strcmp(flag, "--data") == 0        ? 4u
         : strcmp(flag, "--latency-ms") == 0  ? 8u
         : strcmp(flag, "--remove") == 0      ? 16u
         : strcmp(flag, "--new-cluster") == 0 ? 32u
         : strcmp(flag, "--members") == 0     ? 64u
                                              : 0u;
}

/* Returns 0, or 2 (the usage exit status) after saying what was wrong. */
static int parseOptions(int argc, char **argv, NodeOptions *o) {
  char zWhy[256];
  unsigned seen = 0; /* the single-valued options given so far */
  memset(o, 0, sizeof(*o));
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : 0;
    unsigned long long n;
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strcmp(flag, "--new-cluster") == 0 || strcmp(flag, "--members") == 0) {
      if ((seen & optionBit(flag)) != 0) {
        fprintf(stderr, "evidence_node: %s is given twice; give it once\n", flag);
        return 2;
      }
      seen |= optionBit(flag);
      if (flag[2] == 'n') {
        o->new_cluster = 1;
      } else {
        o->members = 1;
      }
      continue;
    }
    if (strcmp(flag, "--id") != 0 && strcmp(flag, "--address") != 0 && strcmp(flag, "--data") != 0 &&
        strcmp(flag, "--join") != 0 && strcmp(flag, "--latency-ms") != 0 && strcmp(flag, "--remove") != 0 &&
        strcmp(flag, "--cluster") != 0) {
      fprintf(stderr, "evidence_node: unknown option %s\n", flag);
      usage(stderr);
      return 2;
    }
    if (value == 0) {
      fprintf(stderr, "evidence_node: %s needs a value\n", flag);
      return 2;
    }
    i++;
    if (strcmp(flag, "--join") != 0 && strcmp(flag, "--cluster") != 0 && (seen & optionBit(flag)) != 0) {
      fprintf(stderr, "evidence_node: %s is given twice; give it once\n", flag);
      return 2;
    }
    seen |= optionBit(flag);
    if (strcmp(flag, "--id") == 0) {
      if (parseUnsigned(value, ~0ULL, &o->id) != 0) {
        fprintf(stderr, "evidence_node: --id must be a positive integer, got %s\n", value);
        return 2;
      }
    } else if (strcmp(flag, "--address") == 0) {
      o->address = value;
    } else if (strcmp(flag, "--data") == 0) {
      o->data = value;
    } else if (strcmp(flag, "--remove") == 0) {
      if (parseUnsigned(value, ~0ULL, &o->remove_id) != 0) {
        fprintf(stderr, "evidence_node: --remove must be a member's id, a positive integer, got %s\n", value);
        return 2;
      }
    } else if (strcmp(flag, "--join") == 0 || strcmp(flag, "--cluster") == 0) {
      const char **list = flag[2] == 'j' ? o->seeds : o->cluster;
      int *n_list = flag[2] == 'j' ? &o->n_seeds : &o->n_cluster;
      if (*n_list == MAX_SEEDS) {
        fprintf(stderr, "evidence_node: at most %d %s addresses\n", MAX_SEEDS, flag);
        return 2;
      }
      if (evidenceAddressCheck(value, 0, zWhy, sizeof(zWhy)) != 0) {
        fprintf(stderr, "evidence_node: %s %s\n", flag, zWhy);
        return 2;
      }
      list[(*n_list)++] = value;
    } else {
      if (parseUnsigned(value, 3600000, &n) != 0) {
        fprintf(stderr, "evidence_node: --latency-ms must be 1..3600000, got %s\n", value);
        return 2;
      }
      o->latency_ms = (unsigned)n;
    }
  }
  if (o->remove_id != 0 || o->members) {
    const char *mode = o->members ? "--members" : "--remove";
    if (o->members && o->remove_id != 0) {
      fprintf(stderr, "evidence_node: --members and --remove are two commands; give one\n");
      return 2;
    }
    if ((seen & ~(16u | 64u)) != 0 || o->n_seeds > 0) {
      fprintf(stderr,
              "evidence_node: %s runs no node and takes only --cluster HOST:PORT (a running member to "
              "ask); leave out --id, --address, --data, --join, --new-cluster and --latency-ms\n",
              mode);
      return 2;
    }
    if (o->n_cluster == 0) {
      fprintf(stderr, "evidence_node: %s needs --cluster HOST:PORT of a running member\n", mode);
      return 2;
    }
    return 0;
  }
  if (o->n_cluster > 0) {
    fprintf(stderr,
            "evidence_node: --cluster names the cluster for --members or --remove; a node joins a cluster "
            "with --join\n");
    return 2;
  }
  if (o->id == 0 || o->address == 0 || o->data == 0) {
    fprintf(stderr, "evidence_node: --id, --address and --data are required\n");
    usage(stderr);
    return 2;
  }
  if (evidenceAddressCheck(o->address, 1, zWhy, sizeof(zWhy)) != 0) {
    fprintf(stderr, "evidence_node: --address %s\n", zWhy);
    return 2;
  }
  if (o->id == 1 && o->n_seeds > 0) {
    fprintf(stderr,
            "evidence_node: node 1 starts a new cluster and cannot --join one; "
            "give the joining node another id\n");
    return 2;
  }
  if (o->new_cluster && o->id != 1) {
    fprintf(stderr,
            "evidence_node: --new-cluster starts a cluster from node 1 (dqlite's rule): give --id 1, or "
            "--join HOST:PORT to join a running cluster\n");
    return 2;
  }
  return 0;
}

/* The data directory, if it exists, is one this user can use: 0, or the exit status after
** saying what is wrong (dqlite itself reported a file there, or a directory it cannot write,
** as "out of memory"). A missing one is made by makeDataDirectory, once the options hold. */
static int checkDataDirectory(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT) return 0;
    fprintf(stderr, "evidence_node: cannot read data directory %s: %s\n", dir, strerror(errno));
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "evidence_node: --data %s is not a directory; name a directory (created if missing)\n",
            dir);
    return 2;
  }
  if (access(dir, R_OK | W_OK | X_OK) != 0) {
    fprintf(stderr, "evidence_node: cannot use data directory %s: %s; let this user write to it\n", dir,
            strerror(errno));
    return 1;
  }
  return 0;
}

static int makeDataDirectory(const char *dir) {
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "evidence_node: cannot create data directory %s: %s\n", dir, strerror(errno));
    return 1;
  }
  return 0;
}

/* Whether the data directory holds a node's raft state already (a restart). */
static int hasRaftState(const char *dir) {
  static const char *const azFiles[] = {"metadata1", "metadata2"};
  char path[4096];
  struct stat st;
  for (size_t i = 0; i < sizeof(azFiles) / sizeof(azFiles[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, azFiles[i]);
    if (stat(path, &st) == 0) return 1;
  }
  return 0;
}

static int stopNode(dqlite_node *node, int status) {
  if (dqlite_node_stop(node) != 0) {
    fprintf(stderr, "evidence_node: stopping the node failed: %s\n", dqlite_node_errmsg(node));
    status = 1;
  }
  dqlite_node_destroy(node);
  return status;
}

/* SIGTERM and SIGINT into *stop, blocked, for sigwait() or a signalfd to take; a closed
** socket is an error of its write, not a SIGPIPE. */
static void blockStopSignals(sigset_t *stop) {
  signal(SIGPIPE, SIG_IGN);
  sigemptyset(stop);
  sigaddset(stop, SIGTERM);
  sigaddset(stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, stop, 0);
}

/* --remove: asks the cluster to remove a member that is down. Exit status 0 when it is
** removed or was not a member, 1 when it could not be removed. */
static int removeMember(const NodeOptions *o) {
  sigset_t stopSignals;
  char zMsg[4096];
  int rc;
  blockStopSignals(&stopSignals);
  rc = evidenceRemove(o->remove_id, o->cluster, o->n_cluster, REMOVE_TIMEOUT_MS, &stopSignals, zMsg,
                      sizeof(zMsg));
  if (rc == 0) {
    printf("%s\n", zMsg);
    return fflush(stdout) == 0 ? 0 : 1;
  }
  if (rc == REMOVE_ABSENT) {
    fprintf(stderr, "evidence_node: %s\n", zMsg);
    return 0;
  }
  if (rc == REMOVE_STOPPED) {
    fprintf(stderr,
            "evidence_node: stopped (%s) before node %llu's removal was confirmed; run the command again "
            "to find out: it removes the node, or says it is not a member\n",
            zMsg, o->remove_id);
  } else {
    fprintf(stderr, "evidence_node: cannot remove node %llu: %s\n", o->remove_id, zMsg);
  }
  return 1;
}

/* --members: the membership as one line of JSON on stdout. Exit status 0 when a leader
** answered (whatever the members), 1 when none did within MEMBERS_TIMEOUT_MS. */
static int listMembers(const NodeOptions *o) {
  sigset_t stopSignals;
  char zErr[1024];
  int rc;
  blockStopSignals(&stopSignals);
  rc =
      evidenceMembers(o->cluster, o->n_cluster, MEMBERS_TIMEOUT_MS, &stopSignals, stdout, zErr, sizeof(zErr));
  if (rc != 0) {
    fprintf(stderr, "evidence_node: cannot list the members: %s%s%s\n", rc == WIRE_STOPPED ? "stopped (" : "",
            zErr, rc == WIRE_STOPPED ? ")" : "");
    return 1;
  }
  if (fflush(stdout) != 0) {
    fprintf(stderr, "evidence_node: cannot write the members: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  NodeOptions o;
  dqlite_node *node = 0;
  sigset_t stopSignals;
  char zErr[1024];
  int sig = 0, restarted, rc;

  if ((rc = parseOptions(argc, argv, &o)) != 0) return rc;
  if (o.members) return listMembers(&o);
  if (o.remove_id != 0) return removeMember(&o);
  if ((rc = checkDataDirectory(o.data)) != 0) return rc;
  restarted = hasRaftState(o.data);
  if (!restarted && o.id == 1 && !o.new_cluster) {
    fprintf(stderr,
            "evidence_node: node 1 has no state in %s: to start a new cluster, give --new-cluster "
            "(its first start only); if node 1 was a member of a cluster and lost its data, it must "
            "not start an empty cluster under its id: start this node under a new id with --join "
            "HOST:PORT of a running member\n",
            o.data);
    return 2;
  }
  if (restarted && o.new_cluster) {
    /* Refused, not ignored: a start script or unit file that kept it would start a cluster of
    ** node 1's own the day its directory is lost, the very case --new-cluster guards against. */
    fprintf(stderr,
            "evidence_node: %s holds node %llu's state already: --new-cluster is for node 1's first "
            "start only; restart it without --new-cluster, and keep it out of start scripts and unit "
            "files\n",
            o.data, o.id);
    return 2;
  }
  if (!restarted && o.id != 1 && o.n_seeds == 0) {
    fprintf(stderr,
            "evidence_node: node %llu has no cluster yet: give --join HOST:PORT of a running node "
            "(node 1 starts a new cluster, with --new-cluster)\n",
            o.id);
    return 2;
  }
  if ((rc = makeDataDirectory(o.data)) != 0) return rc;

  evidenceCrashReportInstall(o.id);
  /* Before any connection exists, and so before dqlite opens its own. */
  if ((rc = sqlite3_auto_extension((void (*)(void))sqlite3_evidence_init)) != SQLITE_OK) {
    fprintf(stderr, "evidence_node: cannot register the evidence extension: %s\n", sqlite3_errstr(rc));
    return 1;
  }
  /* Signals are taken by sigwait() below; dqlite's threads inherit this mask. */
  blockStopSignals(&stopSignals);

  /* dqlite says nothing when it cannot listen (libdqlite 1.11): find out first. */
  if (evidenceAddressBindable(o.address, zErr, sizeof(zErr)) != 0) {
    fprintf(stderr, "evidence_node: cannot start node %llu: %s\n", o.id, zErr);
    return 1;
  }
  if (dqlite_node_create(o.id, o.address, o.data, &node) != 0) {
    fprintf(stderr, "evidence_node: cannot create node %llu: %s\n", o.id,
            node ? dqlite_node_errmsg(node) : "out of memory");
    if (node) dqlite_node_destroy(node);
    return 1;
  }
  if (dqlite_node_set_bind_address(node, o.address) != 0 ||
      (o.latency_ms > 0 && dqlite_node_set_network_latency_ms(node, o.latency_ms) != 0) ||
      dqlite_node_start(node) != 0) {
    const char *zWhy = dqlite_node_errmsg(node);
    fprintf(stderr, "evidence_node: cannot start node %llu on %s: %s\n", o.id, o.address,
            zWhy && *zWhy ? zWhy : "dqlite gave no reason (check the data directory and the address)");
    dqlite_node_destroy(node);
    return 1;
  }
  fprintf(stderr, "evidence_node: node %llu listening on %s, data in %s%s\n", o.id, o.address, o.data,
          restarted ? " (restarted)" : "");

  if (o.n_seeds > 0) {
    rc = evidenceJoin(o.id, o.address, !restarted, o.seeds, o.n_seeds, JOIN_TIMEOUT_MS, &stopSignals, zErr,
                      sizeof(zErr));
    if (rc == 0) {
      fprintf(stderr, "evidence_node: node %llu is a voter of the cluster\n", o.id);
    } else if (rc == JOIN_STOPPED) {
      fprintf(stderr, "evidence_node: node %llu stopping before it joined (%s)\n", o.id, zErr);
      return stopNode(node, 0);
    } else if (restarted && rc != JOIN_REFUSED) {
      /* It is a member already; the cluster may simply be electing without it. */
      fprintf(stderr, "evidence_node: could not confirm membership (%s); serving anyway\n", zErr);
    } else {
      fprintf(stderr, "evidence_node: cannot join the cluster: %s\n", zErr);
      return stopNode(node, 1);
    }
  }
  fprintf(stderr, "evidence_node: node %llu ready\n", o.id);

  while (sigwait(&stopSignals, &sig) != 0) {
  }
  fprintf(stderr, "evidence_node: node %llu stopping (%s)\n", o.id, sig == SIGTERM ? "SIGTERM" : "SIGINT");
  rc = stopNode(node, 0);
  if (rc == 0) fprintf(stderr, "evidence_node: node %llu stopped\n", o.id);
  return rc;
}
