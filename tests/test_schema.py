"""The schema: one file, guards that agree with validation, recognition of foreign files."""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from helpers import record

from pyevidence import EvidenceStore, SchemaError
from pyevidence.core import validation
from pyevidence.core.errors import ValidationError
from pyevidence.storage import schema, sql_functions

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA_FILE = Path(schema.__file__).with_name("schema.sql")
PYTHON_WHITESPACE = {c for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def test_schema_whitespace_set_is_exactly_pythons() -> None:
    lists = re.findall(r"char\(([\d,]+)\)", SCHEMA_FILE.read_text())
    # one per text column of evidence_versions, and the put trigger's guard
    assert len(lists) == 10
    for listed in lists:
        assert {int(c) for c in listed.split(",")} == PYTHON_WHITESPACE


def raw_insert(conn: sqlite3.Connection, **overrides: object) -> None:
    values = record(**overrides)
    conn.execute(
        "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
        " VALUES (:tenant, :record_id, :revision, :kind, :body, :source, :expires_at)",
        values,
    )


def validation_accepts(**overrides: object) -> bool:
    try:
        validation.record(**record(**overrides))  # type: ignore[arg-type]
    except ValidationError:
        return False
    return True


@pytest.fixture
def raw() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    sql_functions.register(conn)
    conn.executescript(schema.schema_sql())
    return conn


SAMPLES: list[dict[str, object]] = [
    *({f: chr(c)} for f in ("tenant", "body") for c in sorted(PYTHON_WHITESPACE)),
    *({f: chr(c) * 3 + "x"} for f in ("record_id", "source") for c in sorted(PYTHON_WHITESPACE)),
    {"tenant": "\x00"},  # NUL is not whitespace, and length() would have said 0
    {"revision": "\u200b"},  # zero width space: not whitespace to Python
    {"kind": "Runbook"},
    {"kind": "incident"},
    {"expires_at": -1},
    {"expires_at": 0},
    {"expires_at": 2**63 - 1},
]


@pytest.mark.parametrize("overrides", SAMPLES, ids=repr)
def test_check_constraints_agree_with_validation(
    raw: sqlite3.Connection, overrides: dict[str, object]
) -> None:
    try:
        raw_insert(raw, **overrides)
        stored = True
    except sqlite3.IntegrityError:
        stored = False
    assert stored == validation_accepts(**overrides)


@pytest.mark.parametrize(
    "overrides",
    [{"expires_at": "soon"}, {"expires_at": 1.5}, {"body": b"blob"}, {"tenant": None}, {"kind": 1}],
    ids=repr,
)
def test_strict_table_refuses_wrong_types(raw: sqlite3.Connection, overrides: dict[str, object]) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        raw_insert(raw, **overrides)


def test_schema_has_version_and_reads_eligible_rows_in_one_range(raw: sqlite3.Connection) -> None:
    assert raw.execute("PRAGMA user_version").fetchone() == (schema.SCHEMA_VERSION,)
    plan = raw.execute("EXPLAIN QUERY PLAN " + schema.ELIGIBLE_SQL, {"1": "t", "2": "v", "3": 0}).fetchall()
    detail = " ".join(row[-1] for row in plan)
    assert "SEARCH c USING PRIMARY KEY (tenant=? AND revision=?)" in detail


def test_schema_file_runs_twice_without_change(raw: sqlite3.Connection) -> None:
    before = raw.execute("SELECT * FROM sqlite_schema").fetchall()
    raw.executescript(schema.schema_sql())
    assert raw.execute("SELECT * FROM sqlite_schema").fetchall() == before


def test_engine_creates_exactly_the_schema_file(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    EvidenceStore(path, engine=engine).close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        assert frozenset(rows.fetchall()) == schema.expected_objects()


def foreign_db(path: Path, script: str) -> bytes:
    with sqlite3.connect(path) as conn:
        conn.executescript(script)
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("CREATE TABLE notes (x);", "already holds notes"),
        (
            f"CREATE TABLE evidence (x); PRAGMA user_version = {schema.SCHEMA_VERSION};",
            "missing or altered: evidence",
        ),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 7;", "version 7 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 6;", "version 6 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 5;", "version 5 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 4;", "version 4 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 3;", "version 3 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 2;", "version 2 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 1;", "version 1 but its tables differ"),
        (
            f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1};",
            f"schema version {schema.SCHEMA_VERSION + 1}, newer than this release",
        ),
        ("CREATE TABLE evidence (x);", "already holds evidence"),
    ],
)
def test_foreign_databases_are_refused_untouched(
    engine: str, tmp_path: Path, script: str, message: str
) -> None:
    path = tmp_path / "foreign.db"
    before = foreign_db(path, script)
    with pytest.raises(SchemaError, match=message):
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == before


