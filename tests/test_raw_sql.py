"""Raw SQL at the door: a writer with the file and the pyevidence functions, but not the
API, stores exactly what put() and forget() would, or is refused with nothing changed.

Two raw writers: the stdlib sqlite3 with the Python engine's functions
(pyevidence.storage.sql_functions.register), and apsw with the loadable C extension.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from hypothesis import given
from hypothesis import strategies as st

import pyevidence
from pyevidence import Embedder, EvidenceStore
from pyevidence.storage import sql_functions, versions

apsw = pytest.importorskip("apsw", reason="apsw is the test host that can load extensions")

POLICIES = ["", "OR ABORT ", "OR FAIL ", "OR IGNORE ", "OR REPLACE ", "OR ROLLBACK "]
PUT = (
    "INSERT {policy}INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
    " VALUES (:tenant, :record_id, :revision, :kind, :body, :source, :expires_at)"
)
# evidence_current too: its document numbers are the token index's (schema.sql); and the index's
# own tables, which a write the checks let through could leave counting a record twice.
TABLES = (
    "evidence_versions",
    "evidence",
    "evidence_current",
    "evidence_forgotten",
    "evidence_vectors",
    "evidence_index_scopes",
    "evidence_index_postings",
    "evidence_index_expiry",
)


class Writer:
    """Raw SQL on a store's file; ``run`` returns the error text, or None.

    Each statement runs on a connection of its own, closed before anything else
    opens the file: apsw links its own copy of SQLite, and two copies of SQLite
    in one process must not hold the same file open at once (closing a file in
    one drops the other's POSIX locks)."""

    def __init__(self, kind: str, path: Path, recursive_triggers: bool) -> None:
        self.kind, self.path, self.recursive = kind, path, recursive_triggers

    def run(self, sql: str, params: Any = ()) -> str | None:
        if self.kind == "python":
            conn: Any = sqlite3.connect(self.path, isolation_level=None)
            sql_functions.register(conn)
        else:
            conn = apsw.Connection(str(self.path))
            pyevidence.load(conn)
        try:
            conn.execute(f"PRAGMA recursive_triggers = {int(self.recursive)}")
            conn.execute(sql, params).fetchall()
        except (sqlite3.Error, apsw.Error) as exc:
            return str(exc)
        finally:
            conn.close()
        return None

    def close(self) -> None:
        pass


@pytest.fixture(params=["python", "native"])
def writer_kind(request: pytest.FixtureRequest) -> str:
    if request.param == "native":
        try:
            pyevidence.loadable_path()
        except pyevidence.EngineUnavailableError:
            pytest.skip("loadable extension not built")
    return str(request.param)


def dump(path: Path) -> dict[str, list[Any]]:
    conn = sqlite3.connect(path)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}
    finally:
        conn.close()


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A store with two versions of r1, the second with a vector, and a forgotten record."""
    path = tmp_path / "raw.db"
    with EvidenceStore(path, engine="python", embedder=Embedder("toy", lambda text: [1.0, 0.5])) as store:
        store.put(**record(body="first body"))
        store.put(**record(body="second body"))  # with a vector
        store.put(**record(record_id="gone"))
        store.forget(tenant="team-a", record_id="gone")
    return path


@pytest.fixture
def writers(stored: Path, writer_kind: str) -> Iterator[list[Writer]]:
    opened = [Writer(writer_kind, stored, recursive) for recursive in (False, True)]
    yield opened
    for writer in opened:
        writer.close()


# ---- invalid UTF-8 is refused at the door, on both implementations


@pytest.mark.parametrize("field", ["tenant", "record_id", "revision", "kind", "body", "source"])
def test_invalid_utf8_through_evidence_put_is_refused(
    writers: list[Writer], stored: Path, field: str
) -> None:
    before = dump(stored)
    sql = PUT.format(policy="").replace(f":{field}", "CAST(x'71ff' AS TEXT)")
    params = {k: v for k, v in record(record_id="bad").items() if k != field}
    for writer in writers:
        error = writer.run(sql, params)
        assert error is not None and "must be valid UTF-8 text" in error, error
    assert dump(stored) == before
    for engine in ("python", "native"):  # every engine still reads and verifies the tenant
        with EvidenceStore(stored, engine=engine) as store:
            assert store.retrieve(tenant="team-a", revision="v1", query="body", now=0).eligible_count == 1
            assert store.verify(tenant="team-a").ok


@given(
    data=st.binary(max_size=12)
    | st.lists(
        st.sampled_from(
            [
                0x00,
                0x7F,
                0x80,
                0xBF,
                0xC0,
                0xC2,
                0xDF,
                0xE0,
                0xED,
                0xEF,
                0xF0,
                0xF4,
                0xF5,
                0xFF,
                0x9F,
                0xA0,
                0x8F,
                0x90,
            ]
        ),
        max_size=8,
    ).map(bytes)
)
def test_c_utf8_check_equals_python(data: bytes) -> None:
    try:
        pyevidence.loadable_path()
    except pyevidence.EngineUnavailableError:
        pytest.skip("loadable extension not built")
    conn = apsw.Connection(":memory:")
    pyevidence.load(conn)
    as_blob, as_text = conn.execute(
        "SELECT evidence_utf8_valid(?1), evidence_utf8_valid(CAST(?1 AS TEXT))", (data,)
    ).fetchall()[0]
    conn.close()
    try:
        data.decode("utf-8")
        decodes = 1
    except UnicodeDecodeError:
        decodes = 0
    assert as_blob == as_text == sql_functions.utf8_valid(data) == decodes


# ---- every conflict policy: exactly what put() stores, or refused


BAD_PUTS = [
    {"kind": "bogus"},
    {"body": "   "},
    {"expires_at": -1},
    {"tenant": "\u2003"},
    {"record_id": ""},
    {"revision": "\t"},
    {"source": " "},
    {"body": None},
    {"expires_at": "soon"},
]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("bad", BAD_PUTS, ids=repr)
def test_a_bad_put_is_refused_under_every_conflict_policy(
    writers: list[Writer], stored: Path, policy: str, bad: dict[str, object]
) -> None:
    before = dump(stored)
    for writer in writers:
        error = writer.run(PUT.format(policy=policy), record(**bad))
        assert error is not None and "evidence_put:" in error, (policy, error)
        assert dump(stored) == before
    with EvidenceStore(stored, engine="python") as store:
        assert store.verify(tenant="team-a").ok


@pytest.mark.parametrize("policy", POLICIES)
def test_a_good_put_stores_what_the_api_stores_under_every_conflict_policy(
    writer_kind: str, tmp_path: Path, policy: str
) -> None:
    dumps = []
    for how in ("api", "raw", "raw-recursive"):
        path = tmp_path / f"{how}.db"
        with EvidenceStore(path, engine="python") as store:
            store.put(**record(body="first body"))
            if how == "api":
                store.put(**record(body="second body"))
                store.put(**record(record_id="r2"))
        if how != "api":
            writer = Writer(writer_kind, path, recursive_triggers=how == "raw-recursive")
            assert writer.run(PUT.format(policy=policy), record(body="second body")) is None
            assert writer.run(PUT.format(policy=policy), record(record_id="r2")) is None
            writer.close()
        dumps.append(dump(path))
    assert dumps[0] == dumps[1] == dumps[2]


def _version(path: Path, seq: int) -> tuple[Any, ...]:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute(
            "SELECT tenant, revision, expires_at, record_id, kind, body, source, seq,"
            " lower(hex(content_hash)) FROM evidence_versions WHERE record_id = 'r1' AND seq = ?",
            (seq,),
        ).fetchone()
        return tuple(row)
    finally:
        conn.close()


def _next_link(
    path: Path, record_id: str, operation: str, content: tuple[Any, ...] | None = None, **link_to: int | None
) -> str:
    """An INSERT INTO evidence_versions of the tenant's next link, hashed as the triggers would;
    ``previous=`` names another version before it than the record's latest."""
    conn = sqlite3.connect(path)
    try:
        chain_seq, previous = conn.execute(
            "SELECT chain_seq, lower(hex(chain_hash)) FROM evidence_versions WHERE tenant = 'team-a'"
            " ORDER BY chain_seq DESC LIMIT 1"
        ).fetchone()
        # the record's latest version (its seq and place), as the history's list links them
        seq, latest = conn.execute(
            "SELECT coalesce(max(seq), 0), max(chain_seq) FROM evidence_versions"
            " WHERE tenant = 'team-a' AND record_id = ?",
            (record_id,),
        ).fetchone()
    finally:
        conn.close()
    seq += 1
    if operation == "put":
        fields = content if content is not None else ("v1", "runbook", "raw body", "raw://1", 7)
        digest = versions.content_hash("team-a", record_id, *fields)  # type: ignore[arg-type]
    else:
        fields = (None, None, None, None, None)
        digest = versions.forget_hash("team-a", record_id, seq)
    link = versions.chain_hash(previous, chain_seq + 1, record_id, seq, operation, digest)
    # the hashes as the 32-byte blobs the table stores
    values = (
        "team-a",
        chain_seq + 1,
        record_id,
        seq,
        link_to.get("previous", latest),
        operation,
        *fields,
        bytes.fromhex(digest),
        bytes.fromhex(link),
    )
    shown = ", ".join(
        "NULL"
        if v is None
        else f"X'{v.hex()}'"
        if isinstance(v, bytes)
        else repr(v)
        if isinstance(v, str)
        else str(v)
        for v in values
    )
    return (
        "INSERT {policy}INTO evidence_versions (tenant, chain_seq, record_id, seq, previous, operation,"
        f" revision, kind, body, source, expires_at, content_hash, chain_hash) VALUES ({shown})"
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_a_raw_next_link_is_exactly_a_put(writer_kind: str, tmp_path: Path, policy: str) -> None:
    dumps = []
    for how in ("api", "raw"):
        path = tmp_path / f"{how}.db"
        with EvidenceStore(path, engine="python") as store:
            store.put(**record(body="first body"))
            if how == "api":
                store.put(
                    **record(revision="v1", kind="runbook", body="raw body", source="raw://1", expires_at=7)
                )
        if how == "raw":
            writer = Writer(writer_kind, path, recursive_triggers=False)
            assert writer.run(_next_link(path, "r1", "put").format(policy=policy)) is None
            writer.close()
        dumps.append(dump(path))
    assert dumps[0] == dumps[1]


CURRENT_COLUMNS = "(tenant, revision, expires_at, record_id, kind, body, source, version, content_hash)"


def _direct_writes(path: Path) -> list[str]:
    """Raw writes past evidence_put, each something the API never does."""
    old = _version(path, 1)
    current = _version(path, 2)
    marks = ", ".join("?" for _ in old)

    def literal(row: tuple[Any, ...]) -> str:
        return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in row)

    return [
        # the current row back to an older version (a rollback put() cannot make)
        f"INSERT {{policy}}INTO evidence {CURRENT_COLUMNS} VALUES ({literal(old)})",
        "UPDATE {policy}evidence SET body = 'first body', version = 1, content_hash = '" + old[8] + "'"
        " WHERE record_id = 'r1'",
        # the current row again, as it is: with REPLACE and recursive triggers the
        # delete would run forget's trigger under the row put back
        f"INSERT {{policy}}INTO evidence {CURRENT_COLUMNS} VALUES ({literal(current)})",
        # versions are appended by evidence_put and forget only, and never rewritten
        "INSERT {policy}INTO evidence_versions (tenant, chain_seq, record_id, seq, operation, revision, kind,"
        " body, source, expires_at, content_hash, chain_hash)"
        " VALUES ('team-a', 99, 'r9', 1, 'put', 'v1', 'bogus', 'b', 's', -1, 'h', 'h')",
        "UPDATE {policy}evidence_versions SET body = 'rewritten' WHERE record_id = 'r1'",
        "UPDATE {policy}evidence_versions SET chain_seq = 1 WHERE chain_seq = 2",
        # well-hashed tombstones that forget would not append: for a live record, and
        # for one already forgotten
        _next_link(path, "r1", "forget"),
        _next_link(path, "gone", "forget"),
        # a well-hashed put without content
        _next_link(path, "r1", "put", (None, None, None, None, None)),
        # a well-hashed next put that names another version as the record's latest, or none
        _next_link(path, "r1", "put", previous=1),
        _next_link(path, "r1", "put", previous=None),
        # a version's link to the one before it is not rewritten
        "UPDATE {policy}evidence_versions SET previous = NULL WHERE record_id = 'r1' AND seq = 2",
        # evidence_forgotten is forget's: not a row for a live record, not a row moved
        # to another version, not a row dropped without a put of the record
        "INSERT {policy}INTO evidence_forgotten (tenant, record_id, chain_seq) VALUES ('team-a', 'r1', 2)",
        "INSERT {policy}INTO evidence_forgotten (tenant, record_id, chain_seq) VALUES ('team-a', 'r1', 1)",
        "UPDATE {policy}evidence_forgotten SET chain_seq = 3 WHERE record_id = 'gone'",
        "UPDATE {policy}evidence_forgotten SET record_id = 'r1' WHERE record_id = 'gone'",
        "DELETE FROM evidence_forgotten WHERE record_id = 'gone'",
        # the current row written over with itself: no new version, so its vector stays
        "UPDATE {policy}evidence SET body = body",
        # a document number the index did not give: another, the freed number of the
        # forgotten record, the scope's next, and a row inserted with a number of its own
        "UPDATE {policy}evidence_current SET doc = doc + 7 WHERE record_id = 'r1'",
        "UPDATE {policy}evidence_current SET doc = 1 WHERE record_id = 'r1'",
        "UPDATE {policy}evidence_current SET doc = (SELECT next_doc FROM evidence_index_scopes)"
        " WHERE record_id = 'r1'",
        "INSERT {policy}INTO evidence_current"
        " SELECT tenant, revision, expires_at, record_id, doc + 1, chain_seq FROM evidence_current"
        " WHERE record_id = 'r1'",
        # the current row put back as it is, straight into the table: with REPLACE and recursive
        # triggers off, the delete runs no trigger and the insert passes every check of a row
        "INSERT {policy}INTO evidence_current SELECT * FROM evidence_current WHERE record_id = 'r1'",
        # vectors are never updated: a record gets a new one with its next version
        "UPDATE {policy}evidence_vectors SET embedding = x'0000803f0000803f'",
        # a vector of a version that is not the current one
        "INSERT {policy}INTO evidence_vectors (tenant, record_id, version, model, dims, embedding)"
        " VALUES ('team-a', 'r1', 1, 'm', 1, x'0000803f')",
    ] + [marks] * 0


