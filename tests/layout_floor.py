"""What the schema's layout alone lets put_many reach (not part of the test suite).

    .venv-3.13/bin/python tests/layout_floor.py 100000 [--batch 10000]

Loads the benchmark corpus (N eligible records and the distractors) with the Python engine's
put_many, a batch at a time, and records every statement the engine runs with its parameters.
After each batch it replays those statements, and only those, into a second store that is
empty at first, and times the replay. The replay does SQLite's part of each put_many and
nothing else: the same rows into the same B-trees, the same reads, one transaction per batch,
with the triggers and CHECK constraints off as the engine's unchecked batches have them. It
does not tokenize, hash, validate or queue: its rate is the layout's floor. The replay goes
through Python's sqlite3, whose binding of each value a C writer pays less for, so the script
also times the same rows given to statements that write nothing, and prints the floor less
that part: a bound no writer of the layout can beat (it subtracts a little too much, as a C
writer also pays for running each statement). It prints them beside FTS5's insert and the
plain executemany of the write benchmark
(pyevidence/bench/writes.py), loaded in the same process right after it. Run it with a Python
whose sqlite3 has setconfig (3.12 and later), as the engine's unchecked batches need it.

It replays each batch a second time, into a third store, with one change: the batch's
postings (one upsert per token and chunk) are written as a segment in the manner of FTS5,
their (token, chunk, docset) entries in token order packed into blocks of about 4,000 bytes,
a row per block and a row per block's first entry. That is the write side of step 1 of
docs/performance.md ("What is left between put_many and the targets"), measured as an upper
bound: the packing is not timed, and a search would have to read every segment of a scope
until the segments are merged, which is not measured here. It also prints how many postings
rows the load wrote and how many the table holds at the end: a batch rewrites the docsets of
the chunks it shares with the batches before it, and those rewrites are all that folding
segments into the docsets later could save.

With --current-by-doc it replays each batch once more, into a fourth store whose current rows
are keyed by (tenant, revision, doc) and which has no evidence_index_docs: the engine's
statements on evidence_current run on that table instead, and its writes of
evidence_index_docs are left out. That is schema version 12's layout, measured before it was
built (docs/performance.md, "Schema 12").
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tables import table_rows

from pyevidence import EvidenceStore
from pyevidence.bench.corpus import Corpus
from pyevidence.bench.writes import WRITE
from pyevidence.storage import schema, sql_functions
from pyevidence.storage.engines import python_engine
from pyevidence.storage.index import maintain


class Recorder:
    """A connection that keeps each statement it runs, and its parameters, in ``log``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.log: list[tuple[str, str, Any]] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self.log.append(("one", sql, tuple(params)))
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        rows = [tuple(row) for row in rows]
        self.log.append(("many", sql, rows))
        return self.conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def _replay_connection(path: Path) -> sqlite3.Connection:
    """The second store's file, opened as the engine opens its own, with the triggers and the
    CHECK constraints off (the engine's statements carry their own rows)."""
    EvidenceStore(path, engine="python").close()  # the schema, as a new store has it
    conn = sqlite3.connect(path, isolation_level=None)
    sql_functions.register(conn)
    conn.create_function("evidence_writer_vouches", 0, lambda: 1)
    for pragma in schema._BEFORE_CHECK + schema._after_check():
        conn.execute(pragma)
    assert python_engine._SETCONFIG is not None and python_engine._ENABLE_TRIGGER is not None
    python_engine._SETCONFIG(conn, python_engine._ENABLE_TRIGGER, False)
    conn.execute("PRAGMA ignore_check_constraints = 1")
    return conn


_APPEND_SQL = maintain._POSTING_APPEND_SQL
_SEGMENT_DDL = (
    "CREATE TABLE stand_in_segment_blocks (block INTEGER PRIMARY KEY, entries BLOB NOT NULL) STRICT",
    # a block's first entry: a token with more entries than a block holds starts several blocks
    "CREATE TABLE stand_in_segment_terms (scope INTEGER NOT NULL, segment INTEGER NOT NULL,"
    " first_token TEXT NOT NULL, first_chunk INTEGER NOT NULL, block INTEGER NOT NULL,"
    " PRIMARY KEY (scope, segment, first_token, first_chunk)) STRICT, WITHOUT ROWID",
)
_BLOCK_BYTES = 4000


def _as_segments(
    log: list[tuple[str, str, Any]], segment: int, block_numbers: Iterator[int]
) -> list[tuple[str, str, Any]]:
    """``log`` with its postings appends (a statement per scope and era) in place of one
    segment of blocks (the docstring), at the place of the first of them, its blocks numbered
    from ``block_numbers``."""
    appended = [row for _how, sql, params in log if sql == _APPEND_SQL for row in params]
    out: list[tuple[str, str, Any]] = []
    for how, sql, params in log:
        if sql != _APPEND_SQL:
            out.append((how, sql, params))
        elif appended:
            out += _segment(appended, segment, block_numbers)
            appended = []
    return out