def test_a_file_that_is_not_sqlite_is_refused_untouched(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are not the droids\n" * 100)
    with pytest.raises(SchemaError, match=r"notes\.txt"):
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == b"these are not the droids\n" * 100


# ---- a file holding objects the schema does not define is refused

COPY_FORGOTTEN = (
    "CREATE TABLE side (body TEXT);"
    "CREATE TRIGGER copy_bodies BEFORE UPDATE ON evidence_versions WHEN NEW.body IS NULL"
    " BEGIN INSERT INTO side VALUES (OLD.body); END;"
)


def test_an_added_trigger_cannot_keep_forgotten_bodies(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "hostile.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(body="secret runbook"))
    with sqlite3.connect(path) as conn:
        conn.executescript(COPY_FORGOTTEN)
    conn.close()
    before = path.read_bytes()
    for read_only in (False, True):
        with pytest.raises(SchemaError) as info:
            EvidenceStore(path, engine=engine, read_only=read_only)
        assert str(info.value) == (
            f"{path} holds schema objects that pyevidence's schema does not define: table side, "
            "trigger copy_bodies (on evidence_versions). pyevidence opens only a file whose every table, "
            "index, view and trigger it knows, since an added trigger or view runs inside its reads and "
            'writes; if you added them yourself, remove them (DROP TABLE IF EXISTS "side"; DROP TRIGGER '
            'IF EXISTS "copy_bodies";) and open it again, or restore the store from a backup'
        )
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:  # the message's remedy works
        conn.executescript('DROP TABLE IF EXISTS "side"; DROP TRIGGER IF EXISTS "copy_bodies";')
    conn.close()
    with EvidenceStore(path, engine=engine) as store:
        assert store.forget(tenant="team-a", record_id="r1") and store.verify(tenant="team-a").ok


HOSTILE = {
    "an index": ("CREATE INDEX by_body ON evidence_versions (body);", "index by_body (on evidence_versions)"),
    "a view shadowing the eligibility relation": (
        "CREATE VIEW evidence_eligible AS SELECT * FROM evidence;",
        "view evidence_eligible",
    ),
    "a trigger on the vectors": (
        "CREATE TRIGGER keep_vectors BEFORE DELETE ON evidence_vectors BEGIN SELECT 1; END;",
        "trigger keep_vectors (on evidence_vectors)",
    ),
    "a virtual table and its shadow tables": (
        "CREATE VIRTUAL TABLE notes USING fts5(body);",
        "table notes, table notes_config",
    ),
    "one of our triggers, changed": (
        "DROP TRIGGER evidence_versions_are_kept;"
        "CREATE TRIGGER evidence_versions_are_kept BEFORE DELETE ON evidence_versions BEGIN SELECT 1; END;",
        "missing or altered: evidence_versions_are_kept",
    ),
    "an AUTOINCREMENT table": (
        "CREATE TABLE counter (n INTEGER PRIMARY KEY AUTOINCREMENT);",
        "table counter",
    ),
}


@pytest.mark.parametrize("case", HOSTILE, ids=str)
def test_a_file_with_objects_the_schema_does_not_define_is_refused(
    engine: str, tmp_path: Path, case: str
) -> None:
    script, named = HOSTILE[case]
    path = tmp_path / "hostile.db"
    EvidenceStore(path, engine=engine).close()
    with sqlite3.connect(path) as conn:
        conn.executescript(script)
    conn.close()
    before = path.read_bytes()
    with pytest.raises(SchemaError, match=re.escape(named)) as info:
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == before
    remedy = re.search(r"remove them \((.*)\) and open it again", str(info.value))
    if remedy is not None:  # the statements the message gives make the file open again
        with sqlite3.connect(path) as conn:
            conn.executescript(remedy.group(1))
        conn.close()
        EvidenceStore(path, engine=engine).close()


def test_a_trigger_named_like_sqlites_own_is_refused(engine: str, tmp_path: Path) -> None:
    # CREATE refuses the name, but a file can carry it (writable_schema), and SQLite runs it.
    path = tmp_path / "hostile.db"
    EvidenceStore(path, engine=engine).close()
    trigger = (
        "CREATE TRIGGER sqlite_keep BEFORE DELETE ON evidence_current BEGIN SELECT RAISE(ABORT, 'kept'); END"
    )
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "INSERT INTO sqlite_schema VALUES ('trigger', 'sqlite_keep', 'evidence_current', 0, ?)",
            (trigger,),
        )
    conn.close()
    with pytest.raises(SchemaError, match=r"trigger sqlite_keep \(on evidence_current\)"):
        EvidenceStore(path, engine=engine)


def test_sqlites_own_statistics_and_sequence_tables_are_accepted(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "analyzed.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record())
    with sqlite3.connect(path) as conn:  # what ANALYZE and a dropped AUTOINCREMENT table leave
        conn.executescript(
            "ANALYZE; CREATE TABLE counter (n INTEGER PRIMARY KEY AUTOINCREMENT);"
            " INSERT INTO counter DEFAULT VALUES; DROP TABLE counter;"
        )
    conn.close()
    with EvidenceStore(path, engine=engine) as store:
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count == 1


def test_a_file_that_stores_text_as_utf16_is_refused(engine: str, tmp_path: Path) -> None:
    # the put trigger's UTF-8 check reads stored bytes: UTF-16 ones would be misjudged
    path = tmp_path / "utf16.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    sql_functions.register(conn)
    conn.executescript(schema.schema_sql())
    conn.close()
    before = path.read_bytes()
    with pytest.raises(
        SchemaError, match="stores its text as UTF-16le, and pyevidence stores text as UTF-8 only"
    ):
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == before


# ---- the upgrade from schema version 3 (pyevidence 0.3.0), through 4, to the current one


def test_a_version_3_database_is_upgraded_to_the_current_version(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    shutil.copy(FIXTURES / "v3_store.db", path)
    before = path.read_bytes()
    with pytest.raises(
        SchemaError,
        match=f"schema version 3, which this release upgrades to {schema.SCHEMA_VERSION} when it opens it; "
        "open it once without read_only=True to upgrade it",
    ):
        EvidenceStore(path, engine=engine, read_only=True)
    assert path.read_bytes() == before
    with EvidenceStore(path, engine=engine) as store:
        assert store.verify(tenant="team-a").ok and store.verify(tenant="team-b").ok
        hits = store.retrieve(tenant="team-a", revision="v1", query="queue lag", now=0).hits
        assert [(h.record_id, h.body, h.version[:2]) for h in hits] == [
            ("runbook-queue", "restart the queue consumer, then check lag", "2-")
        ]
        assert (
            store.retrieve(tenant="team-b", revision="v1", query="queue", now=0)[0].record_id
            == "runbook-queue"
        )
        history = store.history(tenant="team-a", record_id="gone")
        assert [(v.operation, v.forgotten) for v in history] == [("put", True), ("forget", True)]
        assert [v.body for v in store.history(tenant="team-a", record_id="runbook-queue")] == [
            "restart the queue consumer",
            "restart the queue consumer, then check lag",
        ]
        store.put(**record(record_id="latency", body="after the upgrade"))
        assert store.verify(tenant="team-a").ok
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        assert frozenset(rows.fetchall()) == schema.expected_objects()
        assert conn.execute("PRAGMA user_version").fetchone() == (schema.SCHEMA_VERSION,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # the vectors of the records untouched since 0.3.0 are kept
        assert conn.execute("SELECT record_id FROM evidence_vectors ORDER BY 1").fetchall() == [
            ("runbook-queue",),
            ("runbook-queue",),
            ("zero",),
        ]
    conn.close()
    with EvidenceStore(path, engine=engine, read_only=True) as store:  # now it opens read-only too
        assert store.verify(tenant="team-a").ok


def test_a_version_3_database_with_a_bad_version_is_not_upgraded(engine: str, tmp_path: Path) -> None:
    # 0.3.0 let INSERT OR IGNORE INTO evidence_put keep a version with a bad kind
    path = tmp_path / "v3.db"
    shutil.copy(FIXTURES / "v3_store.db", path)
    with sqlite3.connect(path) as conn:
        sql_functions.register(conn)
        conn.execute(
            "INSERT OR IGNORE INTO evidence_put VALUES ('team-a', 'odd', 'v1', 'bogus', 'b', 's', 1)"
        )
        assert conn.execute("SELECT kind FROM evidence_versions WHERE record_id = 'odd'").fetchall() == [
            ("bogus",)
        ]
    conn.close()
    before = path.read_bytes()
    with pytest.raises(
        SchemaError,
        match=r"could not be upgraded from pyevidence schema version 3 to 4, "
        r"and is left as it was: .*CHECK constraint failed",
    ):
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == before