@pytest.mark.parametrize("policy", POLICIES)
def test_direct_writes_past_evidence_put_are_refused_under_every_conflict_policy(
    writers: list[Writer], stored: Path, policy: str
) -> None:
    before = dump(stored)
    for statement in _direct_writes(stored):
        for writer in writers:
            writer.run(statement.format(policy=policy))  # refused, or (OR IGNORE) skipped
            assert dump(stored) == before, (statement, policy, writer.kind)
    with EvidenceStore(stored, engine="python") as store:
        assert store.verify(tenant="team-a").ok
        assert store.check_index().ok


@pytest.mark.parametrize("recursive", [False, True])
def test_a_raw_forget_is_exactly_a_forget(writer_kind: str, tmp_path: Path, recursive: bool) -> None:
    dumps = []
    for how in ("api", "raw"):
        path = tmp_path / f"{how}.db"
        with EvidenceStore(path, engine="python", embedder=Embedder("toy", lambda text: [1.0, 0.5])) as store:
            store.put(**record(body="first body"))
            store.put(**record(body="second body"))
            store.put(**record(record_id="r2"))
            if how == "api":
                assert store.forget(tenant="team-a", record_id="r1")
        if how == "raw":
            writer = Writer(writer_kind, path, recursive_triggers=recursive)
            assert writer.run("DELETE FROM evidence WHERE tenant = 'team-a' AND record_id = 'r1'") is None
        dumps.append(dump(path))
    assert dumps[0] == dumps[1]
