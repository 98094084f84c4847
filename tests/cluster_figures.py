"""The cluster figures of docs/cluster.md, measured again (not part of the test suite).

    .venv-cluster/bin/python tests/cluster_figures.py

Starts three nodes on loopback (--latency-ms 5), then: put and retrieve latency on the
cluster and on a file (both engines where built), and the time a put takes across the
leader's SIGKILL. Prints a Markdown table.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_cluster import Cluster, Node, _free_port

from pyevidence import EvidenceStore, native_available

ROUNDS = 300


def _record(i: int) -> dict[str, object]:
    return dict(
        tenant="t",
        record_id=f"r{i}",
        revision="v1",
        kind="runbook",
        body=f"queue lag on consumer {i}: restart the worker",
        source="rb://x",
        expires_at=100,
    )


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _latencies(store: EvidenceStore) -> tuple[str, str]:
    puts, reads = [], []
    for i in range(ROUNDS):
        puts.append(_timed(lambda i=i: store.put(**_record(i))))
        reads.append(_timed(lambda: store.retrieve(tenant="t", revision="v1", query="queue lag", now=1)))

    def shown(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} ms ({sorted(values)[int(len(values) * 0.95)]:.2f} ms)"

    return shown(puts), shown(reads)


def main() -> None:
    root = Path(tempfile.mkdtemp())
    nodes = [Node(i, f"127.0.0.1:{_free_port()}", root / f"n{i}", root / f"n{i}.log") for i in (1, 2, 3)]
    cluster = Cluster(nodes)
    try:
        nodes[0].start(join=[])
        for node in nodes[1:]:
            node.start(join=[nodes[0].address])
        rows = []
        with EvidenceStore(cluster.url("figures")) as store:
            rows.append(("cluster, 3 nodes", *_latencies(store)))
            leader = cluster.leader()
            leader.kill()
            failover = _timed(lambda: store.put(**_record(ROUNDS)))
        for engine in ("native", "python"):
            if engine == "native" and not native_available():
                continue
            with EvidenceStore(root / f"{engine}.db", engine=engine) as store:
                rows.append((f"file, {engine} engine", *_latencies(store)))
    finally:
        for node in cluster.running():
            node.stop()
    print("| | put, median (p95) | retrieve, median (p95) |\n| --- | --- | --- |")
    for name, put, read in rows:
        print(f"| {name} | {put} | {read} |")
    print(f"\nA put across the leader's SIGKILL returned after {failover / 1000:.2f} s.")


if __name__ == "__main__":
    main()
