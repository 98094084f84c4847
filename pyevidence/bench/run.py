"""Runs the benchmark: the Python engine, the native engine and the floor, side by side.

The floor is the native engine's retrieve with token_overlap() replaced by a
trivial score: the same statement (the top-k query over evidence_eligible,
reading every eligible body, its scan also counting them), so it is what
selecting, counting and reading the rows costs before any scoring.
Paths run interleaved (their order rotates every round) and each figure is the
median over rounds of the mean time per query, so a noisy neighbour moves all
paths alike. Every query's hits are compared between the Python and native
engines; a mismatch fails the benchmark.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EvidenceError
from ..core.records import Record
from ..core.version import __version__
from ..store import EvidenceStore
from . import writes
from .corpus import NOW, REVISION, TENANT, Corpus

LIMIT = 5
# The native engine's retrieve statement (csrc/evidence_store.c, STMT_RANK), with
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
PATHS = ("python", "native", "floor")


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
    """(rounds, queries per set): fewer where the Python engine takes seconds per query."""
    if size <= 10_000:
        return 7, 10
    if size <= 100_000:
        return 5, 4
    return 3, 3


def build(path: Path, corpus: Corpus, size: int, progress: Progress) -> None:
    with EvidenceStore(path, engine="native") as store:
        batch = []
        for record in corpus.records(size):
            batch.append(record)
            if len(batch) == 10_000:
                store.put_many(batch)
                progress.step(f"building {size:,} rows", len(batch))
                batch = []
        if batch:
            store.put_many(batch)
            progress.step(f"building {size:,} rows", len(batch))


def _timed(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """(milliseconds, result) of call(*args)."""
    start = time.perf_counter_ns()
    result = call(*args)
    return (time.perf_counter_ns() - start) / 1e6, result


def measure_size(path: Path, corpus: Corpus, size: int, progress: Progress) -> dict[str, Any]:
    rounds, per_set = _rounds(size)
    out: dict[str, Any] = {"eligible_rows": size, "rounds": rounds, "queries_per_set": per_set, "sets": {}}
    stores = {"python": EvidenceStore(path, engine="python"), "native": EvidenceStore(path, engine="native")}
    try:
        calls: dict[str, Callable[[str], Any]] = {
            "python": lambda q: stores["python"].retrieve(
                tenant=TENANT, revision=REVISION, query=q, now=NOW, limit=LIMIT
            ),
            "native": lambda q: stores["native"].retrieve(
                tenant=TENANT, revision=REVISION, query=q, now=NOW, limit=LIMIT
            ),
            "floor": lambda q: stores["native"].query(FLOOR_SQL, [TENANT, REVISION, NOW, LIMIT]),
        }
        for which in ("rare", "common"):
            queries = corpus.queries(which, per_set)
            per_round: dict[str, list[float]] = {p: [] for p in PATHS}
            hits_seen = 0
            for r in range(rounds):
                order = PATHS[r % 3 :] + PATHS[: r % 3]
                spent = dict.fromkeys(PATHS, 0.0)
                for q in queries:
                    results = {}
                    for p in order:
                        ms, results[p] = _timed(calls[p], q)
                        spent[p] += ms
                    if results["python"] != results["native"]:
                        raise BenchmarkFailed(
                            f"python and native engines disagree for query {q!r} at {size:,} rows"
                        )
                    if len(results["floor"]) != min(LIMIT, size):
                        raise BenchmarkFailed(f"the floor ranked {len(results['floor'])} rows for {q!r}")
                    hits_seen += len(results["native"])
                    progress.step(f"{size:,} rows, {which} queries, round {r + 1}/{rounds}")
                for p in PATHS:
                    per_round[p].append(spent[p] / len(queries))
            medians = {p: statistics.median(per_round[p]) for p in PATHS}
            out["sets"][which] = {
                "ms_per_query": medians,
                "us_per_eligible_row": {p: 1000 * medians[p] / size for p in PATHS},
                "native_speedup_over_python": medians["python"] / medians["native"],
                "native_over_floor": medians["native"] / medians["floor"],
                "mean_hits_per_query": hits_seen / (rounds * len(queries)),
                "all_rounds_ms": per_round,
            }
        out["open_ms"] = {
            engine: statistics.median(_timed(_open_and_close, path, engine)[0] for _ in range(5))
            for engine in ("python", "native")
        }
    finally:
        for store in stores.values():
            store.close()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


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
    sizes: list[int], seed: int = 7, workdir: Path | None = None, puts: int = 4_000, writes_of: int = 0
) -> dict[str, Any]:
    """The retrieve figures at each size, put() and put_many() rates, and, with
    ``writes_of`` eligible records, the write section (bench/writes.py)."""
    corpus = Corpus.make(seed)
    total = sum(round(s / 0.8) for s in sizes) + sum(2 * _rounds(s)[0] * _rounds(s)[1] for s in sizes)
    progress = Progress(total)
    results: dict[str, Any] = {"machine": machine(), "seed": seed, "limit": LIMIT, "sizes": []}
    with tempfile.TemporaryDirectory(prefix="pyevidence-bench-", dir=workdir) as tmp:
        for size in sizes:
            path = Path(tmp) / f"bench-{size}.db"
            build(path, corpus, size, progress)
            results["sizes"].append(measure_size(path, corpus, size, progress))
            path.unlink()
        results["puts"] = measure_puts(corpus, Path(tmp), puts)
        if writes_of:
            results["writes"] = writes.measure(corpus, Path(tmp), writes_of)
    return results
