"""The read-only SQL gate of store.query() and `pyevidence sql`: only allow-listed
functions and pragmas run, nothing writes, and what is refused is named."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import ENGINES
from helpers import record
from sql_gate_sweep import allow_lists

from pyevidence import EvidenceStore, StoreError, TokenScorer, native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="needs the native engine")

FUNCTION_REFUSED = "is not allowed in read-only SQL"


def sql_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyevidence", "sql", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "gate.db"
    with EvidenceStore(path, engine="native") as store:
        store.put(**record(body="queue consumer lag"))
    return path


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        ("SELECT FTS3_TOKENIZER('simple', x'0000000000000000')", "fts3_tokenizer"),
        ("SELECT load_extension('/nonexistent/libnothing')", "load_extension"),
        ("SELECT sqlite_log(1, 'x')", "sqlite_log"),
        ("SELECT zeroblob(1000000000)", "zeroblob"),
        ("SELECT count(*) FROM evidence WHERE body = fts3_tokenizer('porter')", "fts3_tokenizer"),
        ("SELECT last_insert_rowid()", "last_insert_rowid"),
    ],
)
def test_query_refuses_functions_not_known_to_be_harmless(db: Path, sql: str, name: str) -> None:
    with EvidenceStore(db, engine="native") as store:
        with pytest.raises(StoreError) as info:
            store.query(sql)
        assert f"function {name}() {FUNCTION_REFUSED}" in str(info.value)
        assert store.query("SELECT count(*) FROM evidence").rows == ((1,),)
    done = sql_cli(str(db), sql)
    assert done.returncode == 1 and f"function {name}() {FUNCTION_REFUSED}" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("SELECT sql FROM sqlite_stmt", "sqlite_stmt"),
        ("SELECT count(*) FROM dbstat", "dbstat"),
        ("SELECT record_id FROM evidence WHERE EXISTS (SELECT 1 FROM sqlite_stmt)", "sqlite_stmt"),
        ("WITH s AS (SELECT * FROM dbstat) SELECT count(*) FROM s", "dbstat"),
    ],
)
def test_query_refuses_tables_of_modules_not_known_to_only_read(db: Path, sql: str, name: str) -> None:
    """sqlite_stmt shows the connection's own statements and counters, dbstat the file's
    page layout: neither is the store's data, and neither is on the list."""
    with EvidenceStore(db, engine="native") as store:
        with pytest.raises(StoreError) as info:
            store.query(sql)
        assert f"table {name} {FUNCTION_REFUSED}" in str(info.value)
    done = sql_cli(str(db), sql)
    assert done.returncode == 1 and f"table {name} {FUNCTION_REFUSED}" in done.stderr


def test_query_reads_every_table_and_view_of_the_database_and_the_listed_tables(db: Path) -> None:
    with EvidenceStore(db, engine="native") as store:
        names = [
            name
            for (name,) in store.query("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')").rows
        ]
        assert "evidence_versions" in names and "evidence" in names
        for name in names:
            store.query(f'SELECT * FROM "{name}" LIMIT 1')
        assert store.query("SELECT count(*) FROM json_each('[1, 2]')").rows == ((2,),)
        assert store.query("SELECT count(*) FROM evidence_eligible('team-a', 'v1', 0)").rows == ((1,),)
        assert store.query("SELECT count(*) FROM pragma_table_info('evidence')").rows[0][0] > 5


