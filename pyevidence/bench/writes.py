"""The write section of the benchmark: put_many on both engines beside two peers.

Every writer stores the same records of the corpus, in batches, into a new file
in WAL mode with synchronous=NORMAL (pyevidence's settings), one transaction per
batch:

- ``python`` and ``native``: EvidenceStore.put_many (history, hash chain, current rows);
- ``fts5``: an FTS5 table of the same columns, tokenizing every body, the way a
  SQLite user would index the text (the bar of issue 16);
- ``plain``: executemany into a table of the same columns with
  UNIQUE (tenant, record_id), no history and no hashing: the floor.

The writers run interleaved, their order rotating every round, and each figure
is the median over rounds, so a noisy neighbour moves them alike. The file size
(WAL checkpointed) is reported beside each rate.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.records import Record
from ..store import EvidenceStore
from .corpus import Corpus

WRITERS = ("python", "native", "fts5", "plain")
FTS5_DDL = (
    "CREATE VIRTUAL TABLE records USING fts5(tenant UNINDEXED, revision UNINDEXED, expires_at UNINDEXED,"
    " record_id UNINDEXED, kind UNINDEXED, body, source UNINDEXED)"
)
PLAIN_DDL = (
    "CREATE TABLE records (tenant TEXT NOT NULL, revision TEXT NOT NULL, expires_at INTEGER NOT NULL,"
    " record_id TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, source TEXT NOT NULL,"
    " UNIQUE (tenant, record_id))"
)
_INSERT = "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)"


def _with_store(engine: str) -> Callable[[Path, list[list[Record]]], None]:
    def write(path: Path, batches: list[list[Record]]) -> None:
        with EvidenceStore(path, engine=engine) as store:
            for batch in batches:
                store.put_many(batch)

    return write


@contextmanager
def sqlite_writer(path: Path, ddl: str) -> Iterator[Callable[[list[Record]], None]]:
    """A new file with the table of ``ddl`` (FTS5_DDL or PLAIN_DDL), and a function that writes
    one batch of records into it in one transaction, as a SQLite user would."""
    conn = sqlite3.connect(path, isolation_level=None)

    def write(batch: list[Record]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        rows = [(r.tenant, r.revision, r.expires_at, r.record_id, r.kind, r.body, r.source) for r in batch]
        conn.executemany(_INSERT, rows)
        conn.execute("COMMIT")

    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(ddl)
        yield write
    finally:
        conn.close()  # the last connection checkpoints the WAL into the file


def _with_sqlite(ddl: str) -> Callable[[Path, list[list[Record]]], None]:
    def write(path: Path, batches: list[list[Record]]) -> None:
        with sqlite_writer(path, ddl) as write_batch:
            for batch in batches:
                write_batch(batch)

    return write


WRITE: dict[str, Callable[[Path, list[list[Record]]], None]] = {
    "python": _with_store("python"),
    "native": _with_store("native"),
    "fts5": _with_sqlite(FTS5_DDL),
    "plain": _with_sqlite(PLAIN_DDL),
}


def measure(corpus: Corpus, tmp: Path, eligible: int, batch: int = 10_000, rounds: int = 3) -> dict[str, Any]:
    """Records per second and file bytes of each writer, medians over ``rounds``."""
    records = list(corpus.records(eligible))
    batches = [records[i : i + batch] for i in range(0, len(records), batch)]
    rates: dict[str, list[float]] = {w: [] for w in WRITERS}
    sizes: dict[str, int] = {}
    for r in range(rounds):
        for writer in WRITERS[r % len(WRITERS) :] + WRITERS[: r % len(WRITERS)]:
            path = tmp / f"writes-{writer}-{r}.db"
            start = time.perf_counter()
            WRITE[writer](path, batches)
            rates[writer].append(len(records) / (time.perf_counter() - start))
            sizes[writer] = path.stat().st_size
            path.unlink()
    per_s = {w: statistics.median(rates[w]) for w in WRITERS}
    return {
        "eligible_rows": eligible,
        "records": len(records),
        "batch": batch,
        "rounds": rounds,
        "records_per_s": per_s,
        "file_bytes": sizes,
        "native_over_fts5": per_s["native"] / per_s["fts5"],
        "native_over_plain": per_s["native"] / per_s["plain"],
        "python_over_plain": per_s["python"] / per_s["plain"],
        "all_rounds_per_s": rates,
    }


_NAMES = {
    "python": "put_many, Python engine",
    "native": "put_many, native engine",
    "fts5": "FTS5 insert",
    "plain": "plain executemany (floor)",
}


def markdown(figures: dict[str, Any]) -> list[str]:
    per_s, size = figures["records_per_s"], figures["file_bytes"]
    lines = [
        "",
        f"Writes: {figures['records']:,} records ({figures['eligible_rows']:,} eligible), batches of "
        f"{figures['batch']:,}, median of {figures['rounds']} rounds.",
        "",
        "| writer | records/s | vs plain | file MB |",
        "|---|---:|---:|---:|",
    ]
    for w in WRITERS:
        lines.append(
            f"| {_NAMES[w]} | {per_s[w]:,.0f} | {per_s[w] / per_s['plain']:.3f} | {size[w] / 1e6:.1f} |"
        )
    lines += ["", f"native / FTS5: {figures['native_over_fts5']:.2f}x."]
    return lines


def scale_markdown(sections: list[dict[str, Any]]) -> list[str]:
    """Each writer's rate at the largest size against its rate at the smallest, when the
    write section ran at more than one size."""
    if len(sections) < 2:
        return []
    small, large = sections[0], sections[-1]
    lines = [
        "",
        f"Writes at {large['eligible_rows']:,} eligible records against {small['eligible_rows']:,} "
        "(each size its own rounds, one after the other):",
        "",
        f"| writer | records/s at {small['eligible_rows']:,} | at {large['eligible_rows']:,} | ratio |",
        "|---|---:|---:|---:|",
    ]
    for w in WRITERS:
        a, b = small["records_per_s"][w], large["records_per_s"][w]
        lines.append(f"| {_NAMES[w]} | {a:,.0f} | {b:,.0f} | {b / a:.2f} |")
    return lines
