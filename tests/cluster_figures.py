"""The cluster figures of docs/cluster.md, measured again (not part of the test suite).

    .venv-3.13/bin/python tests/cluster_figures.py [--latency-ms 50]
    .venv-3.13/bin/python tests/cluster_figures.py --latency-ms 5 --load 40000 --batch 1000
    .venv-3.13/bin/python tests/cluster_figures.py --pages 100000 --batch 200

Starts three nodes on loopback, then: put and retrieve latency on the cluster and on a file
(both engines where built), and the time a put takes across the leader's SIGKILL, and retrieve
through the token index and by the scan on 10,000 records of the benchmark corpus. Prints a
Markdown table. With --load N it only loads N eligible records of the benchmark corpus (plus its
distractors), --batch records per put_many, and says how many writes came back in doubt: how large
a write the nodes' --latency-ms lets the leader ship (docs/cluster.md, "Limits"). With --pages N
it starts no cluster: it loads a file store the same way and prints how many pages a write
changed as the store grew (what a cluster's leader ships per write).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_cluster import Cluster, wal_pages_written

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


def _load(store: EvidenceStore, corpus: Corpus, eligible: int, batch_size: int) -> tuple[int, int]:
    """Puts the corpus's records, batch_size per put_many; returns how many records that was
    and how many writes came back in doubt (each is looked up and written again if it did not
    land, as the error says)."""
    records = list(corpus.records(eligible))
    doubts = 0
    for i in range(0, len(records), batch_size):
        batch = records[i : i + batch_size]
        while True:
            try:
                store.put_many(batch)
                break
            except StoreError as exc:  # in doubt: written or not, as the error says; look
                if "may or may not" not in str(exc):
                    raise
                doubts += 1
                last = batch[-1]
                if store.history(tenant=last.tenant, record_id=last.record_id):
                    break
    return len(records), doubts


def _write_sizes(path: Path, corpus: Corpus, eligible: int, batch_size: int) -> tuple[list[int], int]:
    """The same load into a file store: the pages each put_many wrote to the WAL (a cluster's
    leader ships the same pages, in one Raft entry), and the page size."""
    records = list(corpus.records(eligible))
    sizes = []
    with EvidenceStore(path) as store, closing(sqlite3.connect(path)) as side:
        for i in range(0, len(records), batch_size):
            batch = records[i : i + batch_size]
            sizes.append(wal_pages_written(side, lambda batch=batch: store.put_many(batch)))
        page_size = side.execute("PRAGMA page_size").fetchone()[0]
    return sizes, page_size


def _print_write_sizes(path: Path, eligible: int, batch_size: int) -> None:
    sizes, page_size = _write_sizes(path, Corpus.make(), eligible, batch_size)
    records = "1 record" if batch_size == 1 else f"{batch_size:,} records"
    print(f"| the store held | pages of a put_many of {records} |\n| ---: | ---: |")
    for held in (0, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000):
        if held % batch_size == 0 and held // batch_size < len(sizes):
            pages = sizes[held // batch_size]
            print(f"| {held:,} records | {pages:,} ({pages * page_size / 1e6:.1f} MB) |")


def _at_scale(store: EvidenceStore) -> str:
    """retrieve through the token index and by the scan, on the benchmark corpus: p50 over
    both query sets, each query asked three times."""
    corpus = Corpus.make()
    _, doubts = _load(store, corpus, SCALE_ELIGIBLE, SCALE_BATCH)
    timings: dict[str, list[float]] = {"index": [], "scan": []}
    for which in ("rare", "common"):
        for query in corpus.queries(which, 10):
            asked = dict(tenant=TENANT, revision=REVISION, query=query, now=NOW)
            for method in ("index", "scan"):
                for _ in range(3):
                    timings[method].append(_timed(lambda a=asked, m=method: store.retrieve(**a, method=m)))
            assert store.retrieve(**asked, method="index") == store.retrieve(**asked, method="scan")
    index, scan = (statistics.median(timings[m]) for m in ("index", "scan"))
    return (
        f"{index:.1f} ms through the index, {scan:.1f} ms by the scan ({scan / index:.0f}x);"
        f" {doubts} of its writes came back in doubt"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency-ms", default="50", help="each node's --latency-ms (default 50)")
    parser.add_argument(
        "--load", type=int, metavar="N", help="only load N eligible records, and count doubts"
    )
    parser.add_argument("--batch", type=int, default=SCALE_BATCH, help="records per put_many with --load")
    parser.add_argument(
        "--pages", type=int, metavar="N", help="no cluster: the pages each write changes as N records go in"
    )
    args = parser.parse_args()
    if args.pages:
        _print_write_sizes(Path(tempfile.mkdtemp()) / "file.db", args.pages, args.batch)
        return
    root = Path(tempfile.mkdtemp())
    cluster = Cluster.of_three(root, latency_ms=args.latency_ms)
    try:
        cluster.start()
        if args.load:
            with EvidenceStore(cluster.url("load")) as store:
                started = time.perf_counter()
                loaded, doubts = _load(store, Corpus.make(), args.load, args.batch)
                took = time.perf_counter() - started
            sizes, page_size = _write_sizes(root / "file.db", Corpus.make(), args.load, args.batch)
            pages = max(sizes)
            print(
                f"--latency-ms {args.latency_ms}: {args.load:,} eligible records (and distractors),"
                f" {args.batch} per put_many, in {took:.1f} s ({loaded / took:,.0f} records/s);"
                f" {doubts} writes came back in doubt."
                f" The largest write, loaded the same way into a file store, changed {pages:,} pages"
                f" ({pages * page_size / 1e6:.1f} MB)."
            )
            return
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
    print(f"Three nodes on loopback, --latency-ms {args.latency_ms}.\n")
    print("| | put, median (p95) | retrieve, median (p95) |\n| --- | --- | --- |")
    for name, put, read in rows:
        print(f"| {name} | {put} | {read} |")
    print(f"\nA put across the leader's SIGKILL returned after {failover / 1000:.2f} s.")
    print(f"retrieve at {SCALE_ELIGIBLE:,} eligible records on the cluster, p50: {scale}.")


if __name__ == "__main__":
    main()
