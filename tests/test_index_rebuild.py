"""The token index's upgrade, rebuild and check: a version 3 or 4 store opens with a correct
index, built in the upgrade's own transaction; reindex repairs; check finds each kind of
damage (docs/token-index.md)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from damage import renumber_file
from tables import DOCUMENTS, index_rows

from pyevidence import EvidenceStore, Record, SchemaError
from pyevidence.core.tokens import token_set
from pyevidence.storage import schema, sql_functions
from pyevidence.storage.engines.python_engine import _numbered, _statements
from pyevidence.storage.index import maintain, rebuild

FIXTURES = Path(__file__).parent / "fixtures"
MIGRATIONS = Path(schema.__file__).with_name("migrations")
INDEX_TABLES = rebuild.INDEX_TABLES

# Raw evidence_put rows (tenant, record_id, revision, kind, body, source, expires_at): several
# scopes, text edge cases of the token rule, expiries spread over the expiry levels.
ROWS = [
    ("team-a", "queue", "v1", "runbook", "Restart the QUEUE consumer; check lag.", "rb://q", 1000),
    ("team-a", "lag", "v1", "incident", "Consumer lag spiked: queue-depth 9000", "inc://1", 50),
    ("team-a", "turk", "v1", "working", "İstanbul KELVIN \u212a, dotted \u0130 case", "w://1", 2**40),
    ("team-a", "nul", "v1", "working", "before\x00after queue", "w://2", 300),
    ("team-a", "other", "v2", "runbook", "restart the queue in v2", "rb://v2", 1000),
    ("team-b", "queue", "v1", "runbook", "restart the queue consumer", "rb://b", 1000),
    ("team-b", "late", "v1", "runbook", "queue restart after midnight", "rb://late", 2**62),
]
QUERIES = ["queue", "restart queue lag", "kelvin", "istanbul", "before after", "nothing here", "i"]
NOWS = [-1, 0, 60, 999, 1000, 2**41]


def v4_store(path: Path, rows: list[tuple[object, ...]] = ROWS) -> None:
    """A version 4 store as 0.4's schema made it, written through raw SQL."""
    conn = sqlite3.connect(path)
    sql_functions.register(conn)
    conn.executescript((MIGRATIONS / "schema_v4.sql").read_text(encoding="utf-8"))
    conn.executemany("INSERT INTO evidence_put VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    # a record that moved revision, one forgotten, one with a second version
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'moved', 'v1', 'working', 'old queue', 's', 9)")
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'moved', 'v2', 'working', 'new queue', 's', 9)")
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'gone', 'v1', 'working', 'queue gone', 's', 9)")
    conn.execute("DELETE FROM evidence WHERE tenant = 'team-a' AND record_id = 'gone'")
    conn.execute(
        "INSERT INTO evidence_put VALUES ('team-b', 'queue', 'v1', 'runbook', 'queue v2 text', 's', 7)"
    )
    conn.commit()
    conn.close()


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.close()
    return version