def _segment(appended: list[Any], segment: int, block_numbers: Iterator[int]) -> list[tuple[str, str, Any]]:
    """The statements that write the postings rows ``appended`` as one segment."""
    blocks: list[tuple[int, bytes]] = []
    terms: list[tuple[int, int, str, int, int]] = []
    block = bytearray()
    first: tuple[int, str, int] | None = None
    rows = sorted(appended, key=lambda row: (row[0], row[2], row[3]))
    for at, (scope, _era, token, chunk, docs) in enumerate(rows, 1):
        if first is None:
            first = (scope, token, chunk)
        block += token.encode() + b"\0" + struct.pack("<IH", chunk, len(docs)) + docs
        if len(block) >= _BLOCK_BYTES or at == len(rows):  # a full block, or the last one
            number = next(block_numbers)
            blocks.append((number, bytes(block)))
            terms.append((first[0], segment, first[1], first[2], number))
            block, first = bytearray(), None
    return [
        ("many", "INSERT INTO stand_in_segment_blocks VALUES (?, ?)", blocks),
        ("many", "INSERT INTO stand_in_segment_terms VALUES (?, ?, ?, ?, ?)", terms),
    ]


# The current rows keyed by document number (--current-by-doc): a stand-in for a layout in which
# evidence_current is stored in (tenant, revision, doc) order and also maps a document number to
# its record, so that evidence_index_docs is not needed. Its column names are evidence_current's,
# so the engine's statements run on it with the table's name changed.
_CURRENT_BY_DOC_DDL = (
    "CREATE TABLE stand_in_current (tenant TEXT NOT NULL, revision TEXT NOT NULL, doc INTEGER NOT NULL,"
    " record_id TEXT NOT NULL, expires_at INTEGER NOT NULL, chain_seq INTEGER NOT NULL,"
    " PRIMARY KEY (tenant, revision, doc)) STRICT, WITHOUT ROWID",
    "CREATE UNIQUE INDEX stand_in_current_by_record ON stand_in_current (tenant, record_id)",
)


def _as_current_by_doc(log: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """``log`` for the stand-in of --current-by-doc: no writes of evidence_index_docs, and
    every other statement on stand_in_current instead of evidence_current."""
    out = []
    for how, sql, params in log:
        if "evidence_index_docs" in sql and not sql.lstrip().upper().startswith("SELECT"):
            continue
        out.append((how, sql.replace("evidence_current", "stand_in_current"), params))
    return out


def _replay(
    conn: sqlite3.Connection, log: list[tuple[str, str, Any]], seconds: dict[str, float], rows: dict[str, int]
) -> None:
    """Runs the statements of ``log``, adding the time of each to ``seconds`` by its text and
    the rows it was given to ``rows``."""
    clock = time.perf_counter
    for how, sql, params in log:
        if sql.lstrip().upper().startswith("PRAGMA"):
            continue  # the unchecked switch: off for the whole replay already
        started = clock()
        if how == "many":
            conn.executemany(sql, params)
        else:
            conn.execute(sql, params).fetchall()
        seconds[sql] = seconds.get(sql, 0.0) + clock() - started
        rows[sql] = rows.get(sql, 0) + (len(params) if how == "many" else 1)


def _driver_seconds(conn: sqlite3.Connection, log: list[tuple[str, str, Any]]) -> float:
    """The time Python's sqlite3 takes to hand ``log``'s parameters to SQLite: each statement's
    rows given, in the same calls, to a statement of as many parameters that writes nothing.
    (A C writer binds the same values too, for less; so this is at most what it would save.)"""
    clock = time.perf_counter
    spent = 0.0
    conn.execute("BEGIN")  # as the replay's statements run: inside a transaction
    for how, sql, params in log:
        width = len(params[0]) if how == "many" and params else len(params)
        if sql.lstrip().upper().startswith("PRAGMA") or not width:
            continue
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS sink{width} ({', '.join(f'c{n}' for n in range(width))})"
        )
        sink = f"INSERT INTO temp.sink{width} SELECT {', '.join('?' * width)} WHERE 0"
        started = clock()
        if how == "many":
            conn.executemany(sink, params)
        else:
            conn.execute(sink, params).fetchall()
        spent += clock() - started
    conn.execute("COMMIT")
    return spent


