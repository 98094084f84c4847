"""Immutable versions, reproducible citations, the hash chain, forget, and the v1 upgrade."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import record, tamper
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import rich_text

from pyevidence import (
    EvidenceStore,
    Limits,
    SchemaError,
    StoreError,
    ValidationError,
    native_available,
)
from pyevidence.core.hashing import FIRST_PREVIOUS, sha256_fields
from pyevidence.interfaces.cli import main
from pyevidence.storage import schema, sql_functions
from pyevidence.storage.versions import chain_hash, content_hash, put_hashes

FIXTURES = Path(__file__).parent / "fixtures"
needs_native = pytest.mark.skipif(not native_available(), reason="native engine not built")

# ---- the hash: C and Python are one function


fields = st.lists(st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | rich_text, max_size=8)


@needs_native
@given(values=fields)
def test_c_hash_equals_python_hash(values: list[Any]) -> None:
    with EvidenceStore(":memory:", engine="native") as store:
        marks = ", ".join("?" for _ in values)
        assert store.query(f"SELECT evidence_sha256({marks})", values).rows[0][0] == sha256_fields(*values)


# evidence_hash_bytes(): hex digits, hashes, near misses (case, length, other letters), other types
hash_bytes_arguments = (
    st.none()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.binary(max_size=40)
    | st.text(alphabet="0123456789abcdefABCDEFgx", min_size=62, max_size=66)
    | fields.map(lambda values: sha256_fields(*values))
)


@needs_native
@given(value=hash_bytes_arguments)
def test_c_hash_bytes_equals_python_hash_bytes(value: Any) -> None:
    """The stored form of a hash: the same bytes from C and Python, or an error from both."""
    try:
        expected: Any = sql_functions.hash_bytes(value)
    except ValueError:
        expected = "error"
    with EvidenceStore(":memory:", engine="native") as store:
        try:
            got = store.query("SELECT evidence_hash_bytes(?)", [value]).rows[0][0]
        except StoreError as exc:
            assert "takes 64 lowercase hex digits" in str(exc)
            got = "error"
    assert got == expected
    if isinstance(value, str) and expected != "error":
        assert expected.hex() == value and len(expected) == 32


def test_hash_encoding_keeps_fields_apart() -> None:
    assert sha256_fields("ab", "c") != sha256_fields("a", "bc")
    assert len({sha256_fields(None), sha256_fields(""), sha256_fields(0), sha256_fields("0")}) == 4
    assert sha256_fields() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_hash_of_a_subclass_value_is_the_hash_of_the_value() -> None:
    """What C hashes is the value SQLite stores: a str or int subclass's own __str__,
    __format__ or __repr__ must not change the encoding."""

    class Shouting(str):
        def __str__(self) -> str:
            return self.upper()

        def __format__(self, spec: str) -> str:
            return "formatted"

    class Level(int):
        def __str__(self) -> str:
            return "level"

        def __repr__(self) -> str:
            return "Level()"

    assert sha256_fields(Shouting("ab"), Shouting("é"), Level(3)) == sha256_fields("ab", "é", 3)


class _Shouting(str):
    def __format__(self, spec: str) -> str:
        return "formatted"


# put_hashes() writes sha256_fields' encoding itself for plain ASCII versions: the ASCII
# text of a record, plus non-ASCII text, a str subclass, a digest or "" as the previous
# hash, and numbers from 1 to int64's largest, so that both of its paths are taken.
_put_text = st.text(alphabet=st.characters(max_codepoint=127), min_size=1, max_size=12) | rich_text
_put_field = _put_text | _put_text.map(_Shouting)


@given(
    previous=st.just(FIRST_PREVIOUS) | fields.map(lambda values: sha256_fields(*values)) | _put_field,
    numbers=st.lists(st.integers(min_value=0, max_value=2**63 - 1), min_size=3, max_size=3),
    text=st.lists(_put_field, min_size=5, max_size=5),
)
@example(previous=FIRST_PREVIOUS, numbers=[1, 1, 0], text=["acme", "r-1", "main", "disk full", "ops"])
@example(previous=sha256_fields("x"), numbers=[7, 2, 2**63 - 1], text=["t", "r", "v", "b", "s"])
def test_put_hashes_equals_the_hashes_of_the_fields(
    previous: str, numbers: list[int], text: list[str]
) -> None:
    """The examples take the fast path (plain ASCII); the random fields take either."""
    chain_seq, seq, expires_at = numbers
    tenant, record_id, revision, body, source = text
    for kind in ("working", "incident", _Shouting("runbook")):
        fields = (tenant, record_id, revision, kind, body, source, expires_at)
        content = content_hash(*fields)
        chain = chain_hash(previous, chain_seq, record_id, seq, "put", content)
        got = put_hashes(previous, chain_seq, seq, *fields)
        assert got == (bytes.fromhex(content), bytes.fromhex(chain))


# ---- versions, history and citations


def test_every_put_is_a_new_version_and_old_ones_resolve(store: EvidenceStore) -> None:
    store.put(**record(body="restart the queue consumer"))
    cited = store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)[0]
    store.put(**record(body="drain the queue first"))
    store.put(**record(body="drain the queue first"))  # same content: still a new version
    history = store.history(tenant="team-a", record_id="r1")
    assert [(v.seq, v.operation, v.body) for v in history] == [
        (1, "put", "restart the queue consumer"),
        (2, "put", "drain the queue first"),
        (3, "put", "drain the queue first"),
    ]
    assert history[1].content_hash == history[2].content_hash and history[1].version != history[2].version
    assert cited.version == history[0].version
    assert cited.cite() == f"runbook://queue/v1@{cited.version}"
    lookup = store.get_version(tenant="team-a", record_id="r1", version=cited.version)
    assert lookup.status == "found" and lookup.version == history[0]
    assert (lookup.version.body, lookup.version.source, lookup.version.revision) == (
        cited.body,
        cited.citation,
        cited.revision,
    )
    current = store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)[0]
    assert current.version == history[2].version and current.body == "drain the queue first"


def test_content_hash_is_the_documented_encoding(store: EvidenceStore) -> None:
    fields = record(body="a\x00b İ")
    store.put(**fields)
    (version,) = store.history(tenant="team-a", record_id="r1")
    args = [fields[k] for k in ("tenant", "record_id", "revision", "kind", "body", "source", "expires_at")]
    assert version.content_hash == sha256_fields("pyevidence content 2", *args)
    assert version.chain_hash == sha256_fields(
        "pyevidence chain 2", "", 1, "r1", 1, "put", version.content_hash
    )


def test_unknown_versions(store: EvidenceStore) -> None:
    store.put(**record())
    version = store.history(tenant="team-a", record_id="r1")[0].version
    digest = version.split("-")[1]
    for tenant, record_id, asked in [
        ("team-b", "r1", version),  # another tenant never sees it
        ("team-a", "r2", version),
        ("team-a", "r1", f"2-{digest}"),
        ("team-a", "r1", f"1-{'0' * 64}"),
    ]:
        assert store.get_version(tenant=tenant, record_id=record_id, version=asked).status == "unknown"
    assert store.history(tenant="team-b", record_id="r1") == ()


@pytest.mark.parametrize(
    "bad", ["", "1", "0-" + "a" * 64, "1-" + "A" * 64, "1-abc", 3, None, "1-" + "a" * 65]
)
def test_malformed_version_is_a_validation_error(store: EvidenceStore, bad: Any) -> None:
    with pytest.raises(ValidationError, match="version"):
        store.get_version(tenant="team-a", record_id="r1", version=bad)


def test_put_many_makes_one_version_per_record_in_order(store: EvidenceStore) -> None:
    store.put_many([record(body="one"), record(body="two"), record(record_id="r2", body="three")])
    assert [v.body for v in store.history(tenant="team-a", record_id="r1")] == ["one", "two"]
    assert [v.chain_seq for v in store.history(tenant="team-a", record_id="r2")] == [3]
    with pytest.raises(ValidationError):
        store.put_many([record(body="four"), record(kind="bogus")])
    assert len(store.history(tenant="team-a", record_id="r1")) == 2  # nothing of the failed batch


# ---- forget


def test_forget_erases_every_version_and_keeps_a_verifiable_tombstone(
    open_store: Any, tmp_path: Path
) -> None:
    path = tmp_path / "forget.db"
    secret = "the root password is hunter2-zebra"
    with open_store(path) as store:
        store.put(**record(body=f"{secret} v1"))
        cited = store.history(tenant="team-a", record_id="r1")[0]
        store.put(**record(body=f"{secret} v2"))
        store.put(**record(record_id="r2", body="unrelated queue runbook"))
        assert store.forget(tenant="team-a", record_id="r1") is True
        history = store.history(tenant="team-a", record_id="r1")
        assert [(v.operation, v.body, v.source, v.expires_at) for v in history] == [
            ("put", None, None, None),
            ("put", None, None, None),
            ("forget", None, None, None),
        ]
        assert all(v.forgotten for v in history)
        lookup = store.get_version(tenant="team-a", record_id="r1", version=cited.version)
        assert lookup.status == "forgotten" and lookup.version is not None and lookup.version.body is None
        assert store.verify(tenant="team-a").ok
        assert store.retrieve(tenant="team-a", revision="v1", query="password", now=0).eligible_count == 1
        assert store.forget(tenant="team-a", record_id="r1") is False  # nothing left to forget
        store.put(**record(body="a fresh start"))
        assert [v.seq for v in store.history(tenant="team-a", record_id="r1")] == [1, 2, 3, 4]
        assert store.history(tenant="team-a", record_id="r1")[-1].body == "a fresh start"
    # secure_delete: the forgotten text is gone from the file, free pages included.
    assert b"hunter2-zebra" not in path.read_bytes()


def _on_disk(path: Path, text: bytes) -> int:
    """How many times ``text`` is in the database file and its WAL."""
    return sum(p.read_bytes().count(text) for p in (path, Path(f"{path}-wal")) if p.exists())


def _secrets(prefix: str, n: int) -> list[dict[str, object]]:
    return [
        record(record_id=f"{prefix}{i}", body=f"SECRETPASSWORD-{i} " + "queue runbook " * 40)
        for i in range(n)
    ]


def test_forgotten_text_is_out_of_the_wal_when_forget_returns(engine: str, tmp_path: Path) -> None:
    """Before, the erased text stayed in the WAL (and in the file, whose pages were only
    overwritten at a checkpoint) after forget returned, and after every process exited when a
    reader had the store open: the writer's close did not checkpoint, the reader's could not.
    A long-lived writer kept it too, in frames past the log's new end after a checkpoint."""
    path = tmp_path / "erase.db"
    secret = b"SECRETPASSWORD"
    with EvidenceStore(path, engine=engine) as writer:
        writer.put_many(_secrets("r", 300))
        writer.put_many([record(record_id=f"k{i}", body=f"kept {i} queue runbook") for i in range(300)])
        reader = EvidenceStore(path, engine=engine, read_only=True)  # open and idle, as serve or mcp
        try:
            assert reader.retrieve(tenant="team-a", revision="v1", query="kept", now=0).eligible_count == 600
            assert _on_disk(path, secret) > 0
            for i in range(300):
                assert writer.forget(tenant="team-a", record_id=f"r{i}") is True
            assert _on_disk(path, secret) == 0  # with both still open
            assert reader.retrieve(tenant="team-a", revision="v1", query="kept", now=0).eligible_count == 300
            assert reader.verify(tenant="team-a").ok
        finally:
            reader.close()
    assert _on_disk(path, secret) == 0


