"""The loadable extension in real SQLite hosts (apsw, the sqlite3 shell), checked
against the Python definitions it must equal: the token rule, the eligibility
predicate, the schema's columns, the ranking the store returns."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from docblocks import sql_statement
from helpers import record
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_text, rich_text

import pyevidence
from pyevidence import EngineUnavailableError, EvidenceStore
from pyevidence.core.tokens import token_overlap, tokens
from pyevidence.storage import schema

apsw = pytest.importorskip("apsw", reason="apsw is the test host that can load extensions")
REPO = Path(__file__).resolve().parent.parent


def loadable_built() -> bool:
    try:
        pyevidence.loadable_path()
    except EngineUnavailableError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not loadable_built() and os.environ.get("PYEVIDENCE_REQUIRE_NATIVE") != "1",
    reason="loadable extension not built in this installation",
)


@pytest.fixture(scope="module")
def conn() -> Any:
    connection = apsw.Connection(":memory:")
    pyevidence.load(connection)
    connection.execute(schema.schema_sql())
    return connection


def c_tokens(conn: Any, value: str | bytes) -> list[str]:
    sql = (
        "SELECT evidence_tokens(CAST(? AS TEXT))" if isinstance(value, bytes) else "SELECT evidence_tokens(?)"
    )
    return list(json.loads(conn.execute(sql, (value,)).fetchall()[0][0]))


def c_overlap(conn: Any, query: str, body: str) -> int:
    return int(conn.execute("SELECT token_overlap(?, ?)", (query, body)).fetchall()[0][0])


@given(query=any_text, body=any_text)
def test_token_overlap_equals_the_python_rule(conn: Any, query: str, body: str) -> None:
    assert c_overlap(conn, query, body) == token_overlap(query, body)


@given(text=any_text | rich_text)
def test_c_tokens_equal_the_python_tokens(conn: Any, text: str) -> None:
    assert c_tokens(conn, text) == tokens(text)


@given(
    raw=st.binary(max_size=40)
    | st.lists(
        st.sampled_from([b"\xc4", b"\xb0", b"\xe2", b"\x84", b"\xaa", b"\xff", b"\x80", b"a", b"K", b" "])
    ).map(b"".join)
)
def test_invalid_utf8_reads_as_python_decode_with_replace(conn: Any, raw: bytes) -> None:
    assert c_tokens(conn, raw) == tokens(raw.decode("utf-8", "replace"))


def test_every_code_point_tokenizes_as_in_python(conn: Any) -> None:
    """Exhaustive: each code point between two ASCII letters, in chunks."""
    points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 20000):
        text = " ".join(f"x{chr(c)}y" for c in points[start : start + 20000])
        assert c_tokens(conn, text) == tokens(text), f"chunk from U+{points[start]:04X}"


def test_overlap_is_null_for_null(conn: Any) -> None:
    assert conn.execute("SELECT token_overlap(NULL, 'a'), token_overlap('a', NULL)").fetchall() == [
        (None, None)
    ]


def test_functions_are_deterministic_and_innocuous(conn: Any) -> None:
    rows = conn.execute(
        "SELECT name, flags FROM pragma_function_list WHERE name IN ('token_overlap', 'evidence_tokens')"
    ).fetchall()
    assert len(rows) == 2
    for name, flags in rows:
        assert flags & apsw.SQLITE_DETERMINISTIC and flags & apsw.SQLITE_INNOCUOUS, name


def test_relation_columns_are_the_schema_columns(conn: Any) -> None:
    table = [row[1] for row in conn.execute("PRAGMA table_info(evidence)").fetchall()]
    relation = [row[1] for row in conn.execute("PRAGMA table_info(evidence_eligible)").fetchall()]
    assert relation == table


def inner_plan(conn: Any, outer_sql: str) -> str:
    """The query plan of the statement evidence_eligible runs for outer_sql."""
    seen: list[str] = []
    conn.trace_v2(apsw.SQLITE_TRACE_STMT, lambda event: seen.append(event["sql"]), id="plan")
    try:
        conn.execute(outer_sql).fetchall()
    finally:
        conn.trace_v2(0, None, id="plan")
    (inner,) = [sql for sql in seen if 'FROM "main".evidence' in sql]
    return " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + inner, ("t", "v", 0)))


@pytest.mark.parametrize(
    ("outer", "plan"),
    [
        # Whole rows: one range of the current pointer, the scope's rows (stored by document
        # number, each checked for expiry), and each row's version by its primary key (the
        # history holds the one copy of each body).
        (
            "SELECT record_id, body FROM evidence_eligible('team-a', 'v1', 100)",
            "SEARCH c USING PRIMARY KEY (tenant=? AND revision=?)"
            " SEARCH v USING PRIMARY KEY (tenant=? AND chain_seq=?) LEFT-JOIN",
        ),
        # No content read (a count): the range of the pointer alone, the history never touched.
        (
            "SELECT count(*) FROM evidence_eligible('team-a', 'v1', 100)",
            "SEARCH c USING PRIMARY KEY (tenant=? AND revision=?)",
        ),
    ],
)
def test_relation_reads_one_range(conn: Any, outer: str, plan: str) -> None:
    assert inner_plan(conn, outer) == plan


def test_relation_equals_the_python_predicate(conn: Any) -> None:
    conn.execute("DELETE FROM evidence")
    for tenant in ("team-a", "team-b"):
        for rev in ("v1", "v2"):
            for expiry in (0, 5, 6, 9):
                conn.execute(
                    "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
                    " VALUES (?, ?, ?, 'working', 'b', 's', ?)",
                    (tenant, f"{rev}-{expiry}", rev, expiry),
                )
    for tenant in ("team-a", "team-b", "team-c"):
        for rev in ("v1", "v2"):
            for now in (-1, 0, 5, 9):
                python_rows = sorted(conn.execute(schema.ELIGIBLE_SQL, (tenant, rev, now)).fetchall())
                c_rows = sorted(
                    conn.execute(
                        "SELECT record_id, revision, kind, body, source, expires_at, version, content_hash"
                        " FROM evidence_eligible(?, ?, ?)",
                        (tenant, rev, now),
                    ).fetchall()
                )
                assert c_rows == python_rows, (tenant, rev, now)


def test_missing_argument_is_a_named_error(conn: Any) -> None:
    with pytest.raises(apsw.SQLError, match="argument now is missing"):
        conn.execute("SELECT * FROM evidence_eligible('team-a', 'v1')").fetchall()


def test_version_matches_the_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    connection = apsw.Connection(":memory:")
    pyevidence.load(connection)
    assert connection.execute("SELECT evidence_version()").fetchall() == [(project["version"],)]
    assert pyevidence.__version__ == project["version"]


def test_load_into_stdlib_sqlite3_works_or_says_why() -> None:
    connection = sqlite3.connect(":memory:")
    if hasattr(connection, "enable_load_extension"):
        pyevidence.load(connection)
        assert connection.execute("SELECT token_overlap('a b', 'b')").fetchone() == (1,)
    else:
        with pytest.raises(EngineUnavailableError, match="cannot load extensions"):
            pyevidence.load(connection)


# The statements docs/sql.md shows, read from the page: what it documents is what is tested here.
DOCUMENTED_QUERY = sql_statement("docs/sql.md", "SELECT record_id, source, token_overlap(:q, body)")
DOCUMENTED_VECTOR_QUERY = sql_statement("docs/sql.md", "SELECT e.record_id, 1.0 - vec_distance_cosine")


def sqlite3_shell() -> str:
    shell = shutil.which("sqlite3")
    if shell is None:
        if os.environ.get("PYEVIDENCE_REQUIRE_NATIVE") == "1":
            pytest.fail("the sqlite3 shell is needed for this test (apt-get install sqlite3)")
        pytest.skip("no sqlite3 shell")
    return shell


def test_sqlite3_shell_loads_it_and_ranks_like_the_store(tmp_path: Path) -> None:
    shell = sqlite3_shell()
    db = tmp_path / "shell.db"
    with EvidenceStore(db, engine="python") as store:
        store.put(**record(record_id="rb", body="queue backlog: check consumer lag", source="runbook://q"))
        store.put(**record(record_id="inc", body="queue lag incident", source="incident://1", expires_at=101))
        store.put(**record(record_id="old", body="queue backlog consumer lag", expires_at=100))
        store.put(**record(record_id="other", tenant="team-b", body="queue backlog consumer lag"))
        expected = store.retrieve(tenant="team-a", revision="v1", query="queue backlog consumer lag", now=100)
    load = f".load {pyevidence.loadable_path()}"
    script = "\n".join([load, ".parameter set :q 'queue backlog consumer lag'", DOCUMENTED_QUERY])
    done = subprocess.run(
        [shell, "-bail", str(db)], input=script, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines()]
    assert rows == [[h.record_id, h.citation, str(h.score)] for h in expected]
    assert [r[0] for r in rows] == ["rb", "inc"]


def test_schema_created_by_the_shell_is_accepted_by_the_store(tmp_path: Path) -> None:
    shell = sqlite3_shell()
    db = tmp_path / "plain.db"
    schema_file = Path(schema.__file__).with_name("schema.sql")
    with schema_file.open() as script:
        done = subprocess.run([shell, str(db)], stdin=script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    with EvidenceStore(db, engine="python") as store:
        store.put(**record())
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count == 1


def test_sqlite3_shell_ranks_vectors_like_the_store(tmp_path: Path) -> None:
    import sqlite_vec

    from pyevidence import Embedder, VectorScorer

    shell = sqlite3_shell()
    db = tmp_path / "vectors.db"
    embedder = Embedder("toy", lambda text: [1.0, 0.0, 0.0])
    with EvidenceStore(db, engine="python", embedder=embedder) as store:
        store.put(**record(record_id="near"), embedding=[1.0, 0.1, 0.0])
        store.put(**record(record_id="far"), embedding=[0.0, 1.0, 0.0])
        store.put(**record(record_id="expired", expires_at=100), embedding=[1.0, 0.0, 0.0])
        store.put(**record(record_id="other", tenant="team-b"), embedding=[1.0, 0.0, 0.0])
        expected = store.retrieve(
            tenant="team-a",
            revision="v1",
            query="q",
            now=100,
            scorer=VectorScorer(embedder, min_similarity=-1.0),
        )
    script = "\n".join(
        [
            f".load {pyevidence.loadable_path()}",
            f".load {sqlite_vec.loadable_path()}",
            ".parameter set :q \"vec_f32('[1, 0, 0]')\"",
            DOCUMENTED_VECTOR_QUERY,
        ]
    )
    done = subprocess.run(
        [shell, "-bail", str(db)], input=script, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines()]
    assert [r[0] for r in rows] == [h.record_id for h in expected] == ["near", "far"]
    # The shell prints 15 significant digits; the store's value is the same double.
    assert [float(r[1]) for r in rows] == pytest.approx([h.score for h in expected], rel=1e-14)


@pytest.mark.parametrize("encoding", ["UTF-16le", "UTF-16be"])
def test_a_utf16_database_refuses_raw_puts_instead_of_misjudging_their_text(encoding: str) -> None:
    # There CAST(text AS BLOB) gives UTF-16 bytes, which the put trigger's UTF-8 check cannot
    # judge: it refused "café" and stored U+D800 (a lone surrogate) when the bytes happened to
    # be valid UTF-8. As EvidenceStore refuses such a file, the extension refuses to write it.
    connection = apsw.Connection(":memory:")
    connection.execute(f"PRAGMA encoding = '{encoding}'")
    pyevidence.load(connection)
    connection.execute(schema.schema_sql())
    lone = "x'00d88000'" if encoding == "UTF-16le" else "x'd8800041'"  # valid UTF-8 bytes
    put = "INSERT INTO evidence_put VALUES ('team-a', ?, 'v1', 'runbook', {}, 'runbook://q', 5)"
    for record_id, body in [("cafe", "'café'"), ("lone", f"CAST({lone} AS TEXT)"), ("ascii", "'queue'")]:
        with pytest.raises(apsw.SQLError, match="this database stores its text as UTF-16"):
            connection.execute(put.format(body), (record_id,))
    assert connection.execute("SELECT count(*) FROM evidence_versions").fetchall() == [(0,)]
    assert connection.execute("SELECT count(*) FROM evidence_current").fetchall() == [(0,)]
