"""The schema: one file, guards that agree with validation, recognition of foreign files."""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import pytest
from helpers import record

from pyevidence import EvidenceStore, SchemaError, schema, validation
from pyevidence.errors import ValidationError
from pyevidence.hashing import sha256_fields

SCHEMA_FILE = Path(schema.__file__).with_name("schema.sql")
PYTHON_WHITESPACE = {c for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def test_schema_whitespace_set_is_exactly_pythons() -> None:
    lists = re.findall(r"char\(([\d,]+)\)", SCHEMA_FILE.read_text())
    assert len(lists) == 5  # one per text column
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
    conn.create_function("evidence_sha256", -1, sha256_fields, deterministic=True)
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
    assert "SEARCH evidence USING PRIMARY KEY (tenant=? AND revision=? AND expires_at>?)" in detail


def test_schema_file_runs_twice_without_change(raw: sqlite3.Connection) -> None:
    before = raw.execute("SELECT * FROM sqlite_schema").fetchall()
    raw.executescript(schema.schema_sql())
    assert raw.execute("SELECT * FROM sqlite_schema").fetchall() == before


def test_engine_creates_exactly_the_schema_file(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    EvidenceStore(path, engine=engine).close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")
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
        ("CREATE TABLE evidence (x); PRAGMA user_version = 3;", "missing or altered: evidence"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 2;", "version 2 but its tables differ"),
        ("CREATE TABLE evidence (x); PRAGMA user_version = 1;", "version 1 but its tables differ"),
        ("PRAGMA user_version = 7;", "schema version 7, newer than this release"),
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