def test_a_reader_of_an_older_snapshot_delays_the_erasure_until_it_ends(engine: str, tmp_path: Path) -> None:
    """SQLite cannot empty the WAL while another connection reads it: forget tries for a third
    of a second, returns, and the store erases the text from the WAL once the reader has
    ended, at its next forget (one that finds nothing to forget too) or close."""
    path = tmp_path / "erase.db"
    secret = b"SECRETPASSWORD"
    with EvidenceStore(path, engine=engine) as writer:
        writer.put_many(_secrets("r", 20))
        reader = sqlite3.connect(path, isolation_level=None)  # a host's own connection
        try:
            reader.execute("BEGIN")
            assert reader.execute("SELECT count(*) FROM evidence_versions").fetchone() == (20,)
            assert writer.forget(tenant="team-a", record_id="r0") is True
            assert _on_disk(path, b"SECRETPASSWORD-0 ") > 0  # the reader's snapshot still needs them
            reader.execute("COMMIT")
        finally:
            reader.close()
        assert writer.forget(tenant="team-a", record_id="nothing-of-that-name") is False
        assert _on_disk(path, b"SECRETPASSWORD-0 ") == 0
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM evidence_versions").fetchone()
            assert writer.forget(tenant="team-a", record_id="r2") is True
            reader.execute("COMMIT")  # ended, and still connected: close() is the next try
            writer.close()
            assert _on_disk(path, b"SECRETPASSWORD-2 ") == 0
        finally:
            reader.close()
    assert _on_disk(path, secret) == 18  # r1, r3..r19, kept: only forget erases


