"""A read-only store: retrieve works, writes fail clearly, the file does not change."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import record

from pyevidence import EvidenceStore, Record, SchemaError, StoreError, ValidationError


@pytest.fixture
def written(tmp_path: Path, engine: str) -> Path:
    path = tmp_path / "ro.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(body="queue consumer lag"))
    return path


def test_retrieve_works_and_writes_are_refused(written: Path, engine: str) -> None:
    before = written.read_bytes()
    with EvidenceStore(written, engine=engine, read_only=True) as store:
        assert store.read_only is True
        assert [
            h.record_id for h in store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)
        ] == ["r1"]
        for call in (
            lambda: store.put(**record(record_id="r2")),
            lambda: store.put_many([record(record_id="r3")]),
            lambda: store.forget(tenant="team-a", record_id="r1"),
        ):
            with pytest.raises(StoreError, match="opened read-only"):
                call()
        # Past the facade, SQLite itself refuses, and the engine says so.
        with pytest.raises(StoreError, match="readonly database"):
            store._engine.put(Record(**record(record_id="r4")))  # type: ignore[arg-type]
    assert written.read_bytes() == before


def test_read_only_never_creates_or_initialises_a_file(tmp_path: Path, engine: str) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreError):
        EvidenceStore(missing, engine=engine, read_only=True)
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(SchemaError, match="read-only store cannot create one"):
        EvidenceStore(empty, engine=engine, read_only=True)


def test_read_only_needs_a_file() -> None:
    with pytest.raises(ValidationError, match="read_only"):
        EvidenceStore(":memory:", read_only=True)
    with pytest.raises(ValidationError, match="read_only"):
        EvidenceStore(":memory:", read_only="yes")  # type: ignore[arg-type]