def _contents(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of each of the store's tables (tests/tables.py reads them)."""
    conn = sqlite3.connect(path)
    try:
        names = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema"
                " WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
    finally:
        conn.close()
    return table_rows(path, names)


def _row(writer: str, rate: float, path: Path | None = None) -> None:
    size = f"{path.stat().st_size / 1e6:8.1f}" if path is not None else ""
    print(f"{writer:<44} {rate:>10,.0f} {size}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("eligible", type=int, help="eligible records of the corpus (distractors are added)")
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument(
        "--current-by-doc",
        action="store_true",
        help="also replay into the stand-in of the current rows keyed by document number",
    )
    args = parser.parse_args()
    if not python_engine.CAN_WRITE_UNCHECKED:
        sys.exit("this Python's sqlite3 has no setconfig: run the script with Python 3.12 or later")
    records = list(Corpus.make().records(args.eligible))
    batches = [records[i : i + args.batch] for i in range(0, len(records), args.batch)]
    with tempfile.TemporaryDirectory() as tmp:
        replay_path = Path(tmp) / "replay.db"
        replay = _replay_connection(replay_path)
        segments_path = Path(tmp) / "segments.db"
        segments = _replay_connection(segments_path)
        for ddl in _SEGMENT_DDL:
            segments.execute(ddl)
        segment_seconds: dict[str, float] = {}
        by_doc_path = Path(tmp) / "current-by-doc.db"
        by_doc = _replay_connection(by_doc_path) if args.current_by_doc else None
        if by_doc is not None:
            for ddl in _CURRENT_BY_DOC_DDL:
                by_doc.execute(ddl)
        by_doc_seconds: dict[str, float] = {}
        block_numbers = itertools.count(1)
        driver = sqlite3.connect(":memory:", isolation_level=None)
        driver_seconds = segment_driver_seconds = 0.0
        engine_seconds = 0.0
        by_statement: dict[str, float] = {}
        rows_by_statement: dict[str, int] = {}
        with EvidenceStore(Path(tmp) / "engine.db", engine="python") as store:
            engine = store._engine
            recorder = Recorder(engine._conn)
            engine._conn = recorder
            real_checks = engine._schema_checks

            def checks_on_the_real_connection(*, on: bool) -> None:
                engine._conn = recorder.conn
                try:
                    real_checks(on=on)
                finally:
                    engine._conn = recorder

            engine._schema_checks = checks_on_the_real_connection
            for number, batch in enumerate(batches, 1):
                recorder.log.clear()
                started = time.perf_counter()
                store.put_many(batch)
                engine_seconds += time.perf_counter() - started
                _replay(replay, recorder.log, by_statement, rows_by_statement)
                driver_seconds += _driver_seconds(driver, recorder.log)
                as_segments = _as_segments(recorder.log, number, block_numbers)
                _replay(segments, as_segments, segment_seconds, {})
                segment_driver_seconds += _driver_seconds(driver, as_segments)
                if by_doc is not None:
                    _replay(by_doc, _as_current_by_doc(recorder.log), by_doc_seconds, {})
        replay.close()  # checkpoints the WAL
        segments.close()
        if by_doc is not None:
            by_doc.close()
        if _contents(replay_path) != _contents(Path(tmp) / "engine.db"):
            sys.exit("the replay's tables differ from the engine's: the figures would mean nothing")
        replay_seconds = sum(by_statement.values())
        statements = sum(rows_by_statement.values())
        print(
            f"{len(records):,} records in batches of {args.batch:,};"
            f" {statements / len(records):.1f} rows or reads a record"
        )
        # A batch rewrites the docsets of the chunks it shares with the batches before it: what
        # folding segments into the docsets could save is the rows written beyond those kept.
        written = sum(n for sql, n in rows_by_statement.items() if "INTO evidence_index_postings" in sql)
        with closing(sqlite3.connect(replay_path)) as conn:  # sqlite3's own `with` does not close
            kept = conn.execute("SELECT count(*) FROM evidence_index_postings").fetchone()[0]
        print(
            f"postings rows: {written / len(records):.2f} a record written,"
            f" {kept / len(records):.2f} a record in the table at the end ({written / kept:.2f}x)"
        )
        print(f"{'writer':<44} {'records/s':>10} {'MB':>8}")
        _row("put_many, Python engine (while recording)", len(records) / engine_seconds)
        _row("the layout floor (its statements replayed)", len(records) / replay_seconds, replay_path)
        segment_rate = len(records) / sum(segment_seconds.values())
        _row("the floor with the postings as segments", segment_rate, segments_path)
        if by_doc is not None:
            _row(
                "the floor with current rows by document",
                len(records) / sum(by_doc_seconds.values()),
                by_doc_path,
            )
        _row("the floor less the driver's part", len(records) / (replay_seconds - driver_seconds))
        segments_less_driver = sum(segment_seconds.values()) - segment_driver_seconds
        _row("the floor as segments less the driver's part", len(records) / segments_less_driver)
        for peer in ("fts5", "plain"):
            path = Path(tmp) / f"{peer}.db"
            started = time.perf_counter()
            WRITE[peer](path, batches)
            seconds = time.perf_counter() - started
            _row(peer, len(records) / seconds, path)
        print("\nthe floor's time by statement: µs a record, share, rows a record, µs a row")
        for sql, spent in sorted(by_statement.items(), key=lambda item: -item[1])[:8]:
            shown = " ".join(sql.split())
            count = rows_by_statement[sql]
            print(
                f"{spent / len(records) * 1e6:6.1f} {spent / replay_seconds:6.1%} {count / len(records):5.2f}"
                f" {spent / count * 1e6:6.2f}  {shown[:80]}"
            )


if __name__ == "__main__":
    main()
