"""The cluster figures of docs/cluster.md, measured again (not part of the test suite).

    .venv-3.13/bin/python tests/cluster_figures.py

Starts three nodes on loopback (--latency-ms 5), then: put and retrieve latency on the
cluster and on a file (both engines where built), and the time a put takes across the
leader's SIGKILL, and retrieve through the token index and by the scan on 10,000 records of
the benchmark corpus. Prints a Markdown table.
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

from pyevidence import EvidenceStore, StoreError, native_available
from pyevidence.bench.corpus import NOW, REVISION, TENANT, Corpus

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


SCALE_ELIGIBLE = 10_000  # the benchmark corpus's records (plus its 20% distractors)
SCALE_BATCH = 200  # each write's pages (its records, their versions and index rows) in one Raft entry


def _at_scale(store: EvidenceStore) -> str:
    """retrieve through the token index and by the scan, on the benchmark corpus: p50 over
    both query sets, each query asked three times."""
    corpus = Corpus.make()
    records = list(corpus.records(SCALE_ELIGIBLE))
    for i in range(0, len(records), SCALE_BATCH):
        batch = records[i : i + SCALE_BATCH]
        while True:
            try:
                store.put_many(batch)
                break
            except StoreError as exc:  # in doubt: written or not, as the error says; look
                if "may or may not" not in str(exc):
                    raise
                last = batch[-1]
                if store.history(tenant=last.tenant, record_id=last.record_id):
                    break
    timings: dict[str, list[float]] = {"index": [], "scan": []}
    for which in ("rare", "common"):
        for query in corpus.queries(which, 10):
            asked = dict(tenant=TENANT, revision=REVISION, query=query, now=NOW)
            for method in ("index", "scan"):
                for _ in range(3):
                    timings[method].append(_timed(lambda a=asked, m=method: store.retrieve(**a, method=m)))
            assert store.retrieve(**asked, method="index") == store.retrieve(**asked, method="scan")
    index, scan = (statistics.median(timings[m]) for m in ("index", "scan"))
    return f"{index:.1f} ms through the index, {scan:.1f} ms by the scan ({scan / index:.0f}x)"


def main() -> None:
    root = Path(tempfile.mkdtemp())
    nodes = [Node(i, f"127.0.0.1:{_free_port()}", root / f"n{i}", root / f"n{i}.log") for i in (1, 2, 3)]
    cluster = Cluster(nodes)
    try:
        nodes[0].start(join=[])
        for node in nodes[1:]:
            node.start(join=[nodes[0].address])
        rows = []
        with EvidenceStore(cluster.url("scale")) as store:
            scale = _at_scale(store)
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
    print(f"retrieve at {SCALE_ELIGIBLE:,} eligible records on the cluster, p50: {scale}.")


if __name__ == "__main__":
    main()
