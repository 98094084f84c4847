"""The -wal file's size limit (schema.JOURNAL_SIZE_LIMIT_BYTES, PRAGMA journal_size_limit).

SQLite never shrinks a WAL file by itself: after a large transaction, or after writes
made while a long reader kept checkpoints from reaching the WAL's end, the file stays at
its largest for as long as a connection has the store open. With the limit, the first
commit after a checkpoint that reached the end cuts it back to the limit. The tests
lower the limit (the constant is read as each connection opens) so that a few MB of WAL
is well past it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import record

from pyevidence import EvidenceStore
from pyevidence.storage import schema
from pyevidence.storage.engines import cluster_engine

LIMIT = 256 * 1024
# More than SQLite's automatic checkpoint (1,000 pages of 4 KiB), so a commit checkpoints.
GROWN = 4 * 1024 * 1024


@pytest.fixture
def lowered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(schema, "JOURNAL_SIZE_LIMIT_BYTES", LIMIT)
    yield


def _batch(start: int, count: int) -> list[dict[str, object]]:
    return [
        record(record_id=f"r{i}", body=f"queue consumer lag {i} " * 20, expires_at=10**9)
        for i in range(start, start + count)
    ]


def _wal_size(path: Path) -> int:
    return os.path.getsize(f"{path}-wal")


def test_a_large_transaction_leaves_the_wal_at_the_limit(engine: str, tmp_path: Path, lowered: None) -> None:
    """One put_many writes a WAL far past the limit; its commit checkpoints the WAL to the
    end, and the next write, starting the WAL again, cuts the file to the limit, while the
    store stays open."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        assert store._engine.select("PRAGMA journal_size_limit") == [(LIMIT,)]
        store.put_many(_batch(0, 6000))
        assert _wal_size(path) > GROWN
        store.put(**record(record_id="after"))
        assert _wal_size(path) <= LIMIT
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=1).eligible_count == 6001


def test_the_wal_a_long_reader_kept_growing_shrinks_once_it_ends(
    engine: str, tmp_path: Path, lowered: None
) -> None:
    """While another connection holds a read transaction, no checkpoint reaches the WAL's
    end and the WAL grows with every batch. Once the reader ends, the next commit
    checkpoints it to the end and the one after it cuts the file to the limit."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(record_id="first"))
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            assert reader.execute("SELECT count(*) FROM evidence_current").fetchone() == (1,)
            for start in range(0, 6000, 500):
                store.put_many(_batch(start, 500))
            assert _wal_size(path) > GROWN
            assert reader.execute("SELECT count(*) FROM evidence_current").fetchone() == (1,)
            reader.execute("COMMIT")
        finally:
            reader.close()
        store.put(**record(record_id="checkpoints"))
        store.put(**record(record_id="starts-the-wal-again"))
        assert _wal_size(path) <= LIMIT
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=1).eligible_count == 6003


@pytest.mark.parametrize("read_only", [False, True])
def test_the_default_limit_is_in_force_on_each_engine(engine: str, tmp_path: Path, read_only: bool) -> None:
    """64 MiB (the figure docs/python-api.md and docs/guarantees.md give), on every
    connection, a read-only one too (where it changes nothing: such a connection never
    writes the WAL). The native engine's read-only SQL may read it as well."""
    assert schema.JOURNAL_SIZE_LIMIT_BYTES == 64 * 1024 * 1024
    path = tmp_path / "s.db"
    EvidenceStore(path, engine=engine).close()
    with EvidenceStore(path, engine=engine, read_only=read_only) as store:
        assert store._engine.select("PRAGMA journal_size_limit") == [(64 * 1024 * 1024,)]
        if engine == "native":
            assert store.query("PRAGMA journal_size_limit").rows == ((64 * 1024 * 1024,),)


def test_a_cluster_connection_leaves_the_limit_to_dqlite() -> None:
    """dqlite keeps the WAL in its own VFS, which refuses to cut it to any size but zero:
    the cluster engine skips the setting, as it skips dqlite's other own settings."""
    limits = [sql for sql in schema._after_check() if "journal_size_limit" in sql]
    assert len(limits) == 1
    assert cluster_engine._DQLITE_OWNS.match(limits[0])
