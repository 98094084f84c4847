"""pyevidence backup and restore, from the command line (docs/cli.md, "Backup and restore")."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest
from helpers import tamper

from pyevidence import EvidenceStore
from pyevidence.core.errors import StoreError, ValidationError


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


def _store_and_backup(tmp_path: Path, n: int = 300) -> tuple[Path, Path]:
    store_path, backup = tmp_path / "s.db", tmp_path / "backup.db"
    with EvidenceStore(store_path) as store:
        store.put_many(_records("a", n))
        store.backup(backup)
    return store_path, backup


def test_a_damaged_backup_is_refused_and_the_store_is_unchanged(tmp_path: Path) -> None:
    """restore opened the backup and put it in place without a check: a backup with a damaged
    page, or a damaged text in a page SQLite still reads, replaced a good store, exit 0."""
    store_path, backup = _store_and_backup(tmp_path)
    with EvidenceStore(store_path) as store:
        store.put_many(_records("b", 5))  # the store differs from the backup
    kept = store_path.read_bytes()
    data = backup.read_bytes()

    broken_page = bytearray(data)
    broken_page[20 * 4096 : 20 * 4096 + 64] = b"\xff" * 64  # a page of the history, torn
    broken_text = bytearray(data)
    at = data.index(b"a record 77: restart")
    broken_text[at : at + 8] = b"A RECORD"  # SQLite reads the page; the content hash disagrees
    for damaged, why in ((broken_page, "is damaged"), (broken_text, "the stored content does not match")):
        backup.write_bytes(bytes(damaged))
        done = run_cli("restore", "--db", str(store_path), "--from", str(backup))
        assert done.returncode == 2 and "error: from: " in done.stderr, done.stderr
        assert why in done.stderr and f"{store_path} is unchanged" in done.stderr, done.stderr
        assert store_path.read_bytes() == kept

    backup.write_bytes(b"")
    done = run_cli("restore", "--db", str(store_path), "--from", str(backup))
    assert done.returncode == 2 and "is an empty file, not a backup" in done.stderr, done.stderr
    assert store_path.read_bytes() == kept


def test_a_backup_with_a_tenant_left_without_its_history_is_refused(tmp_path: Path) -> None:
    """restore's check listed the tenants from the history alone: a backup whose tenant kept its
    current rows after its versions were deleted passed, and restored a store that fails verify."""
    store_path, backup = _store_and_backup(tmp_path, 3)
    with EvidenceStore(backup) as copy:
        copy.put_many([{**found, "tenant": "team-b"} for found in _records("b", 2)])
    tamper(backup, "DELETE FROM evidence_versions WHERE tenant = 'team-b'")
    kept = store_path.read_bytes()
    done = run_cli("restore", "--db", str(store_path), "--from", str(backup))
    assert done.returncode == 2 and "is damaged (tenant 'team-b'" in done.stderr, done.stderr
    assert store_path.read_bytes() == kept


def test_a_restore_that_fails_into_a_new_path_leaves_nothing_there(tmp_path: Path) -> None:
    """A failed restore into a path that was not there left an empty file, which the next
    restore then refused as a file that is not a store."""
    _, backup = _store_and_backup(tmp_path)
    fresh = tmp_path / "new.db"
    limit = "import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))"
    cli = "import sys; from pyevidence.interfaces.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", f"{limit}; {cli}", "restore", "--db", str(fresh), "--from", str(backup)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "failed" in done.stderr, done.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("new.db")]
    assert run_cli("restore", "--db", str(fresh), "--from", str(backup)).returncode == 0
    assert _records_in(fresh, "auto") == 300


def test_restore_names_a_directory_that_is_not_there_and_a_target_that_is_not_a_file(tmp_path: Path) -> None:
    _, backup = _store_and_backup(tmp_path, 3)
    done = run_cli("restore", "--db", str(tmp_path / "nodir" / "x.db"), "--from", str(backup))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        f"cannot create {tmp_path / 'nodir' / 'x.db'}: the directory {tmp_path / 'nodir'} does not exist"
        in (done.stderr)
    )
    done = run_cli("restore", "--db", str(tmp_path), "--from", str(backup))
    assert done.returncode == 2 and f"{tmp_path} is not a file" in done.stderr, done.stderr


def test_restore_names_a_page_size_it_cannot_change(tmp_path: Path) -> None:
    """It said "attempt to write a readonly database"."""
    store_path, backup = _store_and_backup(tmp_path, 3)
    conn = sqlite3.connect(store_path, isolation_level=None)
    try:
        for sql in (
            "PRAGMA journal_mode = DELETE",
            "PRAGMA page_size = 8192",
            "VACUUM",
            "PRAGMA journal_mode = WAL",
        ):
            conn.execute(sql)
    finally:
        conn.close()
    kept = store_path.read_bytes()
    done = run_cli("restore", "--db", str(store_path), "--from", str(backup))
    assert done.returncode == 2, done.stderr
    assert f"{store_path} has pages of 8192 bytes and {backup} of 4096" in done.stderr, done.stderr
    assert "restore into a new file" in done.stderr and store_path.read_bytes() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.db", "s.db"]  # no -wal or -shm left


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_backup_is_never_named_as_a_file_sqlite_keeps_beside_a_database(
    tmp_path: Path, suffix: str
) -> None:
    """A backup named ev.db-journal was deleted by SQLite on the store's next open."""
    store_path, _ = _store_and_backup(tmp_path, 3)
    out = f"{store_path}{suffix}"
    done = run_cli("backup", "--db", str(store_path), "--out", out)
    assert done.returncode == 2 and f"error: out: {out} ends in {suffix}" in done.stderr, done.stderr
    assert not os.path.exists(out) or suffix != "-journal"  # a -wal or -shm may be the store's own
    with EvidenceStore(store_path) as store, pytest.raises(ValidationError, match=f"ends in {suffix}"):
        store.backup(tmp_path / f"copy.db{suffix}")
    assert not (tmp_path / f"copy.db{suffix}").exists()
    done = run_cli("backup", "--db", str(store_path), "--out", str(tmp_path / "nodir" / "b.db"))
    assert done.returncode == 2 and "the directory" in done.stderr and "does not exist" in done.stderr


