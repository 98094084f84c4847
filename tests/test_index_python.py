"""The Python engine's token index: its writer leaves the tables the native engine's writer
and the schema's raw-SQL triggers leave, row for row; its search returns the scan's hits
(ids, scores, order, eligible_count) and the native engine's (storage/index/maintain.py,
storage/index/search.py)."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import rich_text
from tables import index_rows

from pyevidence import EvidenceStore, StoreError, native_available
from pyevidence.core.records import Record
from pyevidence.storage import sql_functions

WORDS = ["queue", "QUEUE", "lag", "disk", "ok", "i", "k", "\u0130", "\u212a", "\x00", "-"]
EXPIRIES = [0, 1, 255, 256, 65_535, 65_536, 1000, 2**32, 2**40 + 7, 2**63 - 1]
NOWS = [-(2**63), -1, 0, 1, 255, 256, 999, 1000, 65_536, 2**32, 2**63 - 2, 2**63 - 1]
QUERIES = ["queue", "queue lag", "lag disk ok i k", "kelvin k istanbul", "nothing", "i \u0130 - x"]


def record(tenant: str, record_id: str, revision: str, body: str, expires_at: int) -> Record:
    return Record(tenant, record_id, revision, "working", "." + body, "src://" + record_id, expires_at)


bodies = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join) | rich_text
records = st.builds(
    record,
    st.sampled_from(["a", "b"]),
    st.sampled_from(["r1", "r2", "r3", "r4", "r5"]),
    st.sampled_from(["v1", "v2"]),
    bodies,
    st.sampled_from(EXPIRIES),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), records),
        st.tuples(st.just("put_many"), st.lists(records, min_size=1, max_size=8)),
        st.tuples(st.just("forget"), st.sampled_from(["a", "b"]), st.sampled_from(["r1", "r2", "r3"])),
    ),
    max_size=12,
)


def apply(store: EvidenceStore, ops: Sequence[tuple[Any, ...]]) -> None:
    for op in ops:
        if op[0] == "put":
            r = op[1]
            store.put(
                tenant=r.tenant,
                record_id=r.record_id,
                revision=r.revision,
                kind=r.kind,
                body=r.body,
                source=r.source,
                expires_at=r.expires_at,
            )
        elif op[0] == "put_many":
            store.put_many(op[1])
        else:
            store.forget(tenant=op[1], record_id=op[2])


def engines() -> list[str]:
    return ["python", "native"] if native_available() else ["python"]


@contextmanager
def stores(ops: Sequence[tuple[Any, ...]]) -> Iterator[dict[str, tuple[Path, EvidenceStore]]]:
    """The same operations applied to a store of each engine."""
    with tempfile.TemporaryDirectory() as where, ExitStack() as stack:
        opened = {}
        for engine in engines():
            path = Path(where) / f"{engine}.db"
            store = stack.enter_context(EvidenceStore(path, engine=engine))
            apply(store, ops)
            opened[engine] = (path, store)
        yield opened


def answer(
    store: EvidenceStore, tenant: str, revision: str, now: int, query: str, limit: int, method: str
) -> Any:
    got = store.retrieve(tenant=tenant, revision=revision, now=now, query=query, limit=limit, method=method)
    return [
        (h.record_id, h.score, h.body, h.expires_at, h.version, h.citation) for h in got.hits
    ], got.eligible_count


@given(ops=operations)
def test_python_writes_leave_the_native_engines_index_and_search_the_scans_hits(
    ops: list[tuple[Any, ...]],
) -> None:
    with stores(ops) as opened:
        tables = {engine: index_rows(path) for engine, (path, _) in opened.items()}
        assert tables["python"] == tables.get("native", tables["python"])
        python = opened["python"][1]
        assert python.check_index().ok
        for tenant in ("a", "b", "c"):
            for revision in ("v1", "v2"):
                for now in NOWS:
                    for query in QUERIES:
                        for limit in (1, 3, 10):
                            expected = answer(python, tenant, revision, now, query, limit, "scan")
                            for _, store in opened.values():
                                assert answer(store, tenant, revision, now, query, limit, "index") == expected


@given(puts=st.lists(st.tuples(st.just("put"), records), max_size=10))
def test_single_puts_and_forgets_leave_the_raw_sql_triggers_index(puts: list[tuple[Any, ...]]) -> None:
    """A put of the Python engine, one record, writes what evidence_put's triggers write."""
    with tempfile.TemporaryDirectory() as where:
        ours, raw = Path(where) / "ours.db", Path(where) / "raw.db"
        with EvidenceStore(ours, engine="python") as store:
            apply(store, puts)
            store.forget(tenant="a", record_id="r1")
        EvidenceStore(raw, engine="python").close()
        conn = sqlite3.connect(raw, isolation_level=None)
        sql_functions.register(conn)
        for _, r in puts:
            conn.execute(
                "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (r.tenant, r.record_id, r.revision, r.kind, r.body, r.source, r.expires_at),
            )
        conn.execute("DELETE FROM evidence WHERE tenant = 'a' AND record_id = 'r1'")
        conn.close()
        assert index_rows(ours) == index_rows(raw)


