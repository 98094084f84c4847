"""The token index (schema.sql, "The token index"): exact on every engine.

- a model-based test: random put / put_many / forget / reopen / raw-SQL put / retrieve
  sequences, where retrieve's index path, its scan path and a plain Python model agree,
  and the index always holds what a fresh rebuild would;
- the Python engine's batch writer (pyevidence/storage/index/maintain.py) writes the very
  rows schema.sql's triggers write: for one put, those of INSERT INTO evidence_put; for a
  batch, those of evidence_index_remove / evidence_index_add applied record by record;
- the docset codec's laws (pyevidence/storage/index/docsets.py).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from damage import renumber
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from strategies import rich_text
from tables import DOCUMENTS

from pyevidence import EvidenceStore, Record, StoreError, ValidationError
from pyevidence.core.tokens import token_set
from pyevidence.ranking.scoring import TokenScorer
from pyevidence.storage import sql_functions
from pyevidence.storage.index import docsets

INDEX_TABLES = (
    "evidence_index_scopes",
    "evidence_index_postings",
    "evidence_index_expiry",
)
MAX = 2**63 - 1

TENANTS = st.sampled_from(["team-a", "team-b", "Team-A"])
REVISIONS = st.sampled_from(["v1", "v2", "V1"])
IDS = st.sampled_from(["r1", "r2", "r3", "R1", "é", "r\x001", "\u0130d", "\u212a", "a" * 40])
EXPIRIES = st.integers(0, 8) | st.sampled_from([0, 255, 256, 257, 65535, 65536, 2**40, MAX - 1, MAX])
NOWS = st.integers(-3, 9) | st.sampled_from([-(2**63), -1, 254, 255, 256, 65535, 65536, 2**40, MAX - 1, MAX])
KIND = st.sampled_from(["working", "incident", "runbook"])
WORDS = ["disk", "queue", "Queue", "QUEUE", "503", "k8s", "\u0130stanbul", "\u212aelvin", "a\x00b", "x" * 300]
BODIES = (
    rich_text | st.lists(st.sampled_from([*WORDS, " ", ".", "-", "_"]), min_size=1, max_size=8).map(" ".join)
).filter(lambda s: s.strip() != "")
QUERIES = rich_text | st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)


def raw_connection(path: Path) -> sqlite3.Connection:
    """A plain stdlib connection as a raw-SQL user opens one: pyevidence's SQL functions
    registered, evidence_writer_vouches() = 0, so the triggers do every write."""
    conn = sqlite3.connect(path, isolation_level=None)
    sql_functions.register(conn)
    conn.execute("PRAGMA trusted_schema = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def index_rows(conn: sqlite3.Connection, *, numbers: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the index tables, and (``numbers``) each current row's number: compared
    byte for byte."""
    tables = (*INDEX_TABLES, DOCUMENTS) if numbers else INDEX_TABLES
    return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall() for table in tables}


def logical_index(conn: sqlite3.Connection) -> dict[str, Any]:
    """What the index says, free of its numbering (scopes and document numbers differ
    between a maintained index and a rebuilt one): per (tenant, revision) its count,
    its records' expiry, the records of each token, the expiry counts. Also checks the
    numbering itself: docs unique and below next_doc, every docset canonical."""
    scopes = {s: (t, r) for t, r, s, _, _ in conn.execute("SELECT * FROM evidence_index_scopes")}
    counts = {
        (t, r): docs for t, r, _, docs, _ in conn.execute("SELECT * FROM evidence_index_scopes") if docs
    }
    next_doc = {s: n for _, _, s, _, n in conn.execute("SELECT * FROM evidence_index_scopes")}
    by_number: dict[tuple[int, int], str] = {}
    records = {}
    numbered = {key: scope for scope, key in scopes.items()}
    for tenant, revision, doc, expires_at, record_id in conn.execute(
        "SELECT tenant, revision, doc, expires_at, record_id FROM evidence_current"
    ):  # each current row's number: its own in its scope, one the scope has given
        scope = numbered[tenant, revision]
        assert (scope, doc) not in by_number and doc < next_doc[scope]
        by_number[scope, doc] = record_id
        records[tenant, revision, record_id] = expires_at
    postings: dict[tuple[str, str, str], set[str]] = {}
    for scope, _, token, chunk, blob in conn.execute("SELECT * FROM evidence_index_postings"):
        bits = docsets.decode(blob)
        assert bits and docsets.encode(bits) == blob
        for n in range(docsets.CHUNK_DOCS):
            if bits >> n & 1:
                postings.setdefault((*scopes[scope], token), set()).add(by_number[scope, chunk * 4096 + n])
    expiry = {
        (*scopes[scope], level, bucket): rows
        for scope, level, bucket, rows in conn.execute("SELECT * FROM evidence_index_expiry")
    }
    return {"counts": counts, "records": records, "postings": postings, "expiry": expiry}


