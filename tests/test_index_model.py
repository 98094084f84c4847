"""The token index is exact: a model-based test per engine.

Random put / put_many / forget / raw-SQL put / raw-SQL DELETE / reopen sequences
(reopening sometimes on the other engine, so each engine reads and extends an index
the other wrote), and after each of them retrieve through the index equals
retrieve through the scan equals a plain model of the rules, hit for hit with the
eligible count; the index stays what a rebuild would make (check_index).
Then evidence_search(), the SQL face of the same search, against retrieve.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from strategies import rich_text

from pyevidence import EvidenceStore, Record, StoreError, native_available
from pyevidence.core.tokens import token_set
from pyevidence.storage import sql_functions

ENGINES = ["python"] + (["native"] if native_available() else [])
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

TENANTS = ["team-a", "team-b", "Team-A"]
REVISIONS = ["v1", "v2", "V1"]
# Ids whose BINARY order differs from their case-folded order, with NUL and a
# non-BMP character; few enough that batches repeat them.
IDS = ["r1", "r2", "R1", "Z", "é", "r\x001", "\U00010400"]

# Tokens every tenant and revision shares, in several cases; the two code points
# whose lowercase holds ASCII letters (U+0130 -> "i" + U+0307, U+212A -> "k"); digits;
# long tokens (one past 255 bytes, one of 2,000).
WORDS = [
    "queue",
    "QUEUE",
    "Queue",
    "lag",
    "disk",
    "503",
    "007",
    "k8s",
    "i",
    "k",
    "stanbul",
    "\u0130stanbul",
    "\u212aelvin",
    "kelvin",
    "a1b2",
    "x" * 256,
    "Long" * 500,
]
GLUE = [" ", "  ", "-", ".", ",", "!?", "\x00", "\n", "\t", "\u0130", "\u212a", "\u00df", "é", "_", "\u00a0"]

words = st.lists(st.sampled_from(WORDS) | st.sampled_from(GLUE), max_size=10).map("".join)
texts = words | rich_text
# A body must hold more than whitespace: a blank draw gets a character that is not.
bodies = st.builds(
    lambda s, tail: s if s.strip() else s + tail, texts, st.sampled_from(["\u00df", "\u0130", "Q"])
)

# Expiry times at the edges of the expiry index's levels (256 ** L) and of int64.
EXPIRIES = st.sampled_from(
    [0, 1, 2, 255, 256, 257, 65535, 65536, 2**32, 2**40 + 7, INT64_MAX - 1, INT64_MAX]
) | st.integers(0, INT64_MAX)
NOWS = st.sampled_from([INT64_MIN, -(2**40), -256, -1, 0, 1, 255, 256, 65536, INT64_MAX]) | st.integers(
    INT64_MIN, INT64_MAX
)

records = st.builds(
    Record,
    tenant=st.sampled_from(TENANTS),
    record_id=st.sampled_from(IDS),
    revision=st.sampled_from(REVISIONS),
    kind=st.sampled_from(["working", "incident", "runbook"]),
    body=bodies,
    source=st.sampled_from(["rb://q", "inc://1", "w://\u0130"]),
    expires_at=EXPIRIES,
)

COLUMNS = ("tenant", "record_id", "revision", "kind", "body", "source", "expires_at")
RAW_PUT = f"INSERT INTO evidence_put ({', '.join(COLUMNS)}) VALUES "


# ---- the model


Current = dict[tuple[str, str], tuple[Record, int]]  # (tenant, record_id) -> (record, version seq)
Row = tuple[str, str, str, int, str, str, int, int]


def model_retrieve(
    current: Current, tenant: str, revision: str, now: int, query: str, limit: int
) -> tuple[list[Row], int]:
    """The rules, written out plainly: (record_id, revision, kind, score, citation, body,
    expires_at, version seq) of each hit, best first, and the eligible count."""
    eligible = [
        (record, seq)
        for record, seq in current.values()
        if (record.tenant, record.revision) == (tenant, revision) and record.expires_at > now
    ]
    wanted = token_set(query)
    scored = [(len(wanted & token_set(record.body)), record, seq) for record, seq in eligible]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1].record_id))
    hits = [
        (r.record_id, r.revision, r.kind, score, r.source, r.body, r.expires_at, seq)
        for score, r, seq in ranked[:limit]
    ]
    return hits, len(eligible)


def as_rows(result: Any) -> list[Row]:
    return [
        (
            h.record_id,
            h.revision,
            h.kind,
            h.score,
            h.citation,
            h.body,
            h.expires_at,
            int(h.version.split("-")[0]),
        )
        for h in result
    ]


# ---- raw SQL on the store's file (the store is closed meanwhile: one writer at a time)


def raw_sql(path: Path, sql: str, params: Sequence[Any] = ()) -> None:
    conn = sqlite3.connect(path)
    try:
        sql_functions.register(conn)
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


class IndexMachine(RuleBasedStateMachine):
    engine = "native"

    @initialize()
    def open_store(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="pyevidence-index-"))
        self.path = self.tmp / "index.db"
        self.current: Current = {}
        self.seqs: dict[tuple[str, str], int] = {}  # versions so far, forgets included
        self.store = EvidenceStore(self.path, engine=self.engine)
        self.store_engine = self.engine

    # -- writes, applied to the model as the store applies them

    def _model_put(self, record: Record) -> None:
        key = (record.tenant, record.record_id)
        self.seqs[key] = self.seqs.get(key, 0) + 1
        self.current[key] = (record, self.seqs[key])

    def _model_forget(self, key: tuple[str, str]) -> bool:
        if self.current.pop(key, None) is None:
            return False
        self.seqs[key] += 1
        return True

    @rule(record=records)
    def put(self, record: Record) -> None:
        self.store.put(**record.__dict__)
        self._model_put(record)

    @rule(batch=st.lists(records, min_size=1, max_size=8))
    def put_many(self, batch: list[Record]) -> None:
        """Repeated ids in one batch, often in different revisions: only each
        record's last version stays current."""
        assert self.store.put_many(batch) == len(batch)
        for record in batch:
            self._model_put(record)

    @rule(tenant=st.sampled_from(TENANTS), record_id=st.sampled_from(IDS))
    def forget(self, tenant: str, record_id: str) -> None:
        expected = self._model_forget((tenant, record_id))
        assert self.store.forget(tenant=tenant, record_id=record_id) is expected

    @rule(batch=st.lists(records, min_size=1, max_size=4), poisoned=st.none() | st.integers(0, 4))
    def raw_put(self, batch: list[Record], poisoned: int | None) -> None:
        """One INSERT INTO evidence_put of several rows, through the index's triggers. With
        ``poisoned``, one row's body is invalid UTF-8: the statement is refused whole."""
        values = [[getattr(r, c) for c in COLUMNS] for r in batch]
        rows = ["(?, ?, ?, ?, ?, ?, ?)"] * len(batch)
        if poisoned is not None:
            poisoned = min(poisoned, len(batch))
            values.insert(poisoned, ["team-a", "r1", "v1", "working", "s", 5])
            rows.insert(poisoned, "(?, ?, ?, ?, CAST(x'71ff' AS TEXT), ?, ?)")
        sql = RAW_PUT + ", ".join(rows)
        params = [v for row in values for v in row]
        with self._closed():
            if poisoned is not None:
                with pytest.raises(sqlite3.IntegrityError, match="must be valid UTF-8 text"):
                    raw_sql(self.path, sql, params)
            else:
                raw_sql(self.path, sql, params)
                for record in batch:
                    self._model_put(record)

    @rule(
        how=st.sampled_from(["record", "scope", "expired", "tenant"]),
        tenant=st.sampled_from(TENANTS),
        record_id=st.sampled_from(IDS),
        revision=st.sampled_from(REVISIONS),
        cutoff=EXPIRIES,
    )
    def raw_forget(self, how: str, tenant: str, record_id: str, revision: str, cutoff: int) -> None:
        """DELETE FROM evidence of one row, a scope, the expired rows of a tenant, a tenant."""
        deletes: dict[str, tuple[str, list[object], Callable[[Record], bool]]] = {
            "record": ("record_id = ?", [record_id], lambda r: r.record_id == record_id),
            "scope": ("revision = ?", [revision], lambda r: r.revision == revision),
            "expired": ("expires_at <= ?", [cutoff], lambda r: r.expires_at <= cutoff),
            "tenant": ("true", [], lambda r: True),
        }
        where, params, chosen = deletes[how]
        with self._closed():
            raw_sql(self.path, f"DELETE FROM evidence WHERE tenant = ? AND {where}", [tenant, *params])
        for key, (record, _) in list(self.current.items()):
            if record.tenant == tenant and chosen(record):
                self._model_forget(key)

    @rule(other=st.booleans())
    def reopen(self, other: bool) -> None:
        self.store.close()
        engines = [e for e in ENGINES if e != self.engine] if other else []
        self._open(engines[0] if engines else self.engine)

    @contextmanager
    def _closed(self) -> Iterator[None]:
        """The store closed meanwhile (a raw writer works on the file alone), then reopened
        on the same engine, even when the raw write failed."""
        self.store.close()
        try:
            yield
        finally:
            self._open(self.store_engine)

    def _open(self, engine: str) -> None:
        self.store = EvidenceStore(self.path, engine=engine)
        self.store_engine = engine

    # -- reads

    @rule(data=st.data())
    def retrieve(self, data: st.DataObject) -> None:
        """Index == scan == model, for a few scopes, times and queries; the times are
        often an expiry of a current record, one before or one after."""
        near = sorted({e + d for r, _ in self.current.values() for e in [r.expires_at] for d in (-1, 0, 1)})
        times = NOWS | st.sampled_from([t for t in near if INT64_MIN <= t <= INT64_MAX] or [0])
        for _ in range(data.draw(st.integers(1, 3), label="queries")):
            tenant = data.draw(st.sampled_from(TENANTS), label="tenant")
            revision = data.draw(st.sampled_from(REVISIONS), label="revision")
            now = data.draw(times, label="now")
            query = data.draw(texts, label="query")
            limit = data.draw(st.integers(1, 10), label="limit")
            self._check(tenant, revision, now, query, limit)

    def _check(self, tenant: str, revision: str, now: int, query: str, limit: int) -> None:
        expected = model_retrieve(self.current, tenant, revision, now, query, limit)
        found = {
            method: self.store.retrieve(
                tenant=tenant, revision=revision, now=now, query=query, limit=limit, method=method
            )
            for method in ("index", "scan")
        }
        hits, eligible = expected
        in_scope = sum(1 for r, _ in self.current.values() if (r.tenant, r.revision) == (tenant, revision))
        event(f"hits: {min(len(hits), 3)}{'+' if len(hits) > 2 else ''}")
        event(f"expired rows in scope: {eligible < in_scope}")
        where = f"{self.store_engine} engine, {tenant!r}/{revision!r} now={now} query={query!r} limit={limit}"
        assert (as_rows(found["scan"]), found["scan"].eligible_count) == expected, f"scan, {where}"
        assert (as_rows(found["index"]), found["index"].eligible_count) == expected, f"index, {where}"
        assert list(found["index"]) == list(found["scan"]), f"versions, {where}"  # every field

    @invariant()
    def index_is_what_a_rebuild_makes(self) -> None:
        if hasattr(self, "store"):
            check = self.store.check_index()
            assert check.ok, (self.store_engine, check.problems)

    @rule()
    def retrieve_every_scope(self) -> None:
        """Every scope, all of it eligible, a query of every word."""
        for tenant in TENANTS:
            for revision in REVISIONS:
                self._check(tenant, revision, -1, " ".join(WORDS), 10)

    def teardown(self) -> None:
        if hasattr(self, "store"):
            self.store.close()
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)