@pytest.mark.parametrize("release", ["closed", "still open"])
def test_a_backup_of_an_older_store_copies_it_as_it_is(tmp_path: Path, release: str) -> None:
    """pyevidence backup upgraded an older store for good before it copied it: the backup
    taken before an upgrade could no longer be opened by the release that wrote it. Its
    first fix still upgraded a store whose release had it open (a -wal beside it)."""
    old, out = tmp_path / "old.db", tmp_path / "old-backup.db"
    old.write_bytes((Path(__file__).parent / "fixtures" / "v3_store.db").read_bytes())
    kept = old.read_bytes()
    holder = sqlite3.connect(old)  # the old release, with the store open: its -wal and -shm beside it
    try:
        holder.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        if release == "closed":
            holder.close()
        else:
            assert os.path.exists(f"{old}-wal")
        done = run_cli("backup", "--db", str(old), "--out", str(out))
    finally:
        holder.close()
    assert done.returncode == 0, done.stderr
    assert "schema version 3" in done.stderr and "the backup is a copy of it as it is" in done.stderr
    assert "upgrading" not in done.stderr and old.read_bytes() == kept
    for path in (old, out):
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    restored = tmp_path / "restored.db"  # a backup of an older release restores, and upgrades later
    done = run_cli("restore", "--db", str(restored), "--from", str(out))
    assert done.returncode == 0, done.stderr
    assert run_cli("check", "--db", str(restored)).returncode == 0


def test_a_cli_forget_says_when_a_reader_keeps_the_text_on_disk(engine: str, tmp_path: Path) -> None:
    """forget exited 0 with nothing said while another connection's read kept its erased text
    in the file; it now waits for that reader for up to 5 s, then says so."""
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(_records("a", 3))
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM evidence_versions").fetchone()  # a snapshot held
        done = run_cli(
            "forget", "--db", str(path), "--tenant", "team-a", "--record-id", "a1", "--engine", engine
        )
        assert done.returncode == 0 and json.loads(done.stdout)["forget"]["deleted"] is True, done.stderr
        assert "note: another connection stayed inside a read transaction" in done.stderr, done.stderr
    finally:
        reader.execute("COMMIT")
        reader.close()
    done = run_cli("forget", "--db", str(path), "--tenant", "team-a", "--record-id", "a2", "--engine", engine)
    assert done.returncode == 0 and "read transaction" not in done.stderr, done.stderr
    assert b"a1 record" not in path.read_bytes()


def test_finish_erasure_tries_again_once_the_reader_has_ended(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many(_records("a", 3))
        assert store.finish_erasure() is True  # nothing forgotten, nothing pending
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM evidence_versions").fetchone()
        assert store.forget(tenant="team-a", record_id="a1") is True
        assert store.finish_erasure(timeout=0.2) is False
        reader.execute("COMMIT")
        reader.close()
        assert store.finish_erasure(timeout=0.2) is True
        wal = Path(f"{path}-wal")
        assert b"a1 record" not in path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_a_backup_written_under_larger_limits_is_restored(tmp_path: Path) -> None:
    """restore verified the backup under the default Limits and called a store with a tenant
    longer than they allow "damaged"."""
    from pyevidence import Limits

    store_path, restored = tmp_path / "s.db", tmp_path / "restored.db"
    tenant = "t" * 2000
    with EvidenceStore(store_path, limits=Limits(max_field_bytes=4096)) as store:
        store.put(
            tenant=tenant, record_id="r", revision="v1", kind="runbook", body="b", source="s", expires_at=9
        )
    done = run_cli("restore", "--db", str(restored), "--from", str(store_path))
    assert done.returncode == 0, done.stderr[:300]
    with EvidenceStore(restored, limits=Limits(max_field_bytes=4096)) as store:
        assert store.verify(tenant=tenant).ok


def test_a_new_target_another_program_writes_to_during_the_check_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restore claims a new target at once; if another program writes to it while the
    backup is checked, the restore stops and leaves that program's bytes where they are."""
    from pyevidence.interfaces import restore

    _, backup = _store_and_backup(tmp_path, 3)
    fresh = tmp_path / "new.db"
    checked = restore._checked_backup

    def meanwhile(backup_path: str, target: str) -> None:
        checked(backup_path, target)
        assert fresh.exists() and fresh.stat().st_size == 0  # claimed before the check
        fresh.write_text("precious notes")

    monkeypatch.setattr(restore, "_checked_backup", meanwhile)
    with pytest.raises(StoreError, match="another program wrote to"):
        restore.restore(str(backup), str(fresh))
    assert fresh.read_text() == "precious notes"


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), 1e12, "5", None, True])
def test_finish_erasure_refuses_a_timeout_it_cannot_wait(tmp_path: Path, timeout: object) -> None:
    with EvidenceStore(tmp_path / "s.db") as store, pytest.raises(ValidationError, match="timeout: must be"):
        store.finish_erasure(timeout=timeout)  # type: ignore[arg-type]