def rebuilt_index(conn: sqlite3.Connection) -> dict[str, Any]:
    """logical_index() of the index a rebuild makes from evidence alone (INDEX_SPEC)."""
    counts: dict[tuple[str, str], int] = {}
    records = {}
    postings: dict[tuple[str, str, str], set[str]] = {}
    expiry: dict[tuple[str, str, int, int], int] = {}
    for tenant, revision, expires_at, record_id, body in conn.execute(
        "SELECT tenant, revision, expires_at, record_id, body FROM evidence"
    ):
        counts[tenant, revision] = counts.get((tenant, revision), 0) + 1
        records[tenant, revision, record_id] = expires_at
        for token in token_set(body):
            postings.setdefault((tenant, revision, token), set()).add(record_id)
        for level in range(8):
            key = (tenant, revision, level, expires_at >> (8 * level))
            expiry[key] = expiry.get(key, 0) + 1
    return {"counts": counts, "records": records, "postings": postings, "expiry": expiry}


def model_retrieve(
    model: dict[tuple[str, str], Record], tenant: str, revision: str, query: str, now: int, limit: int
) -> tuple[list[tuple[str, int, str, str, int]], int]:
    eligible = [
        r for r in model.values() if r.tenant == tenant and r.revision == revision and r.expires_at > now
    ]
    wanted = token_set(query)
    scored = [(len(wanted & token_set(r.body)), r) for r in eligible]
    ranked = sorted((p for p in scored if p[0] > 0), key=lambda p: (-p[0], p[1].record_id))[:limit]
    return [(r.record_id, score, r.source, r.body, r.expires_at) for score, r in ranked], len(eligible)


class IndexMachine(RuleBasedStateMachine):
    ENGINE = "python"

    @initialize()
    def open_store(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="pyevidence-index-"))
        self.path = self.tmp / "store.db"
        self.store = EvidenceStore(self.path, engine=self.ENGINE)
        self.model: dict[tuple[str, str], Record] = {}

    def teardown(self) -> None:
        if hasattr(self, "store"):
            self.store.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _record(
        self, tenant: str, record_id: str, revision: str, kind: str, body: str, expires_at: int
    ) -> Record:
        return Record(tenant, record_id, revision, kind, body, f"src://{record_id}", expires_at)

    @rule(t=TENANTS, i=IDS, v=REVISIONS, k=KIND, b=BODIES, e=EXPIRIES)
    def put(self, t: str, i: str, v: str, k: str, b: str, e: int) -> None:
        r = self._record(t, i, v, k, b, e)
        self.store.put(**r.__dict__)
        self.model[t, i] = r

    @rule(batch=st.lists(st.tuples(TENANTS, IDS, REVISIONS, KIND, BODIES, EXPIRIES), min_size=1, max_size=8))
    def put_many(self, batch: list[tuple[str, str, str, str, str, int]]) -> None:
        records = [self._record(*fields) for fields in batch]
        self.store.put_many(records)
        for r in records:  # the last version of a record in the batch is its current one
            self.model[r.tenant, r.record_id] = r

    @rule(t=TENANTS, i=IDS, v=REVISIONS, k=KIND, b=BODIES, e=EXPIRIES)
    def raw_sql_put(self, t: str, i: str, v: str, k: str, b: str, e: int) -> None:
        r = self._record(t, i, v, k, b, e)
        conn = raw_connection(self.path)
        try:
            conn.execute(
                "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (r.tenant, r.record_id, r.revision, r.kind, r.body, r.source, r.expires_at),
            )
        finally:
            conn.close()
        self.model[t, i] = r

    @rule(t=TENANTS, i=IDS, v=REVISIONS)
    def raw_sql_invalid_utf8_is_refused(self, t: str, i: str, v: str) -> None:
        conn = raw_connection(self.path)
        try:
            with pytest.raises(sqlite3.IntegrityError, match="valid UTF-8"):
                conn.execute(
                    "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
                    " VALUES (?, ?, ?, 'working', CAST(x'717565756520ff' AS TEXT), 'src://raw', 5)",
                    (t, i, v),
                )
        finally:
            conn.close()

    @rule(t=TENANTS, i=IDS)
    def forget(self, t: str, i: str) -> None:
        expected = self.model.pop((t, i), None) is not None
        assert self.store.forget(tenant=t, record_id=i) is expected

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = EvidenceStore(self.path, engine=self.ENGINE)

    @rule(t=TENANTS, v=REVISIONS, q=QUERIES, now=NOWS, limit=st.integers(1, 10))
    def retrieve(self, t: str, v: str, q: str, now: int, limit: int) -> None:
        expected = model_retrieve(self.model, t, v, q, now, limit)
        for method in (None, "index", "scan"):
            result = self.store.retrieve(tenant=t, revision=v, query=q, now=now, limit=limit, method=method)
            got = [(h.record_id, h.score, h.citation, h.body, h.expires_at) for h in result]
            assert (got, result.eligible_count) == expected, method
            assert all(isinstance(h.score, int) for h in result)
        by_scorer = self.store.retrieve(
            tenant=t, revision=v, query=q, now=now, limit=limit, scorer=TokenScorer()
        )
        assert [(h.record_id, h.score) for h in by_scorer] == [(h[0], h[1]) for h in expected[0]]

    @invariant()
    def index_is_what_a_rebuild_makes(self) -> None:
        if not hasattr(self, "store"):
            return
        conn = sqlite3.connect(self.path)
        try:
            assert logical_index(conn) == rebuilt_index(conn)
        finally:
            conn.close()