def test_erasing_a_forget_from_the_wal_holds_up_no_other_writer(engine: str, tmp_path: Path) -> None:
    """The checkpoint first waited for the reader with the write lock held: a put of another
    process during those 5 s failed with "database is locked", and forget took 5 s."""
    path = tmp_path / "erase.db"
    with EvidenceStore(path, engine=engine) as forgetting, EvidenceStore(path, engine=engine) as putting:
        forgetting.put_many(_secrets("r", 20))
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM evidence_versions").fetchone()
            took: list[float] = []

            def forget() -> None:
                started = time.monotonic()
                forgetting.forget(tenant="team-a", record_id="r0")
                took.append(time.monotonic() - started)

            thread = threading.Thread(target=forget)
            thread.start()
            time.sleep(0.05)  # into the checkpoint's tries
            started = time.monotonic()
            putting.put(**record(record_id="during", body="put while forget erased"))
            put_took = time.monotonic() - started
            thread.join()
        finally:
            reader.close()
        assert took and took[0] < 2.5 and put_took < 2.5, (took, put_took)
        assert putting.history(tenant="team-a", record_id="during")[-1].body == "put while forget erased"


# ---- immutability, enforced by the schema


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("UPDATE evidence_versions SET body = 'rewritten'", "immutable"),
        (
            "UPDATE evidence_versions SET body = NULL, revision = NULL, kind = NULL, source = NULL,"
            " expires_at = NULL",
            "immutable",
        ),
        ("DELETE FROM evidence_versions", "never deleted"),
        ("UPDATE evidence SET body = 'rewritten'", "evidence_put"),
        (
            "INSERT INTO evidence (tenant, revision, expires_at, record_id, kind, body, source, version,"
            " content_hash) VALUES ('team-a', 'v1', 9, 'x', 'runbook', 'b', 's', 1, 'h')",
            "evidence_put",
        ),
        ("UPDATE evidence_current SET expires_at = 5", "evidence_put"),
        ("UPDATE evidence_current SET chain_seq = 2", "evidence_put"),
        (
            "INSERT INTO evidence_current (tenant, revision, expires_at, record_id, chain_seq)"
            " VALUES ('team-a', 'v1', 9, 'x', 1)",
            "evidence_put",
        ),
    ],
)
def test_raw_sql_cannot_rewrite_history(open_store: Any, tmp_path: Path, sql: str, message: str) -> None:
    path = tmp_path / "raw.db"
    with open_store(path) as store:
        store.put(**record())
    before = path.read_bytes()
    conn = sqlite3.connect(path)
    sql_functions.register(conn)  # as a raw-SQL writer has them (docs/sql.md)
    with pytest.raises(sqlite3.IntegrityError, match=message):
        conn.execute(sql)
    conn.close()
    # Without pyevidence's functions a write to evidence_current cannot even start: its
    # triggers (the token index's) call them. The history's guards and the view evidence's
    # refusals need none.
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.Error, match="no such function" if "evidence_current" in sql else message):
        conn.execute(sql)
    conn.close()
    assert path.read_bytes() == before


