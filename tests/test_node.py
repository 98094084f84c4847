"""The loadable extension from Node: better-sqlite3 binds every JavaScript number as a
real, and plain numbers must work where the schema wants integers (tests/node/).

Node writes and ranks on a store file; EvidenceStore reads the same file back on both
engines. ``make test-node`` installs better-sqlite3@12 into build/node and runs this
with PYEVIDENCE_REQUIRE_NODE=1, so a missing Node or module fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docblocks import REPO, blocks
from helpers import record

import pyevidence
from pyevidence import EvidenceStore

HERE = Path(__file__).parent
NODE_MODULES = Path(
    os.environ.get("PYEVIDENCE_NODE_MODULES", HERE.parent / "build" / "node" / "node_modules")
)
QUERY = "queue backlog consumer lag"
PUT_REFUSED = "evidence_put: expires_at must be a whole number from 0 to 9223372036854775807"
PUT_NULL_REFUSED = "evidence_put: tenant, record_id, revision, kind, body and source must be text"


def node() -> str:
    found = shutil.which("node")
    if found is None or not (NODE_MODULES / "better-sqlite3" / "package.json").is_file():
        why = f"needs node and better-sqlite3 in {NODE_MODULES} (make test-node installs them)"
        if os.environ.get("PYEVIDENCE_REQUIRE_NODE") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return found


def run_node(script: str, *args: str, cwd: Path) -> str:
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES.resolve()), "PYTHON": sys.executable}
    done = subprocess.run(
        [node(), str(HERE / "node" / script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def stored_rows(store: EvidenceStore) -> list[tuple[Any, ...]]:
    """Both tables whole, with the storage class of expires_at (1000 == 1000.0 in Python)."""
    versions = store._engine.select(
        "SELECT *, typeof(expires_at) FROM evidence_versions ORDER BY tenant, chain_seq"
    )
    current = store._engine.select("SELECT *, typeof(expires_at) FROM evidence ORDER BY tenant, record_id")
    return [("versions", *row) for row in versions] + [("current", *row) for row in current]


# What tests/node/plain_numbers.js writes, as put() arguments with Python ints.
NODE_RECORDS = [
    record(record_id="rb-queue", body="queue backlog: check consumer lag", source="runbook://queue/v1"),
    record(
        record_id="inc-new",
        kind="incident",
        body="queue lag incident",
        source="incident://new",
        expires_at=101,
    ),
    record(
        record_id="inc-old",
        kind="incident",
        body="queue backlog incident",
        source="incident://old",
        expires_at=100,
    ),
    record(record_id="zero", kind="working", body="queue zero", source="note://zero", expires_at=0),
    record(record_id="big", kind="working", body="backlog far future", source="note://big", expires_at=2**62),
    record(
        record_id="big-int",
        kind="working",
        body="backlog far future as a BigInt",
        source="note://big-int",
        expires_at=2**62,
    ),
    record(
        tenant="team-b",
        record_id="note",
        kind="working",
        body="team-b queue backlog consumer lag",
        source="note://b",
    ),
]


@pytest.mark.parametrize("engine", ["python", "native"])
def test_node_writes_and_ranks_with_plain_numbers_like_the_store(engine: str, tmp_path: Path) -> None:
    db = tmp_path / "node.db"
    EvidenceStore(db, engine=engine).close()  # the schema, made by pyevidence
    found = json.loads(run_node("plain_numbers.js", str(db), pyevidence.loadable_path(), cwd=tmp_path))

    with EvidenceStore(db, engine=engine) as store:
        expected = store.retrieve(tenant="team-a", revision="v1", query=QUERY, now=100)
        node_rows = stored_rows(store)
    assert found["hits"] == [
        {"record_id": h.record_id, "source": h.citation, "score": h.score} for h in expected
    ]
    assert [h["record_id"] for h in found["hits"]] == ["rb-queue", "inc-new", "big", "big-int"]
    assert found["hits_bigint_now"] == found["hits"]

    # The same records put through the API with ints: the same bytes, hashes included.
    with EvidenceStore(tmp_path / "api.db", engine=engine) as api:
        for values in NODE_RECORDS:
            api.put(**values)
        assert node_rows == stored_rows(api)
    assert found["stored"] == len(NODE_RECORDS)  # nothing refused was written

    refused = found["refused"]
    for name in ("half", "two_63", "infinity", "minus_one"):
        assert PUT_REFUSED in refused[f"expires_at {name}"]
    assert PUT_NULL_REFUSED in refused["expires_at nan"]  # NaN is bound as NULL
    assert (
        refused["now half"]
        == "evidence_eligible(): now must be an integer, got real 100.5 (not a whole number)"
    )
    assert refused["now two_63"] == (
        "evidence_eligible(): now must be an integer, got real 9.22337203685478e+18"
        " (outside the 64-bit range)"
    )
    assert refused["now infinity"] == (
        "evidence_eligible(): now must be an integer, got real Inf (outside the 64-bit range)"
    )
    assert refused["now nan"] == "evidence_eligible(): now must be an integer, got NULL"
    assert refused["now minus_one"] is None  # -1 is a valid now, as an integer or a real


def test_from_node_example_runs_as_written(tmp_path: Path) -> None:
    output = run_node("example.js", cwd=tmp_path)
    assert "{ record_id: 'rb-queue', source: 'runbook://queue/v1', score: 4 }" in output
    assert "{ record_id: 'inc-7', source: 'incident://7', score: 2 }" in output
    with EvidenceStore(tmp_path / "evidence.db") as store:  # the file it made opens as a store
        hits = store.retrieve(tenant="team-a", revision="v1", query=QUERY, now=100)
    assert [(h.record_id, h.score) for h in hits] == [("rb-queue", 4), ("inc-7", 2)]


def test_the_from_node_example_in_the_docs_is_the_one_that_runs() -> None:
    # docs/sql.md shows tests/node/example.js; test_docs.py does not run JavaScript, so the
    # block is held equal to the file the test above runs.
    shown = [b.code for b in blocks(REPO / "docs" / "sql.md") if b.language == "javascript"]
    assert shown == [(HERE / "node" / "example.js").read_text(encoding="utf-8")]
