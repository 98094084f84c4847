"""Runs the benchmark: the token index, the scan, FTS5 and the floor, side by side.

Paths, for the same queries over the same corpus (bench/corpus.py):

- ``index``: the native engine's retrieve through the token index (the default);
- ``scan``: the native engine's retrieve with method="scan", scoring every eligible
  row: the reference the index must equal;
- ``python``: the Python engine's retrieve (its own index search);
- ``floor``: the scan's statement with token_overlap() replaced by a trivial score,
  what reading and counting the eligible rows costs before any scoring;
- ``fts5``: an FTS5 table of the same rows, built and queried as a SQLite user would
  (an OR of the query words, ORDER BY rank, the scope filtered by WHERE), a peer
  whose hits are not compared (its tokenizer and bm25 are not our rule).

Paths run interleaved (their order rotates every round). Every sample is one query,
so each figure is a median (p50) or a 99th percentile over queries and rounds; the
fast paths (index, fts5) repeat each query more often, so that their p99 means
something. The index's hits must equal the scan's, and the Python engine's the
native engine's, on every query; a mismatch fails the benchmark.
"""

from __future__ import annotations

import math
import os
import platform
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EvidenceError
from ..core.records import Record
from ..core.version import __version__
from ..store import EvidenceStore
from . import writes
from .corpus import NOW, REVISION, TENANT, Corpus

LIMIT = 10
# The native engine's scan statement (csrc/evidence_store.c, STMT_RANK), with
# token_overlap(?4, body) replaced by a score that reads the body and does nothing.
FLOOR_SQL = (
    "SELECT e.record_id, e.revision, e.kind, e.body, e.source, e.expires_at, top.score"
    " FROM (SELECT record_id, score FROM ("
    "  SELECT record_id, (body IS NOT NULL) AS score"
    "  FROM evidence_eligible(?1, ?2, ?3) LIMIT -1 OFFSET 0)"
    "  WHERE score > 0 ORDER BY score DESC, record_id LIMIT ?4) AS top"
    " JOIN evidence AS e ON e.tenant = ?1 AND e.record_id = top.record_id"
    " ORDER BY top.score DESC, top.record_id"
)
FTS5_DDL = (
    "CREATE VIRTUAL TABLE records USING fts5(tenant UNINDEXED, revision UNINDEXED, expires_at UNINDEXED,"
    " record_id UNINDEXED, body)"
)
# Plain ? placeholders, bound in order from a tuple (stdlib sqlite3 wants a mapping for ?N).
FTS5_QUERY = (
    "SELECT record_id, rank FROM records WHERE records MATCH ? AND tenant = ? AND revision = ?"
    " AND expires_at > ? ORDER BY rank LIMIT ?"
)
PATHS = ("index", "scan", "python", "floor", "fts5")
FAST_PATHS = ("index", "fts5")
FAST_REPEATS = 5  # each query of a fast path runs this many times a round


class BenchmarkFailed(EvidenceError):
    """The paths disagreed, or a path failed: the figures would mean nothing."""