def test_delete_from_evidence_in_sql_is_a_forget(open_store: Any, tmp_path: Path) -> None:
    path = tmp_path / "sqlforget.db"
    with open_store(path) as store:
        store.put(**record())
    conn = sqlite3.connect(path)
    sql_functions.register(conn)
    with conn:
        conn.execute("DELETE FROM evidence WHERE tenant = 'team-a' AND record_id = 'r1'")
    conn.close()
    with open_store(path) as store:
        assert [v.operation for v in store.history(tenant="team-a", record_id="r1")] == ["put", "forget"]
        assert store.verify(tenant="team-a").ok


@pytest.mark.parametrize(("table", "counted"), [("evidence", 0), ("evidence_current", 1)])
def test_both_deletes_in_sql_are_the_same_forget(
    open_store: Any, tmp_path: Path, table: str, counted: int
) -> None:
    """evidence is a view (docs/sql.md): its delete forgets through a trigger, which SQLite's
    changes() does not count; a delete from evidence_current is the same forget, counted."""
    path = tmp_path / "sqlforget.db"
    with open_store(path) as store:
        store.put(**record(body="queue first"))
        store.put(**record(body="queue second"))
        store.put(**record(record_id="r2", body="queue kept"))
    conn = sqlite3.connect(path)
    sql_functions.register(conn)
    with conn:
        deleted = conn.execute(f"DELETE FROM {table} WHERE tenant = 'team-a' AND record_id = 'r1'").rowcount
    erased = conn.execute(
        "SELECT count(*) FROM evidence_versions WHERE record_id = 'r1' AND operation = 'put' AND body IS NULL"
    )
    assert (deleted, erased.fetchone()[0]) == (counted, 2)
    conn.close()
    with open_store(path) as store:
        assert [v.operation for v in store.history(tenant="team-a", record_id="r1")] == [
            "put",
            "put",
            "forget",
        ]
        assert store.verify(tenant="team-a").ok and store.check_index().ok
        hits = store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).hits
        assert [hit.record_id for hit in hits] == ["r2"]


