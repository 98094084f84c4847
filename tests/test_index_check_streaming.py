"""check_index reads a page at a time and holds no list as long as the store
(pyevidence/storage/index/check.py). Its comparison of the expiry counts streams a scope's
rows in expires_at order, one bucket per level, and must name what the plain model it
replaced names (every (level, bucket) counted in a dict), whatever the expiries and the
damage; its lists of document problems must be counted in full and listed in order, across
page boundaries."""

from __future__ import annotations

import sqlite3
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceStore
from pyevidence.core.records import Record
from pyevidence.storage.index import check

LEVELS = range(8)
INT64_MAX = 2**63 - 1
# expiries at the edges of the levels' buckets (256 ** L) and of int64
EDGES = sorted({0, 1, 255, 256, 257, INT64_MAX} | {256**level + d for level in range(1, 8) for d in (-1, 0)})
expiries = st.one_of(st.sampled_from(EDGES), st.integers(0, 70_000), st.integers(0, INT64_MAX))


def _store(path: Path, engine: str, expires: list[int]) -> None:
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(
            [
                Record("t", f"r{i}", "v1", "runbook", "restart the queue", "s", e)
                for i, e in enumerate(expires)
            ]
        )


def _model(conn: sqlite3.Connection) -> list[str]:
    """The expiry problems as the dict model finds them, in (level, bucket) order."""
    expected: Counter[tuple[int, int]] = Counter()
    for (expires_at,) in conn.execute("SELECT expires_at FROM evidence_current"):
        for level in LEVELS:
            expected[level, expires_at >> (8 * level)] += 1
    held = {
        (level, bucket): rows
        for level, bucket, rows in conn.execute("SELECT level, bucket, rows FROM evidence_index_expiry")
    }
    return [
        f"level {level}, bucket {bucket}: the index counts {held.get((level, bucket), 0)} rows,"
        f" the scope has {expected.get((level, bucket), 0)}"
        for level, bucket in sorted(held.keys() | expected.keys())
        if held.get((level, bucket), 0) != expected.get((level, bucket), 0)
    ]


# A change to one count: ("set", level, bucket, rows) writes it (a new bucket or a wrong
# count), ("drop", level, n) deletes the level's n-th count (modulo how many it has).
damage = st.lists(
    st.one_of(
        st.tuples(
            st.just("set"),
            st.sampled_from(LEVELS),
            st.one_of(st.sampled_from(EDGES), st.integers(0, 300)),
            st.integers(1, 5),
        ),
        st.tuples(st.just("drop"), st.sampled_from(LEVELS), st.integers(0, 1000)),
    ),
    max_size=6,
)


def _damage(conn: sqlite3.Connection, changes: list[tuple[object, ...]]) -> None:
    for change in changes:
        if change[0] == "set":
            _, level, bucket, rows = change
            conn.execute(
                "INSERT INTO evidence_index_expiry VALUES (1, ?, ?, ?)"
                " ON CONFLICT (scope, level, bucket) DO UPDATE SET rows = excluded.rows",
                (level, bucket, rows),
            )
        else:
            _, level, n = change
            buckets = [
                b
                for (b,) in conn.execute(
                    "SELECT bucket FROM evidence_index_expiry WHERE level = ? ORDER BY bucket", (level,)
                )
            ]
            if buckets:
                conn.execute(
                    "DELETE FROM evidence_index_expiry WHERE level = ? AND bucket = ?",
                    (level, buckets[n % len(buckets)]),
                )
    conn.commit()


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expires=st.lists(expiries, min_size=1, max_size=12), changes=damage, page=st.integers(1, 4))
def test_the_streamed_expiry_check_names_what_the_dict_model_names(
    engine: str,
    monkeypatch: pytest.MonkeyPatch,
    expires: list[int],
    changes: list[tuple[object, ...]],
    page: int,
) -> None:
    monkeypatch.setattr(check, "_BATCH", page)  # page boundaries inside the rows and the counts
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.db"
        _store(path, engine, expires)
        conn = sqlite3.connect(path)
        _damage(conn, changes)
        wanted = _model(conn)
        conn.close()
        with EvidenceStore(path, engine=engine) as store:
            checked = store.check_index()
    found = [p.detail for p in checked.problems if p.kind == "expiry_count_wrong"]
    assert found == wanted
    assert checked.problems_found == len(wanted) == len(checked.problems)
    assert all(p.tenant == "t" and p.revision == "v1" for p in checked.problems)


def test_many_wrong_counts_are_all_counted_and_the_first_ones_listed_in_order(
    engine: str, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    # 70 buckets at levels 0 and 1 each, 2 at level 2, 1 at each level above: 147 counts
    _store(path, engine, [1000 * i for i in range(70)])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE evidence_index_expiry SET rows = rows + 1")
    conn.commit()
    wanted = _model(conn)
    conn.close()
    with EvidenceStore(path, engine=engine) as store:
        checked = store.check_index()
    assert len(wanted) == 147 > check.MAX_REPORTED
    assert checked.problems_found == len(wanted)
    assert [p.detail for p in checked.problems] == wanted[: check.MAX_REPORTED]


@pytest.mark.parametrize("page", [7, 10_000])
def test_long_lists_of_document_problems_are_counted_in_full_and_listed_in_order(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    monkeypatch.setattr(check, "_BATCH", page)
    path = tmp_path / "e.db"
    _store(path, engine, list(range(5, 48)))  # documents 0 to 42 of scope 1
    conn = sqlite3.connect(path)
    # the scope's row says 3 documents and next_doc 3: 40 rows are numbered past it
    conn.execute("UPDATE evidence_index_scopes SET docs = 3, next_doc = 3")
    conn.commit()
    past = conn.execute("SELECT doc, record_id FROM evidence_current WHERE doc >= 3 ORDER BY doc").fetchall()
    conn.close()
    with EvidenceStore(path, engine=engine) as store:
        checked = store.check_index()
    details = [
        "the scope row says 3 documents; the scope has 43 current rows",
        *(f"record {record_id!r} has document {doc}, next_doc is 3" for doc, record_id in past),
    ]
    assert checked.problems_found == 1 + 40 == len(details)
    assert [p.detail for p in checked.problems] == details[: check.MAX_REPORTED]
