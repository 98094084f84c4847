"""How often the nodes crash while the leadership changes under writes (not part of the test suite).

    .venv-3.13/bin/python tests/cluster_crashes.py --latency-ms 5 --events 300
    .venv-3.13/bin/python tests/cluster_crashes.py --latency-ms 50 --events 300

Starts three nodes on loopback and two writers (tests/cluster_writer.py), then, --events times: kills
the leader with SIGKILL and restarts it (--kills of the events, chosen at random), or asks the
cluster to move its leadership to a random node, with a short random pause between events. A node
that ends by itself with one of the known crashes of Debian 12's libraft and libdqlite
(docs/cluster.md, "Known crashes of Debian 12's dqlite") is restarted, as a supervisor would
restart it; a node that ends in any other way stops the run with its log. Prints how many crashes
the nodes' logs report.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_cluster import _CRASH_REPORT, ROOT, Cluster, start_writer

from pyevidence import EvidenceStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", default="5")
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--kills", type=float, default=0.4, help="the share of events that kill the leader")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("PYEVIDENCE_NODE", str(ROOT / "build" / "evidence_node"))
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cluster = Cluster.of_three(root, latency_ms=args.latency_ms)
        cluster.start()
        url = cluster.url()
        EvidenceStore(url).close()
        stop = root / "stop"
        writers = [start_writer(url, name, stop, root) for name in ("w1", "w2")]
        # The first events only once both writers write: opening a store needs a leader.
        deadline = time.monotonic() + 60
        while any(not (root / f"{n}.jsonl").read_text() for n in ("w1", "w2")):
            if time.monotonic() > deadline or any(w.poll() is not None for w in writers):
                sys.exit("the writers did not start writing")
            time.sleep(0.1)
        started = time.monotonic()
        try:
            for _ in range(args.events):
                cluster.supervise()  # restarts a known crash, fails on any other end of a node
                if rng.random() < args.kills:
                    leader = cluster.leader()
                    leader.kill()
                    time.sleep(rng.uniform(0.05, 0.4))
                    leader.start(join=[])
                else:
                    cluster.ask_transfer(rng.choice(cluster.nodes))  # refused in an election: go on
                time.sleep(rng.uniform(0.0, 0.3))
        finally:
            stop.touch()
            for writer in writers:
                if writer.wait(timeout=60) != 0:
                    sys.exit("a writer failed:\n" + "".join(e.read_text() for e in root.glob("*.err")))
            for node in cluster.running():
                node.stop()
        ops = sum(len((root / f"{n}.jsonl").read_text().splitlines()) for n in ("w1", "w2"))
        crashes = sum(len(_CRASH_REPORT.findall(node.log.read_text())) for node in cluster.nodes)
    print(
        f"--latency-ms {args.latency_ms}: {args.events} events ({args.kills:.0%} kills) in "
        f"{time.monotonic() - started:.0f} s, {ops} writes; known crashes, each restarted: {crashes}"
    )


if __name__ == "__main__":
    main()