# ---- verify finds tampering


def _three_versions(open_store: Any, path: Path) -> None:
    with open_store(path) as store:
        store.put(**record(body="first"))
        store.put(**record(record_id="r2", body="second"))
        store.put(**record(body="third"))
        store.put(**record(tenant="team-b", body="other tenant"))


@pytest.mark.parametrize(
    ("statements", "chain_seq", "reason"),
    [
        (
            ["UPDATE evidence_versions SET body = 'edited' WHERE tenant = 'team-a' AND chain_seq = 2"],
            2,
            "content does not match",
        ),
        (
            ["UPDATE evidence_current SET expires_at = 7 WHERE tenant = 'team-a' AND record_id = 'r1'"],
            3,
            "current row differs",
        ),
        (
            ["DELETE FROM evidence_versions WHERE tenant = 'team-a' AND chain_seq = 2"],
            3,
            "position 2 is missing",
        ),
        (
            [
                "UPDATE evidence_versions SET chain_hash = zeroblob(32)"
                " WHERE tenant = 'team-a' AND chain_seq = 1"
            ],
            1,
            "chain hash does not match",
        ),
        (
            [
                "UPDATE evidence_versions SET revision = NULL, kind = NULL, body = NULL, source = NULL,"
                " expires_at = NULL WHERE tenant = 'team-a' AND chain_seq = 1"
            ],
            1,
            "never forgotten",
        ),
        (
            ["DELETE FROM evidence_current WHERE tenant = 'team-a' AND record_id = 'r2'"],
            2,
            "current row is missing",
        ),
        (  # the link to the record's version before it (schema version 11)
            ["UPDATE evidence_versions SET previous = 2 WHERE tenant = 'team-a' AND chain_seq = 3"],
            3,
            "names chain position 2 as the record's version before it, which is 1",
        ),
        (  # a live record named as forgotten
            ["INSERT INTO evidence_forgotten VALUES ('team-a', 'r2', 2)"],
            2,
            "not the record's tombstone",
        ),
    ],
)
def test_verify_reports_the_first_broken_link(
    open_store: Any, tmp_path: Path, statements: list[str], chain_seq: int, reason: str
) -> None:
    path = tmp_path / "tampered.db"
    _three_versions(open_store, path)
    with open_store(path) as store:
        assert store.verify(tenant="team-a").ok
    tamper(path, *statements)
    with open_store(path) as store:
        result = store.verify(tenant="team-a")
        assert not result.ok and result.broken is not None
        assert (result.broken.chain_seq, reason in result.broken.reason) == (chain_seq, True), result
        assert store.verify(tenant="team-b").ok  # another tenant's chain is its own