@dataclass
class Progress:
    """A one-line progress bar on stderr (a line per step when stderr is not a terminal)."""

    total: int
    done: int = 0
    label: str = ""
    tty: bool = field(default_factory=lambda: sys.stderr.isatty())

    def step(self, label: str, n: int = 1) -> None:
        self.done += n
        self.label = label
        width = 30
        filled = width * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label}"
        if self.tty:
            sys.stderr.write("\r" + line[:100].ljust(100))
            if self.done >= self.total:
                sys.stderr.write("\n")
        elif self.done == self.total or self.done % max(self.total // 20, 1) == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _rounds(size: int) -> tuple[int, int]:
    """(rounds, queries per set): fewer where the scan takes a second or more per query."""
    if size <= 10_000:
        return 7, 10
    if size <= 100_000:
        return 5, 10
    return 3, 5


def build(path: Path, corpus: Corpus, size: int, progress: Progress) -> None:
    with EvidenceStore(path, engine="native") as store:
        for batch in _batches(corpus, size):
            store.put_many(batch)
            progress.step(f"building {size:,} rows", len(batch))


def build_fts5(path: Path, corpus: Corpus, size: int) -> None:
    """The FTS5 peer: the same rows, distractors included, in WAL mode, checkpointed."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(FTS5_DDL)
        for batch in _batches(corpus, size):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO records VALUES (?, ?, ?, ?, ?)",
                [(r.tenant, r.revision, r.expires_at, r.record_id, r.body) for r in batch],
            )
            conn.execute("COMMIT")
    finally:
        conn.close()


def _batches(corpus: Corpus, size: int, batch: int = 10_000) -> Any:
    pending: list[Record] = []
    for record in corpus.records(size):
        pending.append(record)
        if len(pending) == batch:
            yield pending
            pending = []
    if pending:
        yield pending


def _timed(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """(milliseconds, result) of call(*args)."""
    start = time.perf_counter_ns()
    result = call(*args)
    return (time.perf_counter_ns() - start) / 1e6, result


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0..100) of samples, nearest rank."""
    ordered = sorted(samples)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)]


def sizes_on_disk(path: Path) -> dict[str, int]:
    """Bytes of pyevidence's data (tables and their indexes) and of its token index, from
    dbstat on the checkpointed file."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        conn.close()
    index = sum(n for name, n in rows if name.startswith("evidence_index"))
    return {"file": path.stat().st_size, "token_index": index, "records": sum(n for _, n in rows) - index}


def _fts5_query(words: str) -> str:
    """The OR of the query's words, each quoted, as a user would write it."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words.split())


def measure_size(path: Path, fts5: Path, corpus: Corpus, size: int, progress: Progress) -> dict[str, Any]:
    rounds, per_set = _rounds(size)
    out: dict[str, Any] = {"eligible_rows": size, "rounds": rounds, "queries_per_set": per_set, "sets": {}}
    stores = {"python": EvidenceStore(path, engine="python"), "native": EvidenceStore(path, engine="native")}
    peer = sqlite3.connect(fts5)
    native, python = stores["native"], stores["python"]

    def retrieve(store: EvidenceStore, method: str) -> Callable[[str], Any]:
        return lambda q: store.retrieve(
            tenant=TENANT, revision=REVISION, query=q, now=NOW, limit=LIMIT, method=method
        )

    try:
        calls: dict[str, Callable[[str], Any]] = {
            "index": retrieve(native, "index"),
            "scan": retrieve(native, "scan"),
            "python": retrieve(python, "index"),
            "floor": lambda q: native.query(FLOOR_SQL, [TENANT, REVISION, NOW, LIMIT]),
            "fts5": lambda q: peer.execute(
                FTS5_QUERY, (_fts5_query(q), TENANT, REVISION, NOW, LIMIT)
            ).fetchall(),
        }
        for which in ("rare", "common"):
            queries = corpus.queries(which, per_set)
            samples: dict[str, list[float]] = {p: [] for p in PATHS}
            hits_seen = 0
            for r in range(rounds):
                order = PATHS[r % len(PATHS) :] + PATHS[: r % len(PATHS)]
                for q in queries:
                    results = {}
                    for p in order:
                        for _ in range(FAST_REPEATS if p in FAST_PATHS else 1):
                            ms, results[p] = _timed(calls[p], q)
                            samples[p].append(ms)
                    if results["index"] != results["scan"]:
                        raise BenchmarkFailed(f"the index and the scan disagree for {q!r} at {size:,} rows")
                    if results["python"] != results["index"]:
                        raise BenchmarkFailed(
                            f"python and native engines disagree for {q!r} at {size:,} rows"
                        )
                    hits_seen += len(results["index"].hits)
                    progress.step(f"{size:,} rows, {which} queries, round {r + 1}/{rounds}")
            p50 = {p: statistics.median(samples[p]) for p in PATHS}
            out["sets"][which] = {
                "p50_ms": p50,
                "p99_ms": {p: percentile(samples[p], 99) for p in PATHS},
                "samples": {p: len(samples[p]) for p in PATHS},
                "index_faster_than_fts5": p50["fts5"] / p50["index"],
                "index_faster_than_scan": p50["scan"] / p50["index"],
                "mean_hits_per_query": hits_seen / (rounds * len(queries)),
            }
        out["open_ms"] = {
            engine: statistics.median(_timed(_open_and_close, path, engine)[0] for _ in range(5))
            for engine in ("python", "native")
        }
        out["single_put_p50_ms"] = {engine: _single_put_p50(stores[engine], corpus) for engine in stores}
    finally:
        for store in stores.values():
            store.close()
        peer.close()
    out["bytes"] = {"pyevidence": sizes_on_disk(path), "fts5": fts5.stat().st_size}
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _single_put_p50(store: EvidenceStore, corpus: Corpus, count: int = 200) -> float:
    """The median time of one put() into the store as it is, each a new record of the
    eligible scope (the store grows by count records)."""
    times = []
    for i, record in enumerate(corpus.records(count)):
        fields = asdict(record) | {"record_id": f"single-{store.engine}-{i}"}
        start = time.perf_counter_ns()
        store.put(**fields)
        times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times)


