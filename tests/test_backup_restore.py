"""pyevidence backup and restore, from the command line (docs/cli.md, "Backup and restore")."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyevidence import EvidenceStore
from pyevidence.core.errors import StoreError


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyevidence", *args], capture_output=True, text=True, timeout=120
    )


def _records(prefix: str, n: int) -> list[dict[str, object]]:
    return [
        dict(tenant="team-a", record_id=f"{prefix}{i}", revision="v1", kind="runbook",
             body=f"{prefix} record {i}: restart the queue consumer " * 8, source=f"runbook://{prefix}{i}",
             expires_at=100)
        for i in range(n)
    ]  # fmt: skip


def _records_in(path: Path, engine: str) -> int:
    """How many records the store holds, once its chain verifies."""
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        assert store.verify(tenant="team-a").ok
        return store.retrieve(tenant="team-a", revision="v1", query="restart", now=0).eligible_count


def test_a_backup_restored_over_a_store_a_killed_writer_left_a_wal_beside(
    engine: str, tmp_path: Path
) -> None:
    """The audit's case: copying the backup over the store's file let SQLite replay the old
    store's -wal onto it, and the store was damaged for good. restore goes through SQLite."""
    store_path, backup = tmp_path / "s.db", tmp_path / "backup.db"
    with EvidenceStore(store_path, engine=engine) as store:
        store.put_many(_records("a", 200))
    done = run_cli("backup", "--db", str(store_path), "--out", str(backup), "--engine", engine)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "backup": {"bytes": backup.stat().st_size, "db": str(store_path), "out": str(backup)}
    }
    writer = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = {sys.path!r}
        from pyevidence import EvidenceStore
        from test_backup_restore import _records
        store = EvidenceStore({str(store_path)!r}, engine={engine!r})
        store.put_many(_records("b", 2000))
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    killed = subprocess.run([sys.executable, "-c", writer], cwd=Path(__file__).parent, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert Path(f"{store_path}-wal").stat().st_size > 0  # the log the next open replays
    assert _records_in(store_path, engine) == 2200

    done = run_cli("restore", "--db", str(store_path), "--from", str(backup))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"restore": {"db": str(store_path), "from": str(backup)}}
    assert _records_in(store_path, engine) == 200
    with sqlite3.connect(store_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with EvidenceStore(store_path, engine=engine) as store:  # and it takes writes again
        store.put_many(_records("c", 10))
        assert store.check_index().ok
    assert _records_in(store_path, engine) == 210


def test_restore_refuses_what_it_must_not_overwrite_and_changes_nothing(tmp_path: Path) -> None:
    store_path, backup, other = tmp_path / "s.db", tmp_path / "backup.db", tmp_path / "notes.sqlite"
    with EvidenceStore(store_path) as store:
        store.put_many(_records("a", 3))
    assert run_cli("backup", "--db", str(store_path), "--out", str(backup)).returncode == 0
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (text)")
    kept = {p: p.read_bytes() for p in (store_path, backup, other)}

    done = run_cli("backup", "--db", str(store_path), "--out", str(backup))  # never overwrites
    assert done.returncode == 2 and "error: out: " in done.stderr and "already exists" in done.stderr
    done = run_cli("restore", "--db", str(other), "--from", str(backup))  # not a pyevidence store
    assert done.returncode == 2 and "does not open as a pyevidence store" in done.stderr, done.stderr
    assert "move" in done.stderr and "-wal and -shm files away" in done.stderr
    done = run_cli("restore", "--db", str(store_path), "--from", str(other))  # not a backup of one
    assert done.returncode != 0 and "not a pyevidence database" in done.stderr, done.stderr
    done = run_cli("restore", "--db", str(store_path), "--from", str(store_path))
    assert done.returncode == 2 and "is the store itself" in done.stderr, done.stderr
    done = run_cli("restore", "--db", str(store_path), "--from", str(tmp_path / "missing.db"))
    assert done.returncode == 2 and "no backup file at" in done.stderr, done.stderr  # bad input
    assert {p: p.read_bytes() for p in kept} == kept
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["backup.db", "notes.sqlite", "s.db"]  # no -wal or -shm left beside them

    fresh = tmp_path / "fresh.db"  # a store that is not there yet is created from the backup
    assert run_cli("restore", "--db", str(fresh), "--from", str(backup)).returncode == 0
    assert _records_in(fresh, "auto") == 3
    assert not os.path.exists(f"{fresh}-wal") or os.path.getsize(f"{fresh}-wal") == 0


def test_a_lock_held_past_the_busy_timeout_says_what_happened_and_that_nothing_was_written(
    engine: str, tmp_path: Path
) -> None:
    """It said only "put failed: database is locked"."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(_records("a", 2))
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another program's write transaction, left open
            with pytest.raises(StoreError) as caught:
                store.put_many(_records("b", 2))
        finally:
            holder.close()
        assert "database is locked; nothing was written; another connection held the database's lock" in str(
            caught.value
        )
        assert store.retrieve(tenant="team-a", revision="v1", query="restart", now=0).eligible_count == 2


def test_a_damaged_file_says_how_to_put_a_backup_back(tmp_path: Path) -> None:
    """The audit's damaged store (a backup copied over a store a killed writer left a WAL
    beside) said "database disk image is malformed" and no more."""
    path = tmp_path / "s.db"
    with EvidenceStore(path) as store:
        store.put_many(_records("a", 300))
    data = bytearray(path.read_bytes())
    page = 4096
    for at in range(5 * page, len(data), page):  # every page past the first few: a damaged file
        data[at : at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    done = run_cli("verify", "--db", str(path), "--tenant", "team-a")
    assert done.returncode == 1, done.stderr
    assert "database disk image is malformed; the database file is damaged" in done.stderr, done.stderr
    assert "'pyevidence restore'" in done.stderr


def test_restore_into_a_store_another_program_keeps_locked_gives_up_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """sqlite3's backup() retried a locked target for ever: restore hung as long as another
    program kept its write transaction open. It now gives up after the busy timeout (exit 1)."""
    store_path, backup = tmp_path / "ev.db", tmp_path / "copy.db"
    with EvidenceStore(store_path) as store:
        store.put_many(_records("a", 3))
        store.backup(backup)
    holder = sqlite3.connect(store_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # a write transaction left open
        kept = store_path.read_bytes()
        done = run_cli("restore", "--db", str(store_path), "--from", str(backup))
        assert done.returncode == 1 and "database is locked" in done.stderr, done.stderr
        assert f"{store_path} is unchanged" in done.stderr
        assert store_path.read_bytes() == kept
    finally:
        holder.execute("ROLLBACK")
        holder.close()