@pytest.mark.parametrize(
    ("stored", "column"),
    [({"expires_at": 0}, "expires_at"), ({"revision": "None"}, "revision"), ({"source": "None"}, "source")],
    ids=["expires_at 0", "revision 'None'", "source 'None'"],
)
def test_verify_hashes_what_is_stored_null_apart_from_zero_and_none(
    open_store: Any, tmp_path: Path, stored: dict[str, Any], column: str
) -> None:
    path = tmp_path / "nulled.db"
    with open_store(path) as store:
        store.put(**record(**stored))
        (cited,) = store.history(tenant="team-a", record_id="r1")
    tamper(
        path,
        "PRAGMA ignore_check_constraints = ON",
        f"UPDATE evidence_versions SET {column} = NULL WHERE tenant = 'team-a' AND record_id = 'r1'",
    )
    with open_store(path) as store:
        result = store.verify(tenant="team-a")
        assert not result.ok and result.broken is not None
        assert (result.broken.chain_seq, result.broken.reason) == (
            1,
            "part of its content is missing, which only forget may erase, and all of it",
        )
        with pytest.raises(
            StoreError, match=rf"^version {cited.version} of record 'r1' no longer holds what"
        ):
            store.get_version(tenant="team-a", record_id="r1", version=cited.version)