def test_index_model(engine: str) -> None:
    """index path == scan path == the model, and the index == a rebuild, on each engine."""
    machine = type(f"IndexMachine_{engine}", (IndexMachine,), {"ENGINE": engine})
    # A second machine beside tests/test_index_model.py's, with a rebuild compared after every
    # step: that makes each step slow, so it runs fewer examples than the profile's.
    run_state_machine_as_test(machine, settings=settings(max_examples=30, stateful_step_count=20))


# -- the Python engine's batch writer against schema.sql's triggers ------------------------

PUTS = st.lists(st.tuples(TENANTS, IDS, REVISIONS, BODIES, EXPIRIES), min_size=1, max_size=12)


def _records(fields: list[tuple[str, str, str, str, int]]) -> list[Record]:
    return [Record(t, i, v, "working", b, f"src://{i}", e) for t, i, v, b, e in fields]


def _put_raw(conn: sqlite3.Connection, r: Record) -> None:
    conn.execute(
        "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (r.tenant, r.record_id, r.revision, r.kind, r.body, r.source, r.expires_at),
    )


@settings(max_examples=60)  # each example builds two stores
@given(puts=PUTS)
def test_a_put_writes_the_rows_of_the_raw_sql_trigger_path(
    puts: list[tuple[str, str, str, str, int]],
) -> None:
    """One put at a time: the writer's index rows are those of INSERT INTO evidence_put."""
    with tempfile.TemporaryDirectory() as tmp:
        engine_path, raw_path = Path(tmp) / "engine.db", Path(tmp) / "raw.db"
        with EvidenceStore(engine_path, engine="python") as store:
            EvidenceStore(raw_path, engine="python").close()
            raw = raw_connection(raw_path)
            try:
                for r in _records(puts):
                    store.put(**r.__dict__)
                    _put_raw(raw, r)
                with sqlite3.connect(engine_path) as mine:
                    assert index_rows(mine) == index_rows(raw)
            finally:
                raw.close()