def test_put_many_with_repeated_and_moving_records_matches_the_native_engine() -> None:
    batch_one = [
        record("a", "r1", "v1", "queue lag", 10),
        record("a", "r2", "v1", "disk queue", 2**40),
        record("b", "r1", "v2", "ok", 0),
        record("a", "r1", "v1", "queue queue disk", 10),  # repeated: only the last counts
    ]
    batch_two = [
        record("a", "r1", "v2", "moved lag", 300),  # moves scope
        record("a", "r2", "v1", "disk", 2**40 + 1),  # same scope, other tokens and expiry
        record("a", "r3", "v3", "new scope", 5),
        record("a", "r3", "v1", "changed its mind queue", 5),
        record("b", "r1", "v2", "ok", 0),  # unchanged
    ]
    ops = [("put_many", batch_one), ("put_many", batch_two), ("forget", "a", "r2"), ("put_many", batch_one)]
    with stores(ops) as opened:
        tables = {engine: index_rows(path) for engine, (path, _) in opened.items()}
        assert tables["python"] == tables.get("native", tables["python"])
        scopes = [row[:3] for row in tables["python"]["evidence_index_scopes"]]
        assert scopes == [("a", "v1", 1), ("a", "v2", 3), ("b", "v2", 2)]
        assert opened["python"][1].check_index().ok


def test_a_many_way_tie_is_walked_in_record_id_order(tmp_path: Path) -> None:
    """Ties too many for one lookup each are resolved by the walk in record_id order."""
    with EvidenceStore(tmp_path / "s.db", engine="python") as store:
        rows = [
            record("a", f"r{n:05d}", "v1", "queue" if n % 3 else "queue lag", 5 + n % 7) for n in range(5000)
        ]
        store.put_many(rows[::-1])
        for now in (0, 5, 8, 11, 12):
            for query, limit in (("queue", 10), ("queue lag", 10), ("lag", 3)):
                scan = answer(store, "a", "v1", now, query, limit, "scan")
                assert answer(store, "a", "v1", now, query, limit, "index") == scan


def test_an_index_out_of_step_is_named_with_reindex(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine="python") as store:
        store.put_many([record("a", "r1", "v1", "queue", 10), record("a", "r2", "v1", "queue lag", 10)])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE evidence_index_scopes SET docs = 0, next_doc = 0")  # numbers it never gave
    conn.commit()
    conn.close()
    with EvidenceStore(path, engine="python") as store:
        with pytest.raises(StoreError, match="reindex"):
            store.retrieve(tenant="a", revision="v1", now=0, query="queue", limit=10)
        with pytest.raises(StoreError, match="nothing was written; rebuild it with `pyevidence reindex`"):
            store.put(
                tenant="a", record_id="r1", revision="v1", kind="working", body="x", source="s", expires_at=1
            )
        store.reindex()
        assert answer(store, "a", "v1", 0, "queue", 10, "index") == answer(
            store, "a", "v1", 0, "queue", 10, "scan"
        )