def test_verify_and_get_version_refuse_content_that_does_not_match_its_hash(
    open_store: Any, tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "edited.db"
    with open_store(path) as store:
        store.put(**record(body="first"))
        (cited,) = store.history(tenant="team-a", record_id="r1")
    tamper(path, "UPDATE evidence_versions SET body = 'edited'")  # the one copy of the body
    with open_store(path) as store:
        assert not store.verify(tenant="team-a").ok
        with pytest.raises(StoreError, match="the stored content does not match its content hash"):
            store.get_version(tenant="team-a", record_id="r1", version=cited.version)
    args = ["--db", str(path), "--tenant", "team-a", "--record-id", "r1", "--version", cited.version]
    assert main(["get-version", *args]) == 1
    assert "no longer holds what was stored" in capsys.readouterr().err


def test_cli_history_get_version_and_verify(open_store: Any, tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "cli.db"
    _three_versions(open_store, path)
    common = ["--db", str(path), "--tenant", "team-a"]
    assert main(["history", *common, "--record-id", "r1"]) == 0
    listed = json.loads(capsys.readouterr().out)["versions"]
    assert [v["body"] for v in listed] == ["first", "third"]
    assert main(["get-version", *common, "--record-id", "r1", "--version", listed[0]["version"]]) == 0
    assert json.loads(capsys.readouterr().out)["version"]["body"] == "first"
    assert main(["verify", *common]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    tamper(path, "UPDATE evidence_versions SET body = 'edited' WHERE tenant = 'team-a' AND chain_seq = 1")
    assert main(["verify", *common]) == 1
    assert json.loads(capsys.readouterr().out)["broken"]["chain_seq"] == 1
    assert main(["get-version", *common, "--record-id", "r1", "--version", "nope"]) == 2


def test_verify_all_tenants_names_each_broken_tenant_and_only_those(
    engine: str, tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "all.db"
    long_tenant = "t" * 2000  # over this machine's default Limits, stored under larger ones
    with EvidenceStore(path, engine=engine, limits=Limits(max_field_bytes=4096)) as store:
        for tenant in ("team-b", "team-a", "équipe", long_tenant):
            store.put(**record(tenant=tenant, body=f"{tenant} body"))
        store.put(**record(tenant="team-a", record_id="r2"))
        store.forget(tenant="team-a", record_id="r2")  # a tombstone is a version too
        assert store.tenants() == ("team-a", "team-b", long_tenant, "équipe")  # code point order
    args = ["verify", "--db", str(path), "--engine", engine, "--all-tenants"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == {
        "ok": True,
        "tenants_checked": 4,
        "versions_checked": 6,
        "current_checked": 4,
        "broken": [],
    }
    tamper(
        path,
        "UPDATE evidence_versions SET body = 'edited' WHERE tenant = 'team-b'",
        "UPDATE evidence_versions SET body = 'edited' WHERE tenant = 'équipe'",
    )
    assert main(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["tenants_checked"]) == (False, 4)
    assert [broken["tenant"] for broken in report["broken"]] == ["team-b", "équipe"]
    assert all("content does not match" in broken["broken"]["reason"] for broken in report["broken"])


def test_verify_all_tenants_sees_a_tenant_left_with_no_history_and_one_it_cannot_read(
    engine: str, tmp_path: Path, capsys: Any
) -> None:
    """A tenant whose versions were deleted outside pyevidence still has its current row, which
    names no version: found. A tenant with a row that cannot be read is named with what is
    wrong, and the tenants after it are still checked."""
    path = tmp_path / "damaged.db"
    with EvidenceStore(path, engine=engine) as store:
        for tenant in ("team-a", "team-b", "team-c", "team-d"):
            store.put(**record(tenant=tenant))
    tamper(
        path,
        "DELETE FROM evidence_versions WHERE tenant = 'team-a'",
        "UPDATE evidence_versions SET body = CAST(x'ff' AS TEXT) WHERE tenant = 'team-b'",
        "UPDATE evidence_versions SET body = 'edited' WHERE tenant = 'team-d'",
    )
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        assert store.tenants() == ("team-a", "team-b", "team-c", "team-d")
    assert main(["verify", "--db", str(path), "--engine", engine, "--all-tenants"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["tenants_checked"]) == (False, 4)
    assert [broken["tenant"] for broken in report["broken"]] == ["team-a", "team-b", "team-d"]
    assert "not valid UTF-8" in report["broken"][1]["error"]
    assert "content does not match" in report["broken"][2]["broken"]["reason"]


def test_verify_of_one_tenant_takes_a_tenant_stored_under_larger_limits(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "long.db"
    long_tenant = "t" * 2000
    with EvidenceStore(path, limits=Limits(max_field_bytes=4096)) as store:
        store.put(**record(tenant=long_tenant))
    assert main(["verify", "--db", str(path), "--tenant", long_tenant]) == 0
    assert json.loads(capsys.readouterr().out)["versions_checked"] == 1


def test_verify_takes_a_tenant_or_all_tenants(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "empty.db"
    EvidenceStore(path).close()
    assert main(["verify", "--db", str(path), "--all-tenants"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["tenants_checked"] == 0
    assert "no records in this store: nothing was verified" in captured.err
    for wrong, says in (
        ([], "one of the arguments --tenant --all-tenants is required"),
        (["--tenant", "t", "--all-tenants"], "argument --all-tenants: not allowed with argument --tenant"),
    ):
        with pytest.raises(SystemExit) as stopped:
            main(["verify", "--db", str(path), *wrong])
        assert stopped.value.code == 2 and says in capsys.readouterr().err


# ---- the upgrade from schema version 1 (pyevidence 0.1.0)


def test_a_database_made_by_0_1_0_is_upgraded_on_open(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(FIXTURES / "v1_store.db", path)
    expected = json.loads((FIXTURES / "v1_retrievals.json").read_text())
    with EvidenceStore(path, engine=engine) as store:
        for old in expected:
            tenant, revision, query, now = old["scope"]
            result = store.retrieve(tenant=tenant, revision=revision, query=query, now=now).to_dict()
            for hit in result["hits"]:
                assert hit.pop("version").startswith("1-")
            assert (result["eligible_count"], result["hits"]) == (old["eligible_count"], old["hits"])
            assert (result["status"], result["ranked_by"]) == ("ok", "token_overlap")
        for tenant in ("team-a", "team-b"):
            assert store.verify(tenant=tenant).ok
        (version,) = store.history(tenant="team-a", record_id="note-nul")
        assert version.body == "queue\x00lag with a NUL inside" and version.chain_seq == 2  # record_id order
        assert store.history(tenant="team-a", record_id="forgotten") == ()  # 0.1.0 deleted it outright
        store.put(**record(record_id="runbook-queue", body="updated after the upgrade"))
        assert [v.seq for v in store.history(tenant="team-a", record_id="runbook-queue")] == [1, 2]
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        assert frozenset(rows.fetchall()) == schema.expected_objects()
        assert conn.execute("PRAGMA user_version").fetchone() == (schema.SCHEMA_VERSION,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_a_version_1_database_is_not_upgraded_read_only_or_when_altered(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(FIXTURES / "v1_store.db", path)
    before = path.read_bytes()
    with pytest.raises(SchemaError, match="open it once without read_only"):
        EvidenceStore(path, engine=engine, read_only=True)
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE INDEX extra ON evidence (body)")
    conn.close()
    altered = path.read_bytes()
    with pytest.raises(SchemaError, match="tables differ from what that version created"):
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == altered
