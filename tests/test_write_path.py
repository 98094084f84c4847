"""The batch writer (put and put_many on both engines) against the evidence_put trigger.

Both engines write versions and current rows directly, a batch at a time
(csrc/evidence_batch.c, PythonEngine._write); raw SQL writes through the
evidence_put view's trigger, one row at a time. The tables must come out the
same, byte for byte: same versions, hashes, chain and current rows.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from hypothesis import given, settings
from hypothesis import strategies as st
from tables import index_rows, table_rows

from pyevidence import Embedder, EvidenceStore, StoreError, native_available
from pyevidence.storage import schema, sql_functions
from pyevidence.storage.engines.python_engine import UNCHECKED_BATCH_MIN

ENGINES = ["python", "native"] if native_available() else ["python"]
ROOT = Path(__file__).resolve().parent.parent

_DUMP = (
    "SELECT * FROM evidence_versions ORDER BY tenant, chain_seq",
    "SELECT * FROM evidence ORDER BY tenant, record_id",
    "SELECT * FROM evidence_forgotten ORDER BY tenant, record_id",
)


def dump(path: Path) -> list[list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return [conn.execute(sql).fetchall() for sql in _DUMP]
    finally:
        conn.close()


def write_through_api(path: Path, engine: str, ops: list[Any]) -> None:
    with EvidenceStore(path, engine=engine) as store:
        for op in ops:
            if op[0] == "forget":
                store.forget(tenant=op[1], record_id=op[2])
            elif op[0] == "put":
                store.put(**op[1])
            else:
                store.put_many(op[1])


def write_through_trigger(path: Path, ops: list[Any]) -> None:
    """Every put as raw SQL does it: INSERT INTO evidence_put, one row at a time."""
    EvidenceStore(path, engine="python").close()  # creates the schema
    conn = sqlite3.connect(path, isolation_level=None)
    sql_functions.register(conn)
    try:
        for op in ops:
            if op[0] == "forget":
                conn.execute(schema.FORGET_SQL, {"1": op[1], "2": op[2]})
                continue
            conn.execute("BEGIN IMMEDIATE")
            for r in [op[1]] if op[0] == "put" else op[1]:
                fields = ("tenant", "record_id", "revision", "kind", "body", "source", "expires_at")
                conn.execute(
                    schema.PUT_SQL,  # numbered placeholders: a mapping, as Python 3.12+ wants
                    {str(n): r[name] for n, name in enumerate(fields, 1)},
                )
            conn.execute("COMMIT")
    finally:
        conn.close()


records = st.fixed_dictionaries(
    {
        "tenant": st.sampled_from(["team-a", "team-b", "tëam-ß"]),
        "record_id": st.sampled_from(["r1", "r2", "R1", "r\x001", "é"]),
        "revision": st.sampled_from(["v1", "v2"]),
        "kind": st.sampled_from(["working", "incident", "runbook"]),
        "body": st.text(min_size=1, max_size=40).filter(str.strip),
        "source": st.just("src://x"),
        "expires_at": st.integers(min_value=0, max_value=2**63 - 1),
    }
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), records),
        st.tuples(st.just("put_many"), st.lists(records, min_size=1, max_size=8)),
        st.tuples(st.just("forget"), st.sampled_from(["team-a", "team-b"]), st.sampled_from(["r1", "r2"])),
    ),
    min_size=1,
    max_size=6,
)


@given(ops=operations)
def test_batch_writer_stores_exactly_what_the_trigger_stores(ops: list[Any]) -> None:
    _assert_stored_as_by_the_trigger(ops)


# Records that make a batch large enough to be written unchecked (UNCHECKED_BATCH_MIN):
# the same ones in every batch, so the later batches replace them.
_FILLER = [record(record_id=f"filler{n:03d}", body=f"filler w{n % 5}") for n in range(UNCHECKED_BATCH_MIN)]


@settings(max_examples=25, deadline=None)
@given(ops=operations)
def test_unchecked_batches_store_exactly_what_the_trigger_stores(ops: list[Any]) -> None:
    """The same random operations, each put_many grown past UNCHECKED_BATCH_MIN, so that it
    runs with the schema's triggers and CHECKs off."""
    _assert_stored_as_by_the_trigger([(op[0], op[1] + _FILLER) if op[0] == "put_many" else op for op in ops])