def brute_force(
    path: Path, tenant: str, revision: str, now: int, query: str, limit: int
) -> tuple[object, ...]:
    """retrieve's answer from the rows alone: the token rule over every eligible row."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT record_id, body FROM evidence WHERE tenant = ? AND revision = ? AND expires_at > ?",
            (tenant, revision, now),
        ).fetchall()
    finally:
        conn.close()
    wanted = token_set(query)
    scored = [(len(wanted & token_set(body)), record_id) for record_id, body in rows]
    hits = sorted(((s, r) for s, r in scored if s > 0), key=lambda hit: (-hit[0], hit[1]))[:limit]
    return tuple((r, s) for s, r in hits), len(rows)


def assert_retrieve_is_the_model(store: EvidenceStore, path: Path) -> None:
    scopes = {(t, r) for t, _, r, *_ in ROWS} | {("team-z", "v1")}
    for tenant, revision in sorted(scopes):
        for query in QUERIES:
            for now in NOWS:
                got = store.retrieve(tenant=tenant, revision=revision, query=query, now=now, limit=10)
                answer = (tuple((h.record_id, h.score) for h in got.hits), got.eligible_count)
                assert answer == brute_force(path, tenant, revision, now, query, 10), (
                    tenant,
                    revision,
                    query,
                    now,
                )


def assert_index_is_correct(store: EvidenceStore, path: Path) -> None:
    checked = store.check_index()
    assert checked.ok, checked.problems
    with sqlite3.connect(path) as conn:
        (current,) = conn.execute("SELECT count(*) FROM evidence").fetchone()
    conn.close()
    assert checked.records_checked == current
    assert_retrieve_is_the_model(store, path)
    for tenant in ("team-a", "team-b"):
        assert store.verify(tenant=tenant).ok


# ---- the upgrade builds the index


def test_a_version_4_store_is_upgraded_with_its_index_built(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    seen: list[tuple[int, int]] = []
    with EvidenceStore(path, engine=engine, progress=lambda done, total: seen.append((done, total))) as store:
        assert user_version(path) == schema.SCHEMA_VERSION == 13
        assert_index_is_correct(store, path)
    total = len(ROWS) + 1  # the moved record counts once, the forgotten one not at all
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        assert frozenset(rows.fetchall()) == schema.expected_objects()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_a_version_3_store_is_upgraded_to_the_current_version_with_its_index_built(
    engine: str, tmp_path: Path
) -> None:
    path = tmp_path / "v3.db"
    shutil.copy(FIXTURES / "v3_store.db", path)
    seen: list[tuple[int, int]] = []
    with EvidenceStore(path, engine=engine, progress=lambda done, total: seen.append((done, total))) as store:
        assert user_version(path) == schema.SCHEMA_VERSION
        checked = store.check_index()
        assert checked.ok and checked.records_checked > 0, checked.problems
        assert seen[-1] == (checked.records_checked, checked.records_checked)
        conn = sqlite3.connect(path)
        scopes = conn.execute("SELECT DISTINCT tenant, revision FROM evidence").fetchall()
        conn.close()
        for tenant, revision in scopes:
            assert store.verify(tenant=tenant).ok
            for query in ("queue", "queue lag", "restart consumer check", "zero"):
                for now in (-1, 0, 10**12):
                    got = store.retrieve(tenant=tenant, revision=revision, query=query, now=now, limit=10)
                    answer = (tuple((h.record_id, h.score) for h in got.hits), got.eligible_count)
                    assert answer == brute_force(path, tenant, revision, now, query, 10)


def test_the_batched_build_writes_what_the_one_statement_build_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python engine's build (any batch size), the generic SQL build (any batch size) and
    schema.py's one-statement SQL fallback (the cluster's) write byte-identical tables: each is
    the rebuild rule, in key order."""
    built = {}
    for batch in (1, 2, 3, 10_000):
        path = tmp_path / f"b{batch}.db"
        v4_store(path)
        monkeypatch.setattr(rebuild, "BATCH_ROWS", batch)
        EvidenceStore(path, engine="python").close()
        built[batch] = index_rows(path)
        conn = sqlite3.connect(path, isolation_level=None)
        sql_functions.register(conn)
        conn.execute("BEGIN")
        rebuild.build(lambda sql, params, c=conn: c.execute(sql, _numbered(params)).fetchall(), batch=batch)
        conn.execute("COMMIT")
        conn.close()
        assert index_rows(path) == built[batch], f"the generic build at batch {batch}"
    path = tmp_path / "script.db"
    v4_store(path)
    conn = sqlite3.connect(path, isolation_level=None)
    sql_functions.register(conn)
    schema.prepare(
        lambda sql: conn.execute(sql).fetchall(),
        lambda sql: [conn.execute(statement) for statement in _statements(sql)] and None,
        str(path),
    )
    conn.close()
    assert index_rows(path) == built[1] == built[2] == built[3] == built[10_000]
    assert [row[2:] for row in built[1]["evidence_index_scopes"]] == [(1, 4, 4), (2, 2, 2), (3, 2, 2)]
    docs = [row[2] for row in built[1][DOCUMENTS] if row[:2] == ("team-a", "v1")]
    assert sorted(docs) == list(range(4))  # dense, 0..n-1


