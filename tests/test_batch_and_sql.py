"""put_many (all or nothing) on both engines, and read-only SQL on the native engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import record

from pyevidence import (
    EngineUnavailableError,
    EvidenceStore,
    Record,
    StoreError,
    ValidationError,
    native_available,
)

needs_native = pytest.mark.skipif(not native_available(), reason="needs the native engine")


def count(store: EvidenceStore, tenant: str = "team-a") -> int:
    return store.retrieve(tenant=tenant, revision="v1", query="", now=-1).eligible_count


def test_put_many_writes_every_record(store: EvidenceStore) -> None:
    records = [record(record_id=f"r{n}", body=f"queue {n}") for n in range(50)]
    records.append(Record(**record(record_id="as-record", tenant="team-b")))  # type: ignore[arg-type]
    assert store.put_many(records) == 51
    assert count(store) == 50 and count(store, "team-b") == 1


def test_put_many_later_duplicate_wins(store: EvidenceStore) -> None:
    store.put_many([record(body="first"), record(body="second queue")])
    (hit,) = store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)
    assert hit.body == "second queue"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (record(kind="note"), "records[2].kind"),
        (record(tenant=" "), "records[2].tenant"),
        (record(expires_at=True), "records[2].expires_at"),
        ({k: v for k, v in record().items() if k != "source"}, "records[2]"),
        ({**record(), "extra": 1}, "records[2]"),
        ("not a record", "records[2]"),
    ],
    ids=["kind", "tenant", "expires_at", "missing", "unknown", "type"],
)
def test_put_many_bad_record_names_index_and_writes_nothing(
    store: EvidenceStore, bad: Any, field: str
) -> None:
    store.put(**record(record_id="before"))
    batch = [record(record_id="a"), record(record_id="b"), bad, record(record_id="c")]
    with pytest.raises(ValidationError) as info:
        store.put_many(batch)
    assert info.value.field == field
    assert count(store) == 1


@needs_native
def test_put_many_rolls_back_when_the_database_refuses() -> None:
    with EvidenceStore(":memory:", engine="native") as store:
        store._engine.query(  # a guard a DBA might add: refuse one id
            "CREATE TRIGGER no_x BEFORE INSERT ON evidence_current WHEN NEW.record_id = 'x'"
            " BEGIN SELECT RAISE(ABORT, 'x is reserved'); END"
        )
        with pytest.raises(StoreError, match="x is reserved"):
            store.put_many([record(record_id="a"), record(record_id="x")])
        assert count(store) == 0


def test_put_many_requires_an_iterable_of_records(store: EvidenceStore) -> None:
    for bad in ("text", record(), 5):
        with pytest.raises(ValidationError, match="records"):
            store.put_many(bad)  # type: ignore[arg-type]
    assert store.put_many([]) == 0


def test_query_runs_sql_with_the_extension_functions(open_store: Any, engine: str) -> None:
    store = open_store()
    store.put(**record(body="queue consumer lag"))
    if engine == "python":
        with pytest.raises(EngineUnavailableError, match="engine='native'"):
            store.query("SELECT 1")
        return
    result = store.query(
        "SELECT record_id, token_overlap(?, body) AS score FROM evidence_eligible(?, ?, ?)",
        ["queue lag", "team-a", "v1", 0],
    )
    assert result.columns == ("record_id", "score")
    assert list(result) == [("r1", 2)]
    assert store.query("SELECT ?, ?, ?, ?", [None, 1.5, b"\x00", "é"]).rows == ((None, 1.5, b"\x00", "é"),)


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM evidence",
        "INSERT INTO evidence SELECT * FROM evidence",
        "BEGIN",
        "PRAGMA user_version = 5",
        "ATTACH ':memory:' AS other",
        "DROP TABLE evidence",
    ],
)
@needs_native
def test_query_is_read_only(sql: str) -> None:
    with EvidenceStore(":memory:", engine="native") as store:
        store.put(**record())
        with pytest.raises(StoreError, match="only read-only statements"):
            store.query(sql)
        assert count(store) == 1
        store.put(**record(record_id="r2"))  # no transaction was left open
        assert count(store) == 2


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ("abc", "params"),
        ([True], "params[0]"),
        ([2**63], "params[0]"),
        ([object()], "params[0]"),
        (["\ud800"], "params[0]"),
    ],
)
def test_query_params_are_validated(params: Any, field: str) -> None:
    with EvidenceStore(":memory:", engine="auto") as store:
        with pytest.raises(ValidationError) as info:
            store.query("SELECT ?", params)
        assert info.value.field == field


@needs_native
def test_sql_command_prints_columns_and_rows(tmp_path: Path) -> None:
    db = tmp_path / "sql.db"
    with EvidenceStore(db, engine="native") as store:
        store.put(**record(body="queue consumer lag"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyevidence",
            "sql",
            str(db),
            "SELECT record_id, token_overlap(?1, body) AS score, x'00ff' AS raw"
            " FROM evidence_eligible(?2, ?3, 0)",
            "queue lag",
            "team-a",
            "v1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "columns": ["record_id", "score", "raw"],
        "rows": [["r1", 2, {"blob": "00ff"}]],
    }
    refused = subprocess.run(
        [sys.executable, "-m", "pyevidence", "sql", str(db), "DELETE FROM evidence"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 1 and "read-only" in refused.stderr