def _open_and_close(path: Path, engine: str) -> None:
    EvidenceStore(path, engine=engine).close()


def _put_each(store: EvidenceStore, records: list[Record]) -> None:
    for record in records:
        store.put(**asdict(record))


def _put_batches(store: EvidenceStore, records: list[Record], size: int) -> None:
    for i in range(0, len(records), size):
        store.put_many(records[i : i + size])


def measure_puts(corpus: Corpus, tmp: Path, count: int = 4_000) -> dict[str, Any]:
    """Records per second: one put() per record (a quarter of count), and put_many() batches of 1,000."""
    records = list(corpus.records(count))
    single_count = max(count // 4, 1)
    figures: dict[str, Any] = {}
    for engine in ("python", "native"):
        single, batched = [], []
        for r in range(3):
            with EvidenceStore(tmp / f"puts-{engine}-{r}-a.db", engine=engine) as store:
                ms, _ = _timed(_put_each, store, records[:single_count])
                single.append(single_count / (ms / 1000))
            with EvidenceStore(tmp / f"puts-{engine}-{r}-b.db", engine=engine) as store:
                ms, _ = _timed(_put_batches, store, records, 1_000)
                batched.append(len(records) / (ms / 1000))
        figures[engine] = {
            "put_per_s": statistics.median(single),
            "put_many_per_s": statistics.median(batched),
        }
    return figures


def machine() -> dict[str, Any]:
    import sqlite3

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "sqlite_python": sqlite3.sqlite_version,
        "pyevidence": __version__,
    }


def run(
    sizes: list[int],
    seed: int = 7,
    workdir: Path | None = None,
    puts: int = 4_000,
    writes_of: Sequence[int] = (),
) -> dict[str, Any]:
    """The retrieve figures at each size, put() and put_many() rates, and the write
    section (bench/writes.py) at each number of eligible records in ``writes_of``, one
    size after the other."""
    corpus = Corpus.make(seed)
    total = sum(round(s / 0.8) for s in sizes) + sum(2 * _rounds(s)[0] * _rounds(s)[1] for s in sizes)
    progress = Progress(total)
    results: dict[str, Any] = {"machine": machine(), "seed": seed, "limit": LIMIT, "sizes": []}
    with tempfile.TemporaryDirectory(prefix="pyevidence-bench-", dir=workdir) as tmp:
        for size in sizes:
            path, fts5 = Path(tmp) / f"bench-{size}.db", Path(tmp) / f"fts5-{size}.db"
            build(path, corpus, size, progress)
            build_fts5(fts5, corpus, size)
            results["sizes"].append(measure_size(path, fts5, corpus, size, progress))
            path.unlink()
            fts5.unlink()
        results["puts"] = measure_puts(corpus, Path(tmp), puts)
        if writes_of:
            results["writes"] = [writes.measure(corpus, Path(tmp), n) for n in writes_of]
    return results