def _by_triggers(raw: sqlite3.Connection, batch: list[Record]) -> dict[tuple[str, str], tuple[str, int]]:
    """The index changes of put_many(batch) made by the SQL views, record by record: for
    each record's last version, in (tenant, revision, expires_at, record_id) order,
    evidence_index_remove (keep = same scope) of its current row, then evidence_index_add
    with the number the trigger evidence_versions_point_the_current_row gives (the old one in
    the same scope, else the scope's next). evidence itself is not changed: returns the
    revision and number each record's current row must have, (tenant, record_id) -> them."""
    last = {(r.tenant, r.record_id): r for r in batch}
    numbered = {}
    for r in sorted(last.values(), key=lambda r: (r.tenant, r.revision, r.expires_at, r.record_id)):
        old = raw.execute(
            "SELECT c.revision, c.expires_at, v.body, c.doc FROM evidence_current AS c"
            " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
            " WHERE c.tenant = ? AND c.record_id = ?",
            (r.tenant, r.record_id),
        ).fetchone()
        if old is not None:
            raw.execute(
                "INSERT INTO evidence_index_remove (tenant, revision, record_id, expires_at, doc, body, keep)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (r.tenant, old[0], r.record_id, old[1], old[3], old[2], int(old[0] == r.revision)),
            )
        if old is not None and old[0] == r.revision:
            doc = old[3]
        else:
            (doc,) = raw.execute(
                "SELECT coalesce((SELECT next_doc FROM evidence_index_scopes"
                " WHERE tenant = ? AND revision = ?), 0)",
                (r.tenant, r.revision),
            ).fetchone()
        raw.execute(
            "INSERT INTO evidence_index_add (tenant, revision, record_id, expires_at, doc, body)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (r.tenant, r.revision, r.record_id, r.expires_at, doc, r.body),
        )
        numbered[r.tenant, r.record_id] = (r.revision, doc)
    return numbered


def _same_as_triggers(tmp: Path, before: list[Record], batch: list[Record]) -> None:
    engine_path, raw_path = tmp / "engine.db", tmp / "raw.db"
    for path in (engine_path, raw_path):
        with EvidenceStore(path, engine="python") as store:
            store.put_many(before)
    with EvidenceStore(engine_path, engine="python") as store:
        store.put_many(batch)
    raw = raw_connection(raw_path)
    try:
        raw.execute("BEGIN")
        numbered = _by_triggers(raw, batch)
        mine = sqlite3.connect(engine_path)
        try:
            assert index_rows(mine, numbers=False) == index_rows(raw, numbers=False)
            for (tenant, record_id), expected in numbered.items():
                assert (
                    mine.execute(
                        "SELECT revision, doc FROM evidence_current WHERE tenant = ? AND record_id = ?",
                        (tenant, record_id),
                    ).fetchone()
                    == expected
                )
            assert logical_index(mine) == rebuilt_index(mine)
        finally:
            mine.close()
        raw.execute("ROLLBACK")
    finally:
        raw.close()


@settings(max_examples=60)  # each example builds two stores
@given(before=PUTS, batch=PUTS)
def test_a_batch_writes_the_rows_of_remove_and_add_in_key_order(
    before: list[tuple[str, str, str, str, int]], batch: list[tuple[str, str, str, str, int]]
) -> None:
    """put_many: the index rows of evidence_index_remove then evidence_index_add, per
    record, in key order (the rule of schema.sql for a batch)."""
    with tempfile.TemporaryDirectory() as tmp:
        _same_as_triggers(Path(tmp), _records(before), _records(batch))


def test_a_large_batch_crosses_chunks_and_bitsets_like_the_triggers(tmp_path: Path) -> None:
    """Several chunks, lists growing into bitsets and back, updates in place and moves."""
    first = [
        Record("t", f"r{n:05d}", "v1", "working", f"common w{n % 7} n{n}", "s://x", n % 300)
        for n in range(9000)
    ]
    second = [
        Record("t", f"r{n:05d}", "v1" if n % 3 else "v2", "working", f"w{n % 5} other", "s://x", n % 11)
        for n in range(0, 9000, 4)
    ] + [Record("t", f"new{n}", "v1", "working", f"common n{n}", "s://x", 5) for n in range(300)]
    _same_as_triggers(tmp_path, first, second)