def _assert_stored_as_by_the_trigger(ops: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        expected = Path(tmp) / "trigger.db"
        write_through_trigger(expected, ops)
        indexes = []
        for engine in ENGINES:
            path = Path(tmp) / f"{engine}.db"
            write_through_api(path, engine, ops)
            assert dump(path) == dump(expected), engine
            with EvidenceStore(path, engine=engine) as store:
                assert store.check_index().ok, engine
            indexes.append({**index_rows(path), **table_rows(path, ("evidence_current",))})
        assert all(index == indexes[0] for index in indexes)  # the engines agree, numbers too
        with EvidenceStore(expected, engine=ENGINES[-1]) as store:
            for tenant in ("team-a", "team-b", "tëam-ß"):
                assert store.verify(tenant=tenant).ok


@pytest.mark.parametrize("engine", ENGINES)
def test_put_many_failing_in_the_middle_writes_nothing(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "guarded.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(record_id="before"))
    before = dump(path)
    with EvidenceStore(path, engine=engine) as store:
        run = getattr(store._engine, "query", None) or store._engine._query
        run(  # a guard a DBA might add (for this connection only): refuse one id
            "CREATE TEMP TRIGGER no_x BEFORE INSERT ON main.evidence_current WHEN NEW.record_id = 'x'"
            " BEGIN SELECT RAISE(ABORT, 'x is reserved'); END"
        )
        batch = [record(record_id="a"), record(record_id="before", body="changed"), record(record_id="x")]
        with pytest.raises(StoreError, match="put_many failed: x is reserved"):
            store.put_many([*batch, record(record_id="z")])
        with pytest.raises(StoreError, match="put failed: x is reserved"):
            store.put(**record(record_id="x"))
        assert store.verify(tenant="team-a").ok
        store.put_many([record(record_id="after")])  # the chain goes on from where it was
        assert store.verify(tenant="team-a").ok
    versions, current, _ = dump(path)
    assert versions[: len(before[0])] == before[0] and len(versions) == len(before[0]) + 1
    assert {row[3] for row in current} == {"before", "after"}


def c_string_literals(path: Path) -> set[str]:
    """Every run of adjacent C string literals in the file, joined (no escapes used there)."""
    code = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    runs = re.findall(r'(?:"(?:[^"\\]|\\.)*"\s*)+', code)
    return {"".join(re.findall(r'"((?:[^"\\]|\\.)*)"', run)) for run in runs}


def test_the_batch_writers_statements_are_the_same_in_c_and_python() -> None:
    literals = c_string_literals(ROOT / "csrc" / "evidence_batch.c")
    for name in (
        "CHAIN_HEAD_SQL",
        "LATEST_VERSION_SQL",
        "FORGOTTEN_DROP_SQL",
        "VERSION_APPEND_SQL",
        "CURRENT_UPSERT_SQL",
        "VECTOR_DROP_SQL",
    ):
        assert getattr(schema, name) in literals, name


def _bytes_written() -> int:
    """Bytes this process has passed to write calls so far (Linux: /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("/proc/self/io has no wchar line")


@pytest.mark.skipif(
    not Path("/proc/self/io").exists(), reason="counts bytes written through /proc/self/io (Linux)"
)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_batch_writes_about_its_pages_not_a_statement_journal_per_row(tmp_path: Path, engine: str) -> None:
    """Write amplification: a batch's upserts each journal the pages they change for
    their own rollback. Kept in a temporary file, those journals made a batch of 10,000
    records write 7.5 times the whole file; kept in memory, the batch writes its pages to
    the WAL and the checkpoint copies them, about once the file (1.2 times here)."""
    records = [
        record(record_id=f"r{n:05d}", body=" ".join(f"w{(n * 7 + k * 13) % 2000}" for k in range(60)))
        for n in range(20_000)
    ]
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(records[:10_000])
        before = _bytes_written()
        store.put_many(records[10_000:])
        written = _bytes_written() - before
    assert written < 3 * path.stat().st_size


def test_the_unchecked_batch_size_is_the_same_in_c_and_python() -> None:
    code = (ROOT / "csrc" / "evidence_batch.c").read_text()
    defined = re.search(r"#define BATCH_UNCHECKED_MIN (\d+)", code)
    assert defined is not None and int(defined.group(1)) == UNCHECKED_BATCH_MIN


def _numbered(n: int, **overrides: object) -> dict[str, object]:
    return record(**{"record_id": f"r{n:03d}", "body": f"w{n % 7} w{n % 11} note{n} shared", **overrides})


def _batches_around(size: int) -> list[Any]:
    """put_many calls of ``size`` records that replace records (in the same revision and
    in another), repeat one within the batch, re-put a forgotten one, and write two
    tenants, with a single put and a forget between them."""
    first = [_numbered(n) for n in range(size)] + [record(tenant="team-b", record_id="b1")]
    second = [_numbered(n, revision="v2" if n % 2 else "v1", expires_at=2000) for n in range(0, size, 3)]
    second += [_numbered(n) for n in range(size, size + size - len(second) - 2)]
    second += [_numbered(1, body="repeated, first"), _numbered(1, body="repeated, last")]
    third = [_numbered(5, body="back after its forget")] + [_numbered(n) for n in range(1, size)]
    return [
        ("put_many", first),
        ("put", _numbered(2, body="a single put")),
        ("put_many", second),
        ("forget", "team-a", "r005"),
        ("put_many", third),
    ]


@pytest.mark.parametrize("size", [UNCHECKED_BATCH_MIN - 1, UNCHECKED_BATCH_MIN])
def test_batches_on_either_side_of_the_unchecked_size_store_what_the_trigger_stores(
    tmp_path: Path, size: int
) -> None:
    """A batch of UNCHECKED_BATCH_MIN records or more runs with the schema's triggers and
    CHECKs off; one record fewer, with them on. The rows must not tell the two apart."""
    ops = _batches_around(size)
    assert all(len(op[1]) >= size for op in ops if op[0] == "put_many")
    expected = tmp_path / "trigger.db"
    write_through_trigger(expected, ops)
    indexes = []
    for engine in ENGINES:
        path = tmp_path / f"{engine}.db"
        write_through_api(path, engine, ops)
        assert dump(path) == dump(expected), engine
        with EvidenceStore(path, engine=engine) as store:
            assert store.verify(tenant="team-a").ok and store.verify(tenant="team-b").ok
            assert store.check_index().ok
        indexes.append({**index_rows(path), **table_rows(path, ("evidence_current",))})
    assert all(index == indexes[0] for index in indexes)


TOY = Embedder("toy", lambda text: [float(len(text)), 1.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unchecked_batch_drops_the_vectors_of_the_records_it_replaces(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "vectors.db"
    with EvidenceStore(path, engine=engine, embedder=TOY) as store:
        store.put_many([_numbered(n) for n in range(3)])
    with EvidenceStore(path, engine=engine) as store:  # no embedder: the new versions get no vector
        store.put_many(
            [_numbered(n, body="replaced") for n in range(2)] + [_numbered(n) for n in range(3, 300)]
        )
    with sqlite3.connect(path) as conn:
        kept = conn.execute("SELECT record_id, version FROM evidence_vectors").fetchall()
    conn.close()
    assert kept == [("r002", 1)]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unchecked_batch_that_fails_writes_nothing_and_leaves_every_check_on(
    tmp_path: Path, engine: str
) -> None:
    path = tmp_path / "full.db"
    with EvidenceStore(path, engine=engine, embedder=TOY) as store:
        store.put(**record(record_id="kept"))
    before = dump(path)
    with EvidenceStore(path, engine=engine) as store:
        run = getattr(store._engine, "query", None) or store._engine._query
        pages = run("PRAGMA page_count")[0][0]
        run(f"PRAGMA max_page_count = {pages + 2}")  # the batch runs out of room halfway
        with pytest.raises(StoreError, match="put_many failed: database or disk is full"):
            store.put_many([_numbered(n) for n in range(UNCHECKED_BATCH_MIN)])
        assert dump(path) == before
        assert run("PRAGMA ignore_check_constraints")[0][0] == 0
        run("PRAGMA max_page_count = 1000000")
        # the triggers are on again: a single put drops the vector of the record it replaces
        store.put(**record(record_id="kept", body="replaced"))
        store.put_many([_numbered(n) for n in range(UNCHECKED_BATCH_MIN)])
        assert store.verify(tenant="team-a").ok and store.check_index().ok
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM evidence_vectors").fetchone() == (0,)
    conn.close()


def test_the_latest_version_lookups_read_one_record_each(tmp_path: Path) -> None:
    """The writers find each record's latest version, and history() and get_version() its
    versions, through its identity index and the history's key, never through a range of a
    tenant's rows: without ANALYZE's statistics SQLite 3.40 chose to read a tenant's whole
    evidence_current for the IN lists."""
    from pyevidence.storage import versions
    from pyevidence.storage.engines.python_engine import _LATEST_VERSIONS_SQL, _SEQ_CHUNK

    path = tmp_path / "plans.db"
    EvidenceStore(path, engine="python").close()
    conn = sqlite3.connect(path)
    try:
        chunk = ("r",) * _SEQ_CHUNK
        for sql, params in (
            (schema.LATEST_VERSION_SQL, ("t", "t", "r", "t", "r")),
            (_LATEST_VERSIONS_SQL, ("t", *chunk, "t", *chunk, "t")),
            (versions.HISTORY_SQL, {"1": "t", "2": "r"}),
            (versions.VERSION_SQL, {"1": "t", "2": "r", "3": 1}),
        ):
            steps = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            searches = [
                step
                for step in steps
                if step.startswith(("SEARCH", "SCAN")) and step not in ("SCAN walk", "SCAN CONSTANT ROW")
            ]
            keyed = ("(tenant=? AND record_id=?)", "(tenant=? AND chain_seq=?)")
            assert searches and all(any(key in step for key in keyed) for step in searches), steps
    finally:
        conn.close()