def test_fts3_tokenizer_cannot_swap_a_pointer_and_crash_the_process(tmp_path: Path) -> None:
    """The exploit: read the 'simple' tokenizer's pointer, replace it with 8 bytes, then
    MATCH on an FTS3 table. Before the gate this segfaulted the process."""
    db = tmp_path / "fts.db"
    with EvidenceStore(db, engine="native") as store:
        store.put(**record())
    # A store file holding an FTS3 table is refused on open (an object the schema does not
    # define), so the table is added by another connection while the store is open.
    script = textwrap.dedent(
        f"""
        import sqlite3
        from pyevidence import EvidenceStore, StoreError
        with EvidenceStore({str(db)!r}, engine="native") as store:
            with sqlite3.connect({str(db)!r}) as conn:
                conn.execute("CREATE VIRTUAL TABLE notes USING fts3(body)")
                conn.execute("INSERT INTO notes VALUES ('queue lag')")
            conn.close()
            for sql, params in [
                ("SELECT fts3_tokenizer('simple')", []),
                ("SELECT fts3_tokenizer('simple', ?)", [bytes([0x41]) * 8]),
            ]:
                try:
                    store.query(sql, params)
                    print("ran", sql)
                except StoreError as exc:
                    print("refused", exc)
            print(store.query("SELECT rowid FROM notes WHERE notes MATCH 'queue'").rows)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["refused", "refused"]
    assert lines[2] == "((1,),)"


@pytest.mark.parametrize(
    "sql",
    [
        "PRAGMA optimize",
        "SELECT * FROM pragma_optimize",
        "SELECT * FROM pragma_optimize(0x10002)",
        "PRAGMA main.optimize",
        "PRAGMA wal_checkpoint",
        "PRAGMA incremental_vacuum",
        "PRAGMA shrink_memory",
        "PRAGMA cache_size = 5",
        "PRAGMA case_sensitive_like = 1",
    ],
)
def test_query_refuses_pragmas_that_are_not_known_to_only_read(db: Path, sql: str) -> None:
    with EvidenceStore(db, engine="native") as store:
        store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)  # gives optimize work
        with pytest.raises(StoreError, match=f"pragma \\w+ (with a value )?{FUNCTION_REFUSED}"):
            store.query(sql)
        stats = "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sqlite_stat%'"
        assert store.query(stats).rows == ((0,),)
        assert store.query("PRAGMA cache_size").rows != ((5,),)


@pytest.mark.parametrize(
    "sql",
    [
        "PRAGMA user_version",
        "SELECT * FROM pragma_user_version",
        "PRAGMA table_info(evidence)",
        "SELECT name FROM pragma_table_info('evidence')",
        "SELECT * FROM pragma_index_list('evidence_current')",
        "PRAGMA integrity_check",
        "PRAGMA quick_check(evidence)",
        "SELECT * FROM pragma_function_list",
        "PRAGMA page_count",
    ],
)
def test_query_allows_pragmas_that_only_read(db: Path, sql: str) -> None:
    with EvidenceStore(db, engine="native") as store:
        assert store.query(sql).rows


def test_query_allows_the_everyday_functions(db: Path) -> None:
    with EvidenceStore(db, engine="native") as store:
        result = store.query(
            "SELECT upper(record_id), length(body), json_object('id', record_id) ->> '$.id',"
            " round(abs(-1.5)), date(0, 'unixepoch'), token_overlap('queue lag', body),"
            " row_number() OVER (ORDER BY record_id), body LIKE '%lag', typeof(randomblob(4))"
            " FROM evidence"
        )
        assert result.rows == (("R1", 18, "r1", 2.0, "1970-01-01", 2, 1, 1, "blob"),)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1; -- trailing comment",
        "SELECT 1 /* note */ ;;",
        "SELECT 1;\n  \n",
        "-- lead\nSELECT 1 -- end",
    ],
)
def test_a_trailing_comment_or_semicolons_is_still_one_statement(db: Path, sql: str) -> None:
    with EvidenceStore(db, engine="native") as store:
        assert store.query(sql).rows == ((1,),)
    done = sql_cli(str(db), sql)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == [[1]]


@pytest.mark.parametrize("sql", ["SELECT 1; SELECT 2", "SELECT 1; -- x\nSELECT 2", "SELECT 1; garbage"])
def test_a_second_statement_is_refused(db: Path, sql: str) -> None:
    with EvidenceStore(db, engine="native") as store:
        with pytest.raises(StoreError, match="only one SQL statement is allowed"):
            store.query(sql)


def test_sql_command_opens_read_only_and_leaves_an_empty_file_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    done = sql_cli(str(empty), "SELECT 1")
    assert done.returncode == 1
    assert "empty.db is an empty file, not a pyevidence database" in done.stderr
    assert empty.stat().st_size == 0
    assert sorted(os.listdir(tmp_path)) == ["empty.db"]


def test_sql_command_does_not_upgrade_an_old_store(tmp_path: Path) -> None:
    old = tmp_path / "v1.db"
    old.write_bytes((Path(__file__).parent / "fixtures" / "v1_store.db").read_bytes())
    before = old.read_bytes()
    done = sql_cli(str(old), "SELECT 1")
    assert done.returncode == 1
    assert "schema version 1" in done.stderr and "pyevidence sql" in done.stderr
    assert old.read_bytes() == before


def test_sql_command_refuses_a_non_finite_float_instead_of_printing_invalid_json(db: Path) -> None:
    for sql in ["SELECT 1e999", "SELECT -1e999 AS low", "SELECT 2, 1e999 * 10"]:
        done = sql_cli(str(db), sql)
        assert done.returncode == 1, done.stdout
        assert done.stdout == ""
        assert "JSON has no Infinity or NaN" in done.stderr
        assert ("rows[0][1]" if sql.startswith("SELECT 2") else "rows[0][0]") in done.stderr
    done = sql_cli(str(db), "SELECT CAST(1e999 AS TEXT), 1.5")
    assert done.returncode == 0 and json.loads(done.stdout)["rows"] == [["Inf", 1.5]]


def _store_invalid_utf8(store: EvidenceStore) -> None:
    """A hostile file: the schema's own objects, but a body that is not valid UTF-8.
    evidence_put refuses such text, so the triggers are set aside for the raw write and
    put back verbatim (the file then passes the schema check, as a forged file would)."""
    store.put(**{**record(), "record_id": "bad"})
    engine: Any = store._engine
    triggers = engine.query("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'")
    for name, _ in triggers:
        engine.query(f'DROP TRIGGER "{name}"')
    engine.query("UPDATE evidence_versions SET body = CAST(x'ff' AS TEXT) WHERE record_id = 'bad'")
    for _, sql in triggers:
        engine.query(sql)


def test_invalid_stored_text_is_reported_as_what_it_is(db: Path) -> None:
    with EvidenceStore(db, engine="native") as store:
        _store_invalid_utf8(store)
        with pytest.raises(StoreError) as info:
            store.query("SELECT body FROM evidence WHERE record_id = 'bad'")
        message = str(info.value)
        assert "retrieve" not in message
        assert "reading column 'body' failed" in message and "not valid UTF-8" in message
        with pytest.raises(StoreError, match="reading column 'body' failed"):
            store.verify(tenant="team-a")
        with pytest.raises(StoreError, match="reading column 'body' failed"):
            store.retrieve(tenant="team-a", revision="v1", query="queue", now=0, scorer=TokenScorer())
    for args in (
        ["sql", str(db), "SELECT body FROM evidence"],
        ["verify", "--db", str(db), "--tenant", "team-a"],
    ):
        done = subprocess.run([sys.executable, "-m", "pyevidence", *args], capture_output=True, text=True)
        assert done.returncode == 1 and "reading column 'body' failed" in done.stderr
        assert "retrieve failed" not in done.stderr


def test_sweep_every_function_and_pragma_is_refused_by_name_or_allow_listed_and_harmless(
    tmp_path: Path,
) -> None:
    """Every function (PRAGMA function_list), pragma (PRAGMA pragma_list) and virtual-table
    module (PRAGMA module_list) of the linked SQLite, pyevidence and sqlite-vec (when
    installed), called through store.query(), functions with several argument rows: each
    is refused with a message naming it, unless it is on the allow-list in
    csrc/evidence_store.c, where it runs without writing the file, changing the
    connection's settings, leaking a pointer or crashing the process."""
    source = (Path(__file__).parent.parent / "csrc" / "evidence_store.c").read_text()
    allowed_functions, allowed_pragmas, allowed_tables = allow_lists(source)
    sweep = Path(__file__).parent / "sql_gate_sweep.py"
    done = subprocess.run(
        [sys.executable, str(sweep), str(tmp_path / "sweep.db")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"the sweep crashed ({done.returncode}): {done.stderr[-2000:]}"
    report = json.loads(done.stdout)
    assert report["control_pointer_detected"] and report["control_write_detected"]
    assert report["settings_after"] == report["settings_before"]
    assert len(report["functions"]) > 100 and len(report["pragmas"]) > 50
    problems = []
    for name, calls in report["functions"].items():
        outcomes = [outcome for _, _, outcome in calls]
        if name.lower() in allowed_functions:
            if not any(outcome == "ran" for outcome in outcomes):
                problems.append(f"allowed function {name}() never ran: {outcomes[:2]}")
            problems += [f"{name}(): {o}" for o in outcomes if o.split(":")[0] not in ("ran", "error")]
        else:
            refusal = f"function {name.lower()}() is not allowed in read-only SQL"
            problems += [f"{name}(): {o}" for o in outcomes if refusal not in o]
    for name, calls in report["pragmas"].items():
        outcomes = {sql: outcome for sql, _, outcome in calls}
        if name in allowed_pragmas:
            assert outcomes[f"PRAGMA {name}"] == "ran", (name, outcomes)
            problems += [
                f"{sql}: {o}"
                for sql, o in outcomes.items()
                if o.split(":")[0] not in ("ran", "error", "refused")
            ]
            problems += [
                f"{sql}: {o}"
                for sql, o in outcomes.items()
                if o.startswith("refused") and "with a value" not in o
            ]
        else:
            refusal = f"pragma {name} is not allowed in read-only SQL"
            assert refusal in outcomes[f"PRAGMA {name}"], (name, outcomes)
            # Other spellings may fail before the pragma is reached: no table-valued form,
            # or an argument it does not take.
            unreached = ("no such table", "too many arguments", "unknown database")
            problems += [
                f"{sql}: {o}"
                for sql, o in outcomes.items()
                if refusal not in o and not (o.startswith("error") and any(u in o for u in unreached))
            ]
    assert {"sqlite_stmt", "json_each", "evidence_search"} <= set(report["modules"])
    for name, outcome in report["modules"].items():
        if name in allowed_tables:
            problems += [f"table {name}: {outcome}"] if outcome.split(":")[0] not in ("ran", "error") else []
        # A module that is not eponymous is no table ("no such table"); fts4aux fails to
        # construct before anything is read.
        elif f"table {name} is not allowed in read-only SQL" not in outcome and not (
            outcome.startswith("error") and ("no such table" in outcome or "fts4aux constructor" in outcome)
        ):
            problems.append(f"table {name}: {outcome}")
    assert problems == []
    if report["sqlite_vec"]:
        assert "vec_distance_cosine" in report["functions"]
        assert "refused" in report["modules"]["vec_each"]


BAD_BODY = "UPDATE evidence_versions SET body = CAST(x'71ff' AS TEXT)"


@pytest.mark.parametrize(
    ("corrupt", "call", "column"),
    [
        ("UPDATE evidence_index_postings SET token = CAST(x'ff' AS TEXT) WHERE token = 'queue'",
         lambda store: store.check_index(), "token"),
        (BAD_BODY, lambda store: store.verify(tenant="team-a"), "body"),
        (BAD_BODY, lambda store: store.retrieve(tenant="team-a", revision="v1", query="queue", now=0,
                                                scorer=TokenScorer()), "body"),
    ],
)  # fmt: skip
def test_stored_text_that_is_not_utf8_is_one_error_on_both_engines(
    tmp_path: Path, corrupt: str, call: Any, column: str
) -> None:
    """The Python engine said "reading the history failed: Could not decode to UTF-8 column
    'token'", the native engine what it was; both now say it alike (and, for the token index,
    that reindex rebuilds it)."""
    messages = {}
    for engine in ENGINES:
        db = tmp_path / f"{engine}.db"
        with EvidenceStore(db, engine=engine) as store:
            store.put(**record())
        with sqlite3.connect(db) as conn:  # the triggers set aside, as a forged file would be
            triggers = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'").fetchall()
            for name, _ in triggers:
                conn.execute(f'DROP TRIGGER "{name}"')
            conn.execute(corrupt)
            for _, sql in triggers:
                conn.execute(sql)
        conn.close()
        with EvidenceStore(db, engine=engine) as store, pytest.raises(StoreError) as info:
            call(store)
        messages[engine] = str(info.value)
    expected = (
        f"reading column '{column}' failed: it is stored text that is not valid UTF-8; raw SQL wrote it, "
        "put() never does"
    )
    if column == "token":
        expected += "; 'pyevidence reindex' rebuilds the token index from the records"
    assert messages == {engine: expected for engine in ENGINES}