def test_documents_past_the_first_era_are_written_and_found_like_the_scan(
    engine: str, tmp_path: Path
) -> None:
    """The postings' key leads with the era, doc >> 15 (schema version 9): a scope's
    documents numbered from 32,768 on are written into later eras, by the engine's writer
    (put_many, put, an update in place), by the raw SQL triggers (a put, a forget), and
    retrieve reads every era, as the scan ranks."""
    path = tmp_path / "s.db"
    early = [Record("t", f"a{n}", "v1", "working", f"queue w{n % 3}", "s://a", 100) for n in range(5)]
    late = [Record("t", f"b{n}", "v1", "working", f"queue lag w{n % 3}", "s://b", 100 + n) for n in range(6)]
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(early)
    raw = raw_connection(path)
    try:
        # numbers skipped, as moves and forgets leave them: the next document is in era 2
        raw.execute("UPDATE evidence_index_scopes SET next_doc = 70000")
        raw.commit()
        with EvidenceStore(path, engine=engine) as store:
            store.put_many(late[:4])
            store.put(**late[4].__dict__)
            store.put(**{**late[1].__dict__, "body": "lag only now"})  # in place: keeps its number
        _put_raw(raw, late[5])
        raw.execute("DELETE FROM evidence WHERE tenant = 't' AND record_id = 'b0'")
        raw.commit()
        eras = {era for (era,) in raw.execute("SELECT DISTINCT era FROM evidence_index_postings")}
        assert eras == {0, 2}
        assert logical_index(raw) == rebuilt_index(raw)
    finally:
        raw.close()
    with EvidenceStore(path, engine=engine) as store:
        assert store.check_index().ok
        for query in ("queue", "lag w1", "w2 queue", "only"):
            scope = {"tenant": "t", "revision": "v1", "query": query, "now": 0, "limit": 10}
            index = [(h.record_id, h.score) for h in store.retrieve(**scope, method="index")]
            assert index and index == [(h.record_id, h.score) for h in store.retrieve(**scope, method="scan")]
        hits = store.retrieve(tenant="t", revision="v1", query="lag", now=0, limit=10).hits
        assert sorted(h.record_id for h in hits) == ["b1", "b2", "b3", "b4", "b5"]


def test_check_index_compares_every_era_and_names_a_posting_filed_in_the_wrong_one(
    engine: str, tmp_path: Path
) -> None:
    """check_index compares the tokens one era at a time: damage in a later era is found
    and named with its records, and a docset filed under an era its chunk is not in (only
    possible with CHECK constraints switched off) is named as such, not as postings the
    bodies lack."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many([Record("t", f"a{n}", "v1", "working", "queue", "s://a", 100) for n in range(3)])
    raw = raw_connection(path)
    try:
        raw.execute("UPDATE evidence_index_scopes SET next_doc = 70000")
        with EvidenceStore(path, engine=engine) as store:
            store.put_many(
                [Record("t", f"b{n}", "v1", "working", "lag queue", "s://b", 100) for n in range(3)]
            )
        with EvidenceStore(path, engine=engine) as store:
            assert store.check_index().ok
        ((scope,),) = raw.execute("SELECT scope FROM evidence_index_scopes")
        raw.execute("DELETE FROM evidence_index_postings WHERE era = 2 AND token = 'lag'")
        raw.execute("PRAGMA ignore_check_constraints = ON")
        raw.execute(
            "INSERT INTO evidence_index_postings VALUES (?, 0, 'kelvin', 17, ?)", (scope, docsets.encode(1))
        )
    finally:
        raw.close()
    with EvidenceStore(path, engine=engine) as store:
        checked = store.check_index()
    assert [(p.kind, p.detail) for p in checked.problems] == [
        ("posting_wrong_era", "token 'kelvin', chunk 17 is filed in era 0"),
        *[
            ("posting_missing", f"record 'b{n}' has the token 'lag' but its posting is missing")
            for n in range(3)
        ],
    ]


def test_check_index_compares_bitsets_bit_by_bit(engine: str, tmp_path: Path) -> None:
    """A docset of more than 255 documents is a bitset: check_index finds one bit cleared
    (the record named) and one set for a number no record has."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(
            [Record("t", f"r{n:03d}", "v1", "working", "common", "s://x", 100) for n in range(300)]
        )
        assert store.check_index().ok
    raw = raw_connection(path)
    try:
        ((blob,),) = raw.execute("SELECT docs FROM evidence_index_postings WHERE token = 'common'")
        assert len(blob) == docsets.BITSET_BYTES
        ((cleared,),) = raw.execute("SELECT record_id FROM evidence_current WHERE doc = 5")
        damaged = docsets.encode(docsets.decode(blob) ^ (1 << 5) | (1 << 400))
        raw.execute("UPDATE evidence_index_postings SET docs = ? WHERE token = 'common'", (damaged,))
    finally:
        raw.close()
    with EvidenceStore(path, engine=engine) as store:
        checked = store.check_index()
    assert [(p.kind, p.detail) for p in checked.problems] == [
        ("posting_missing", f"record {cleared!r} has the token 'common' but its posting is missing"),
        (
            "posting_extra",
            "document 400 (no record) is posted under the token 'common', which its body does not have",
        ),
    ]