def test_a_failure_during_the_build_leaves_the_file_at_version_4(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    before = path.read_bytes()
    monkeypatch.setattr(rebuild, "BATCH_ROWS", 2)

    def fails_midway(done: int, total: int) -> None:
        if done >= 4:
            raise RuntimeError("simulated failure after 4 rows were indexed")

    with pytest.raises(RuntimeError, match="simulated failure"):
        EvidenceStore(path, engine=engine, progress=fails_midway)
    assert path.read_bytes() == before
    assert user_version(path) == 4
    if engine == "native":
        return  # its build is C's (evidence_store_reindex); csrc/test/test_store.c fails it midway
    # an SQL error in the Python engine's build is reported as an upgrade that did not happen
    monkeypatch.setattr(maintain, "_SCOPE_INSERT_SQL", "INSERT INTO no_such_table VALUES (?, ?, ?, ?, ?)")
    with pytest.raises(
        SchemaError,
        match=rf"could not be upgraded from pyevidence schema version 4 to {schema.SCHEMA_VERSION} "
        r"\(building the token index\), and is left as it was",
    ):
        EvidenceStore(path, engine=engine)
    assert path.read_bytes() == before


CRASHING_CHILD = """
import os, sys
from pyevidence import EvidenceStore
from pyevidence.storage.index import rebuild
rebuild.BATCH_ROWS = 2
def crash(done, total):
    if done >= 4:
        os._exit(9)  # no rollback, no close: as if the machine lost the process here
EvidenceStore(sys.argv[1], engine=sys.argv[2], progress=crash)
"""


def test_a_crash_during_the_build_leaves_a_version_4_file(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    child = subprocess.run([sys.executable, "-c", CRASHING_CHILD, str(path), engine], capture_output=True)
    assert child.returncode == 9, child.stderr
    assert user_version(path) == 4  # SQLite rolls the interrupted upgrade back
    with EvidenceStore(path, engine=engine) as store:
        assert_index_is_correct(store, path)


# ---- writes by raw SQL keep an upgraded index in step


def test_raw_sql_writes_after_the_upgrade_keep_the_index_correct(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    conn = sqlite3.connect(path)
    sql_functions.register(conn)
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'queue', 'v1', 'runbook', 'kelvin now', 's', 5)")
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'lag', 'v2', 'runbook', 'lag moved', 's', 5)")
    conn.execute("INSERT INTO evidence_put VALUES ('team-c', 'new', 'v1', 'runbook', 'a new scope', 's', 5)")
    conn.execute("DELETE FROM evidence WHERE tenant = 'team-b' AND record_id = 'late'")
    conn.commit()
    conn.close()
    with EvidenceStore(path, engine=engine) as store:
        assert_index_is_correct(store, path)


# ---- reindex and check


def corrupt(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        assert conn.execute(statement).rowcount == 1, statement
    conn.commit()
    conn.close()


# The scope of team-a/v1 is 1; its documents are numbered in (tenant, revision, expires_at,
# record_id) order: lag 0, nul 1, queue 2, turk 3 (moved left it, gone was forgotten). A
# damage is SQL statements, or a function of the file.
CORRUPTIONS: dict[str, tuple[str, ...] | Callable[[Path], None]] = {
    "posting_missing": (
        "UPDATE evidence_index_postings SET docs = x'0000' WHERE scope = 1 AND token = 'queue'",
    ),
    "posting_extra": ("INSERT INTO evidence_index_postings VALUES (1, 0, 'kelvin', 1, x'0000')",),
    "docs_count_wrong": ("UPDATE evidence_index_scopes SET docs = docs - 1 WHERE scope = 1",),
    "expiry_count_wrong": (
        "UPDATE evidence_index_expiry SET rows = rows + 1 WHERE scope = 1 AND level = 7 AND bucket = 0",
    ),
    "doc_number_shared": lambda path: renumber_file(path, "team-a", "nul", 0),
    "doc_number_too_high": ("UPDATE evidence_index_scopes SET docs = 3, next_doc = 3 WHERE scope = 1",),
    "docset_not_canonical": (
        "UPDATE evidence_index_postings SET docs = x'02000000' WHERE scope = 1 AND token = 'queue'",
    ),
    "scope_missing": ("DELETE FROM evidence_index_scopes WHERE scope = 3",),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_check_names_each_kind_of_damage_and_reindex_repairs_it(
    engine: str, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    healthy = index_rows(path)
    damage = CORRUPTIONS[kind]
    if callable(damage):
        damage(path)
    else:
        corrupt(path, *damage)
    with EvidenceStore(path, engine=engine) as store:
        checked = store.check_index()
        assert not checked.ok and checked.problems_found == len(checked.problems) >= 1
        assert kind in {p.kind for p in checked.problems}, checked.problems
        assert "pyevidence reindex" in (checked.fix or "")
        rebuilt = store.reindex()
        assert (rebuilt.scopes, rebuilt.records) == (3, len(ROWS) + 1)
        assert store.check_index().ok
    assert index_rows(path) == healthy  # a rebuild after a rebuild: the same bytes


def test_check_names_document_numbers_and_chunks_at_the_end_of_the_integers(
    engine: str, tmp_path: Path
) -> None:
    """Numbers as large as SQLite's integers go (raw SQL can write them; the CHECKs allow
    them) are reported, not a crash: the check computes no number it cannot bind."""
    path = tmp_path / "v4.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    top = 2**63 - 1
    renumber_file(path, "team-a", "turk", top)
    corrupt(path, f"INSERT INTO evidence_index_postings VALUES (1, {top >> 3}, 'kelvin', {top}, x'0000')")
    with EvidenceStore(path, engine=engine) as store:
        problems = {(p.kind, p.detail) for p in store.check_index().problems}
        assert ("doc_number_too_high", f"record 'turk' has document {top}, next_doc is 4") in problems
        far = (top << 12) | 0
        assert (
            "posting_extra",
            f"document {far} (no record) is posted under the token 'kelvin', which its body does not have",
        ) in problems
        assert store.reindex().records == len(ROWS) + 1
        assert store.check_index().ok


def test_a_number_two_rows_hold_is_named_with_both(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    renumber_file(path, "team-a", "turk", 0)
    with EvidenceStore(path, engine=engine) as store:
        problems = {(p.kind, p.tenant, p.revision, p.detail) for p in store.check_index().problems}
        assert (
            "doc_number_shared",
            "team-a",
            "v1",
            "document 0 is held by 2 current rows, records 'lag' to 'turk'",
        ) in problems
        store.reindex()
        assert store.check_index().ok


def test_a_missing_posting_names_the_record_and_token(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    corrupt(path, "UPDATE evidence_index_postings SET docs = x'0000' WHERE scope = 1 AND token = 'queue'")
    with EvidenceStore(path, engine=engine) as store:
        checked = store.check_index()
    assert [(p.kind, p.detail) for p in checked.problems] == [
        ("posting_missing", "record 'nul' has the token 'queue' but its posting is missing"),
        ("posting_missing", "record 'queue' has the token 'queue' but its posting is missing"),
    ]
    assert checked.to_dict()["problems"][0] == {
        "kind": "posting_missing",
        "tenant": "team-a",
        "revision": "v1",
        "detail": "record 'nul' has the token 'queue' but its posting is missing",
    }


def test_reindex_is_refused_on_a_read_only_store(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        assert store.check_index().ok
        with pytest.raises(Exception, match="reindex refused: this store was opened read-only"):
            store.reindex()


def test_progress_must_be_a_function(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="progress: must be a function of"):
        EvidenceStore(tmp_path / "s.db", engine="python", progress=3)  # type: ignore[arg-type]


# ---- the command line


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyevidence", *args], capture_output=True, text=True)


def test_cli_upgrades_with_progress_on_stderr_and_reindexes(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    checked = cli("check", "--db", str(path), "--engine", engine)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["ok"] is True  # stdout is the JSON only
    assert "pyevidence: built the token index of 8 records in" in checked.stderr  # not a terminal: one line
    # said before the upgrade starts, which has no bar of its own
    assert checked.stderr.startswith(
        f"pyevidence: upgrading {path} from schema version 4 to {schema.SCHEMA_VERSION}, in one transaction"
    )
    done = cli("reindex", "--db", str(path), "--engine", engine)
    assert done.returncode == 0, done.stderr
    assert "upgrading" not in done.stderr  # already upgraded: nothing to say
    summary = json.loads(done.stdout)
    assert sorted(summary) == ["postings_rows", "records", "scopes", "seconds"]
    assert (summary["scopes"], summary["records"]) == (3, 8)


def test_cli_check_exits_1_and_names_the_fix(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    EvidenceStore(path, engine=engine).close()
    corrupt(path, *CORRUPTIONS["expiry_count_wrong"])
    checked = cli("check", "--db", str(path), "--engine", engine)
    assert checked.returncode == 1
    report = json.loads(checked.stdout)
    assert report["ok"] is False and report["problems"][0]["kind"] == "expiry_count_wrong"
    assert "pyevidence reindex" in report["fix"] and "pyevidence reindex" in checked.stderr
    assert cli("reindex", "--db", str(path), "--engine", engine).returncode == 0
    assert cli("check", "--db", str(path), "--engine", engine).returncode == 0


def test_the_progress_bar_draws_in_place_on_a_terminal() -> None:
    from pyevidence.interfaces.progress import IndexProgress

    class Terminal:
        def __init__(self) -> None:
            self.text = ""

        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    screen = Terminal()
    bar: Callable[[int, int], None] = IndexProgress(screen)  # type: ignore[arg-type]
    bar(0, 4)
    bar(4, 4)
    assert screen.text.endswith("\rbuilding the token index [" + "#" * 30 + "] 4/4 records\n")
    assert screen.text.startswith("\rbuilding the token index [" + "-" * 30 + "] 0/4 records")


def test_the_header_version_is_read_without_sqlite_and_only_from_database_files(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    v4_store(path)
    assert schema.version_in_header(path) == schema.upgrade_ahead(path) == 4
    EvidenceStore(path, engine="python").close()
    assert schema.version_in_header(path) == schema.SCHEMA_VERSION and schema.upgrade_ahead(path) is None
    (tmp_path / "notes.txt").write_text("SQLite format 3 is not this file's format\n" * 3)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    for other in (tmp_path / "notes.txt", tmp_path / "missing.db", tmp_path, fifo):
        assert schema.version_in_header(other) is None and schema.upgrade_ahead(other) is None


def test_the_renumbering_is_the_same_statement_in_c_and_python() -> None:
    """The renumbering, and the read of the rows in the order it numbers them."""
    from test_write_path import c_string_literals

    literals = c_string_literals(Path(__file__).parents[1] / "csrc" / "evidence_index_write.c")
    assert rebuild.RENUMBER_SQL in literals
    assert maintain._ALL_ROWS_SQL in literals


def _numbers(path: Path) -> list[tuple[object, ...]]:
    """Each current row's tenant, revision, expiry, record_id and number, in the order a
    rebuild numbers them."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT tenant, revision, expires_at, record_id, doc FROM evidence_current"
            " ORDER BY tenant, revision, expires_at, record_id"
        ).fetchall()
    finally:
        conn.close()


def test_reindex_numbers_each_scopes_rows_anew_in_the_current_rows_too(engine: str, tmp_path: Path) -> None:
    """Moves and forgets leave gaps in a scope's numbers; a rebuild numbers each scope's rows
    0, 1, ... in (expires_at, record_id) order, in evidence_current and in the index alike, on
    every path."""
    paths = {}
    for how in ("engine", "generic"):
        path = paths[how] = tmp_path / f"{how}.db"
        with EvidenceStore(path, engine=engine) as store:
            store.put_many(
                [Record("t", f"r{i}", "v1", "working", f"queue {i}", "s", 100 - i % 7) for i in range(300)]
            )
            for i in range(0, 300, 3):
                store.put(
                    tenant="t",
                    record_id=f"r{i}",
                    revision="v2",
                    kind="working",
                    body="moved",
                    source="s",
                    expires_at=50,
                )
            for i in range(1, 300, 5):
                store.forget(tenant="t", record_id=f"r{i}")
            gaps = _numbers(path)
            assert any(doc != place for place, (*_, doc) in enumerate(r for r in gaps if r[1] == "v1"))
            if how == "engine":
                store.reindex()
        if how == "generic":
            conn = sqlite3.connect(path, isolation_level=None)
            sql_functions.register(conn)
            conn.execute("BEGIN")
            rebuild.build(lambda sql, params, c=conn: c.execute(sql, _numbered(params)).fetchall(), batch=7)
            conn.execute("COMMIT")
            conn.close()
        numbered = _numbers(path)
        for revision in ("v1", "v2"):
            rows = [r for r in numbered if r[1] == revision]
            assert [r[4] for r in rows] == list(range(len(rows))), (how, revision)
        with EvidenceStore(path, engine=engine) as store:
            assert store.check_index().ok
            store.put(
                tenant="t",
                record_id="r0",
                revision="v1",
                kind="working",
                body="back",
                source="s",
                expires_at=9,
            )
            assert store.check_index().ok
    assert _numbers(paths["engine"]) == _numbers(paths["generic"])
    assert index_rows(paths["engine"]) == index_rows(paths["generic"])