class PythonIndexMachine(IndexMachine):
    engine = "python"


RUN = settings(max_examples=40, stateful_step_count=20)  # on top of the loaded profile
IndexMachine.TestCase.settings = RUN
PythonIndexMachine.TestCase.settings = RUN
TestNativeIndex = pytest.mark.skipif(not native_available(), reason="native engine not built")(
    IndexMachine.TestCase
)
TestPythonIndex = PythonIndexMachine.TestCase


# ---- evidence_search(): retrieve, in SQL


SEARCH = "SELECT * FROM evidence_search(?, ?, ?, ?, ?)"
# evidence_eligible_count from the index, beside the rows evidence_eligible yields
COUNT = "SELECT evidence_eligible_count(?1, ?2, ?3), (SELECT count(*) FROM evidence_eligible(?1, ?2, ?3))"


def search_fields(hit: Any) -> tuple[Any, ...]:
    """A hit's fields in evidence_search's column order, up to eligible_count."""
    return (
        hit.record_id,
        hit.revision,
        hit.kind,
        hit.score,
        hit.citation,
        hit.body,
        hit.expires_at,
        hit.version,
    )


needs_native = pytest.mark.skipif(not native_available(), reason="store.query() needs the native engine")


@needs_native
@pytest.mark.parametrize("writer", ENGINES)
@settings(max_examples=30)
@given(
    batch=st.lists(records, max_size=30),
    forgets=st.lists(st.tuples(st.sampled_from(TENANTS), st.sampled_from(IDS)), max_size=4),
    searches=st.lists(
        st.tuples(
            st.sampled_from(TENANTS), st.sampled_from(REVISIONS), NOWS | EXPIRIES, texts, st.integers(1, 10)
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_evidence_search_returns_what_retrieve_returns(
    writer: str,
    batch: list[Record],
    forgets: list[tuple[str, str]],
    searches: list[tuple[str, str, int, str, int]],
) -> None:
    """A store written by either engine; evidence_search on the native connection gives
    retrieve's hits, every field, in order, with its eligible count on each row."""
    with tempfile.TemporaryDirectory(prefix="pyevidence-search-") as tmp:
        path = Path(tmp) / "search.db"
        with EvidenceStore(path, engine=writer) as store:
            store.put_many(batch)
            for tenant, record_id in forgets:
                store.forget(tenant=tenant, record_id=record_id)
        with EvidenceStore(path, engine="native") as store:
            for tenant, revision, now, query, limit in searches:
                result = store.retrieve(tenant=tenant, revision=revision, now=now, query=query, limit=limit)
                scan = store.retrieve(
                    tenant=tenant, revision=revision, now=now, query=query, limit=limit, method="scan"
                )
                rows = store.query(SEARCH, [tenant, revision, now, query, limit])
                assert rows.columns == (
                    "record_id",
                    "revision",
                    "kind",
                    "score",
                    "citation",
                    "body",
                    "expires_at",
                    "version",
                    "eligible_count",
                )
                expected = [(*search_fields(h), result.eligible_count) for h in scan]
                assert list(result) == list(scan)
                assert list(rows.rows) == expected, (tenant, revision, now, query, limit)
                counted = store.query(COUNT, [tenant, revision, now]).rows
                assert counted == ((result.eligible_count, result.eligible_count),)


@needs_native
@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ([], "tenant"),
        (["t"], "revision"),
        (["t", "v"], "now"),
        (["t", "v", 0], "query"),
        (["t", "v", 0, "q"], "limit"),
        ([1, "v", 0, "q", 5], "tenant"),
        ([None, "v", 0, "q", 5], "tenant"),
        (["t", b"v", 0, "q", 5], "revision"),
        (["t", "v", "0", "q", 5], "now"),
        (["t", "v", 0.5, "q", 5], "now"),
        (["t", "v", None, "q", 5], "now"),
        (["t", "v", 0, 7, 5], "query"),
        (["t", "v", 0, b"q", 5], "query"),
        (["t", "v", 0, None, 5], "query"),
        (["t", "v", 0, "q", "5"], "limit"),
        (["t", "v", 0, "q", 2.5], "limit"),
        (["t", "v", 0, "q", None], "limit"),
        (["t", "v", 0, "q", 0], "limit"),
        (["t", "v", 0, "q", 11], "limit"),
        (["t", "v", 0, "q", -1], "limit"),
    ],
)
def test_evidence_search_argument_errors_name_the_argument(args: list[Any], argument: str) -> None:
    with EvidenceStore(":memory:", engine="native") as store:
        store.put(tenant="t", record_id="r", revision="v", kind="runbook", body="q", source="s", expires_at=9)
        placeholders = ", ".join("?" * len(args))
        with pytest.raises(StoreError) as caught:
            store.query(f"SELECT * FROM evidence_search({placeholders})", args)
        message = str(caught.value)
        assert f"evidence_search(): {argument} " in message or f"argument {argument} is missing" in message, (
            message
        )
        if args[4:] in ([0], [11], [-1]):
            assert f"limit must be from 1 to 10, got {args[4]}" in message


@needs_native
@pytest.mark.parametrize(
    ("args", "argument", "wanted"),
    [
        ([1, "v", 0], "tenant", "text"),
        ([None, "v", 0], "tenant", "text"),
        (["t", b"v", 0], "revision", "text"),
        (["t", "v", "0"], "now", "an integer"),
        (["t", "v", 0.5], "now", "an integer"),
        (["t", "v", None], "now", "an integer"),
    ],
)
def test_evidence_eligible_count_argument_errors_name_the_argument(
    args: list[Any], argument: str, wanted: str
) -> None:
    with EvidenceStore(":memory:", engine="native") as store:
        store.put(tenant="t", record_id="r", revision="v", kind="runbook", body="q", source="s", expires_at=9)
        with pytest.raises(StoreError, match=rf"evidence_eligible_count\(\): {argument} must be {wanted}"):
            store.query("SELECT evidence_eligible_count(?, ?, ?)", args)
        assert store.query("SELECT evidence_eligible_count('t', 'v', 8.0)").rows == ((1,),)
        assert store.query("SELECT evidence_eligible_count('t', 'v', 9)").rows == ((0,),)
        assert store.query("SELECT evidence_eligible_count('t', 'no such revision', 0)").rows == ((0,),)


@needs_native
def test_the_cluster_search_statement_reads_the_index_not_the_rows() -> None:
    """The cluster's retrieve statement (cluster_engine.SEARCH_SQL) gives the scan
    statement's rows, and its plan runs the search once and looks up each hit by key:
    no walk of the tenant's rows, no copy of the evidence view."""
    from pyevidence.storage.engines.cluster_engine import RANK_SQL, SEARCH_SQL

    with EvidenceStore(":memory:", engine="native") as store:
        store.put_many(
            [
                Record("t", f"r{n:03d}", "v", "runbook", f"queue lag w{n % 7} x{n % 3}", "s", 10 + n % 4)
                for n in range(300)
            ]
        )
        for query in ("queue", "w3 x1", "lag w6", "nothing", ""):
            for now in (0, 11, 13):
                args = ["t", "v", now, query, 10]
                assert store.query(SEARCH_SQL, args).rows == store.query(RANK_SQL, args).rows, (query, now)
        explained = store.query("EXPLAIN QUERY PLAN " + SEARCH_SQL, ["t", "v", 0, "q", 10])
        plan = [row[-1] for row in explained.rows]
        assert not any(step.startswith("MATERIALIZE evidence") for step in plan), plan
        search = next(i for i, step in enumerate(plan) if "VIRTUAL TABLE" in step)
        lookup = next(i for i, step in enumerate(plan) if "(tenant=? AND record_id=?)" in step)
        assert search < lookup, plan