def test_document_numbers_at_the_end_of_the_integers_are_an_index_out_of_step(
    engine: str, tmp_path: Path
) -> None:
    """Only a raw write to the index's tables gives a scope a next_doc or a document number
    near the end of SQLite's integers (or 2**32 documents entered since the last rebuild).
    A search is sized by the scope's highest document, so a huge next_doc alone changes no
    answer; a document number not below next_doc, or not below 2**32, is an index out of
    step on retrieve; a write that would number a document there is refused with nothing
    written. Both engines alike, no crash, no allocation of terabytes, no hang; check_index
    names it and reindex repairs it."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many([Record("t", f"a{n}", "v1", "working", f"queue w{n}", "s://a", 100) for n in range(3)])
    scope = {"tenant": "t", "revision": "v1", "query": "queue w1", "now": 0, "limit": 10}
    new = {
        "tenant": "t",
        "revision": "v1",
        "kind": "working",
        "body": "queue",
        "source": "s",
        "expires_at": 9,
    }
    top = 2**63 - 1
    raw = raw_connection(path)
    try:
        raw.execute(f"UPDATE evidence_index_scopes SET next_doc = {top}")
        with EvidenceStore(path, engine=engine) as store:
            hits = [(h.record_id, h.score) for h in store.retrieve(**scope).hits]
            assert hits == [(h.record_id, h.score) for h in store.retrieve(**scope, method="scan").hits]
            with pytest.raises(StoreError, match="nothing was written; rebuild it with `pyevidence reindex`"):
                store.put(record_id="b", **new)
            with pytest.raises(StoreError, match="nothing was written; rebuild it with `pyevidence reindex`"):
                store.put_many([Record(record_id="c", **new)])
            assert (
                store.history(tenant="t", record_id="b") == ()
                and store.history(tenant="t", record_id="c") == ()
            )
            assert [p.kind for p in store.check_index().problems] == ["next_doc_too_high"]
        for doc, next_doc in ((2**32, 2**32 + 1), (3, 3), (top - 1, top)):
            renumber(raw, "t", "a2", doc, next_doc)
            with EvidenceStore(path, engine=engine) as store:
                with pytest.raises(StoreError, match="rebuild it with `pyevidence reindex`"):
                    store.retrieve(**scope)
                assert not store.check_index().ok
    finally:
        raw.close()
    with EvidenceStore(path, engine=engine) as store:
        store.reindex()
        assert store.check_index().ok
        store.put(record_id="b", **new)
        assert [h.record_id for h in store.retrieve(**scope).hits] == ["a1", "a0", "a2", "b"]


def test_method_is_checked(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "s.db", engine="python") as store:
        scope = {"tenant": "t", "revision": "v", "query": "q", "now": 0}
        with pytest.raises(ValidationError, match="'index', 'scan'"):
            store.retrieve(**scope, method="fts")
        with pytest.raises(ValidationError, match="'index', 'scan'"):
            store.retrieve(**scope, method=1)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="default token scorer only"):
            store.retrieve(**scope, method="scan", scorer=TokenScorer())
        assert (
            store.scoped(tenant="t").retrieve(revision="v", query="q", now=0, method="scan").eligible_count
            == 0
        )


# -- docsets -------------------------------------------------------------------------------

NUMBERS = st.integers(0, docsets.CHUNK_DOCS - 1)
SETS = st.sets(NUMBERS, max_size=300) | st.sets(NUMBERS, min_size=250, max_size=600)


def _bits(numbers: set[int]) -> int:
    return sum(1 << n for n in numbers)


@given(SETS)
def test_docsets_roundtrip_and_are_canonical(numbers: set[int]) -> None:
    blob = docsets.encode(_bits(numbers))
    assert docsets.decode(blob) == _bits(numbers)
    if len(numbers) <= docsets.MAX_LISTED:
        assert blob == b"".join(n.to_bytes(2, "little") for n in sorted(numbers))
    else:
        assert len(blob) == docsets.BITSET_BYTES


def test_docsets_switch_form_at_256() -> None:
    assert len(docsets.encode(_bits(set(range(255))))) == 510
    assert len(docsets.encode(_bits(set(range(256))))) == 512
    assert docsets.without_doc(docsets.encode(_bits(set(range(256)))), 0) == docsets.encode(
        _bits(set(range(1, 256)))
    )
    assert len(docsets.with_doc(docsets.encode(_bits(set(range(255)))), 4095)) == 512
    assert docsets.without_doc(docsets.with_doc(None, 7), 7) == b""


@given(SETS, SETS, NUMBERS)
def test_docset_functions_are_set_laws(a: set[int], b: set[int], n: int) -> None:
    ea, eb = docsets.encode(_bits(a)), docsets.encode(_bits(b))
    assert docsets.with_doc(ea, n) == docsets.encode(_bits(a | {n}))
    assert docsets.without_doc(ea, n) == docsets.encode(_bits(a - {n}))
    assert docsets.union(ea, eb) == docsets.encode(_bits(a | b)) == docsets.union(eb, ea)
    assert docsets.union(None, eb) == eb
    assert docsets.with_doc(None, n) == n.to_bytes(2, "little")


@pytest.mark.parametrize(
    "blob",
    [
        b"\x01",  # odd length
        b"\x02\x00\x01\x00",  # not ascending
        b"\x01\x00\x01\x00",  # repeated
        b"\x00\x10",  # 4096: outside a chunk
        b"\x00" * 511 + b"\x01",  # a bitset of 1 number should be a list
        b"\x00\x00" * 256 + b"\x00\x00",  # 514 bytes
    ],
)
def test_docsets_refuse_what_is_not_one(blob: bytes) -> None:
    with pytest.raises(docsets.DocsetError):
        docsets.decode(blob)


@pytest.mark.parametrize(
    "call",
    [
        lambda: docsets.with_doc("text", 1),
        lambda: docsets.with_doc(None, 4096),
        lambda: docsets.with_doc(None, -1),
        lambda: docsets.with_doc(None, True),
        lambda: docsets.without_doc(b"\x01\x00", 1.0),
        lambda: docsets.union(b"\x01", None),
        lambda: docsets.encode(-1),
        lambda: docsets.encode(1 << 4096),
    ],
)
def test_docset_functions_refuse_bad_arguments(call: Callable[[], object]) -> None:
    with pytest.raises(docsets.DocsetError):
        call()


@pytest.mark.parametrize("rows", [2**63 - 1, 2**62])
def test_a_damaged_expiry_count_is_one_error_on_both_engines_and_reindex_mends_it(
    tmp_path: Path, rows: int
) -> None:
    """A count of 2**63 - 1 made SQL's sum() overflow: a bare "SQL logic error" on the native
    engine (and, past one level's sum, a signed overflow in C), "integer overflow" on the Python
    engine. The index tables are unguarded; what matters is that the damage is named, alike."""
    from conftest import ENGINES

    from pyevidence import SchemaError

    said = {}
    for engine in ENGINES:
        db = tmp_path / f"{engine}.db"
        with EvidenceStore(db, engine=engine) as store:
            store.put_many(
                [{"tenant": "t", "record_id": f"r{i}", "revision": "v1", "kind": "runbook",
                  "body": "queue lag", "source": "s", "expires_at": 5 + 1000 * i} for i in range(3)]
            )  # fmt: skip
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE evidence_index_expiry SET rows = ?", (rows,))
        conn.close()
        with EvidenceStore(db, engine=engine) as store:
            with pytest.raises(SchemaError) as damaged:
                store.retrieve(tenant="t", revision="v1", query="queue", now=3000)
            said[engine] = str(damaged.value)
            store.reindex()
            assert store.retrieve(tenant="t", revision="v1", query="queue", now=3000).eligible_count == 0
            assert store.retrieve(tenant="t", revision="v1", query="queue", now=1000).eligible_count == 2
    damage = "the token index disagrees with the stored records; rebuild it with `pyevidence reindex`"
    assert said == dict.fromkeys(ENGINES, f"retrieve failed: {damage}")