def test_large_batches_write_the_native_engines_bitsets() -> None:
    """Batches big enough that a chunk's docset becomes a bitset, both for documents new to
    their scope and for kept documents gaining and losing tokens in the same chunk."""
    first = [record("a", f"r{n:04d}", "v1", f"queue lag w{n % 40}", 10 + n % 5) for n in range(3000)]
    second = (
        [record("a", f"r{n:04d}", "v2", "queue moved", 10) for n in range(0, 300)]  # into a new scope
        + [record("a", f"r{n:04d}", "v1", f"queue extra w{n % 7}", 12) for n in range(300, 700)]  # changed
        + [record("a", f"r{n:04d}", "v1", "extra lag", 11) for n in range(3000, 3500)]  # new, same chunk
    )
    with stores([("put_many", first), ("put_many", second)]) as opened:
        tables = {engine: index_rows(path) for engine, (path, _) in opened.items()}
        assert tables["python"] == tables.get("native", tables["python"])
        python = opened["python"][1]
        assert python.check_index().ok
        for query in ("queue", "extra", "extra lag w3", "moved"):
            for revision in ("v1", "v2"):
                scan = answer(python, "a", revision, 11, query, 10, "scan")
                assert answer(python, "a", revision, 11, query, 10, "index") == scan


def test_batches_over_several_chunks_and_many_scopes_write_the_native_engines_index() -> None:
    """The native writer groups a batch's changes by scope, token and chunk with a counting
    sort, or with qsort when a batch spans very many scopes: both must give the Python
    engine's tables. Changed records in every chunk lose and gain tokens in one batch."""
    first = [record("a", f"r{n:05d}", "v1", f"queue w{n % 40} k{n % 3}", 10 + n % 5) for n in range(9000)]
    changed = [record("a", f"r{n:05d}", "v1", f"queue w{n % 41} extra", 11) for n in range(0, 9000, 3)]
    many_scopes = [record("a", f"s{n:04d}", f"rev{n}", f"alone u{n} x{n % 9}", 12) for n in range(400)]
    again = [record("a", f"r{n:05d}", "v1", f"lag w{n % 13}", 10) for n in range(1, 9000, 5)]
    ops = [("put_many", first), ("put_many", changed + many_scopes), ("put_many", again)]
    with stores(ops) as opened:
        tables = {engine: index_rows(path) for engine, (path, _) in opened.items()}
        assert tables["python"] == tables.get("native", tables["python"])
        assert len(tables["python"]["evidence_index_scopes"]) == 401
        python = opened["python"][1]
        assert python.check_index().ok
        for query in ("queue", "extra w3", "lag w7", "alone u17"):
            for revision in ("v1", "rev17"):
                scan = answer(python, "a", revision, 11, query, 10, "scan")
                for _, store in opened.values():
                    assert answer(store, "a", revision, 11, query, 10, "index") == scan


def test_batches_across_an_era_boundary_write_the_native_engines_index() -> None:
    """The postings' key leads with the era (chunk >> 3): a batch whose new documents straddle
    two eras (numbers 32,760 to 32,779 here, after numbers skipped as moves leave them), then
    one that changes documents of both eras and of era 0's first chunk, leave the same tables
    on both engines (the native writer sorts by scope, era, token and chunk), and a search
    reads every era."""
    first = [record("a", f"r{n:03d}", "v1", f"queue w{n % 4}", 10) for n in range(10)]
    crossing = [record("a", f"s{n:03d}", "v1", f"queue lag w{n % 3}", 10 + n % 2) for n in range(20)]
    changed = [record("a", f"r{n:03d}", "v1", f"lag w{n % 5}", 11) for n in range(0, 10, 2)] + [
        record("a", f"s{n:03d}", "v1", f"queue moved w{n % 2}", 10) for n in range(0, 20, 3)
    ]
    with tempfile.TemporaryDirectory() as where:
        tables, paths = {}, {}
        for engine in engines():
            path = paths[engine] = Path(where) / f"{engine}.db"
            with EvidenceStore(path, engine=engine) as store:
                store.put_many(first)
            with sqlite3.connect(path) as conn:
                conn.execute("UPDATE evidence_index_scopes SET next_doc = 32760")
            conn.close()
            with EvidenceStore(path, engine=engine) as store:
                store.put_many(crossing)
                store.put_many(changed)
            tables[engine] = index_rows(path)
        assert tables["python"] == tables.get("native", tables["python"])
        assert {row[1] for row in tables["python"]["evidence_index_postings"]} == {0, 1}
        for engine, path in paths.items():
            with EvidenceStore(path, engine=engine) as store:
                assert store.check_index().ok
                for query in ("queue", "lag w1", "moved w0", "w2"):
                    scan = answer(store, "a", "v1", 10, query, 10, "scan")
                    assert scan[0] and answer(store, "a", "v1", 10, query, 10, "index") == scan
