"""Paths and files: the path rule (pyevidence/storage/paths.py), backup's never-overwrite
contract, the finalizer, and what a failed open or commit says, on both engines."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import record

from pyevidence import EvidenceStore, SchemaError, StoreError, ValidationError

FIXTURES = Path(__file__).parent / "fixtures"
NOT_UTF8 = os.fsdecode(b"caf\xe9-\xff.db")  # Latin-1 bytes: not UTF-8, kept by surrogateescape


def snapshot(directory: Path) -> dict[str, tuple[int, int, int]]:
    """Every name under ``directory`` with its mode, size and mtime: what "unchanged" means."""
    found = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            full = os.path.join(root, name)
            info = os.lstat(full)
            found[os.path.relpath(full, directory)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def written_store(path: Path | str, engine: str, body: str = "queue consumer lag") -> None:
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(body=body))


# ---- backup (item 2)


@pytest.mark.parametrize("dest", ["file:other.db", "file:{tmp}/other.db", "file:other.db?mode=rwc"])
def test_backup_never_writes_through_a_uri(in_tmp: Path, engine: str, dest: str) -> None:
    written_store("other.db", engine, body="the other database")
    before = Path("other.db").read_bytes()
    with EvidenceStore("main.db", engine=engine) as store:
        with pytest.raises(ValidationError, match=r"dest: .* would be read by SQLite as a URI"):
            store.backup(dest.format(tmp=in_tmp))
    assert Path("other.db").read_bytes() == before
    assert sorted(os.listdir(in_tmp)) == ["main.db", "other.db"]


def test_backup_to_an_empty_name_is_refused(in_tmp: Path, engine: str) -> None:
    with EvidenceStore("main.db", engine=engine) as store:
        for empty in ("", b""):
            with pytest.raises(ValidationError, match="dest: is empty"):
                store.backup(empty)  # type: ignore[arg-type]
    assert os.listdir(in_tmp) == ["main.db"]


def test_backup_never_overwrites_a_file_that_appears_after_any_check(
    in_tmp: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The destination is created exclusively: even when every existence check says
    "absent" (the file appeared right after it), the file is not replaced."""
    Path("late.db").write_bytes(b"someone else's file")
    with EvidenceStore("main.db", engine=engine) as store:
        monkeypatch.setattr(os.path, "exists", lambda _path: False)
        monkeypatch.setattr(os.path, "lexists", lambda _path: False)
        with pytest.raises(ValidationError, match=r"late\.db already exists; a backup never overwrites"):
            store.backup("late.db")
    assert Path("late.db").read_bytes() == b"someone else's file"


def test_backup_never_follows_a_symlink_to_create_its_target(in_tmp: Path, engine: str) -> None:
    os.symlink(in_tmp / "victim.db", "link.db")  # points nowhere yet
    with EvidenceStore("main.db", engine=engine) as store:
        with pytest.raises(ValidationError, match="already exists"):
            store.backup("link.db")
    assert not (in_tmp / "victim.db").exists()


def test_backup_to_a_plain_name_works_and_a_failed_copy_leaves_no_file(
    in_tmp: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    written_store("main.db", engine)
    with EvidenceStore("main.db", engine=engine) as store:
        store.backup(Path("copy.db"))
        store.backup(b"copy2.db")

        def failing(dest: str) -> None:
            raise StoreError("backup failed: disk I/O error")

        monkeypatch.setattr(store._engine, "backup", failing)
        with pytest.raises(StoreError, match="disk I/O error"):
            store.backup("copy3.db")
    assert not Path("copy3.db").exists()
    for copy in ("copy.db", "copy2.db"):
        with EvidenceStore(copy, engine=engine, read_only=True) as restored:
            assert restored.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count == 1


# ---- one path rule (item 6)


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("", "path: is empty"),
        (b"", "path: is empty"),
        ("file:ev.db?mode=memory", "would be read by SQLite as a URI"),
        ("file:ev.db", "would be read by SQLite as a URI"),
        ("FILE:ev.db", "would be read by SQLite as a URI"),
        (b"file::memory:", "would be read by SQLite as a URI"),
        # a folder's name: abspath() dropped the "/" and opened the file ev.db
        ("ev.db/", "path: 'ev.db/' ends in '/', as a folder's name does"),
        (b"ev.db/.", "path: 'ev.db/.' ends in '/'"),
    ],
)
def test_empty_and_uri_paths_are_refused_on_both_engines(
    in_tmp: Path, engine: str, read_only: bool, path: str | bytes, match: str
) -> None:
    Path("ev.db").touch()  # so a read-only open through the URI would have found a file
    with pytest.raises(ValidationError, match=match):
        EvidenceStore(path, engine=engine, read_only=read_only)
    assert os.listdir(in_tmp) == ["ev.db"]


def test_a_file_really_named_like_a_uri_opens_as_dot_slash(in_tmp: Path, engine: str) -> None:
    written_store("./file:ev.db", engine)
    assert os.listdir(in_tmp) == ["file:ev.db"]
    for read_only in (False, True):
        with EvidenceStore(in_tmp / "file:ev.db", engine=engine, read_only=read_only) as store:
            assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count == 1


def test_memory_is_a_python_api_name_only(engine: str) -> None:
    with EvidenceStore(":memory:", engine=engine) as store:
        store.put(**record())
    with EvidenceStore(b":memory:", engine=engine) as store:
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count == 0


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyevidence", *args], capture_output=True, text=True, check=False, cwd=cwd
    )


PUT = ["--tenant", "t", "--record-id", "r", "--revision", "v", "--kind", "runbook"]
PUT += ["--body", "queue", "--source", "s", "--expires-at", "9"]


@pytest.mark.parametrize(
    ("db", "match"),
    [
        ("", "--db: is empty"),
        ("file:ev.db?mode=memory", "--db: 'file:ev.db?mode=memory' would be read by SQLite as a URI"),
        (":memory:", "--db: ':memory:' keeps nothing after the process exits; name a file"),
        # put created the file ev.db, which the readers, given ev.db/, then did not find
        ("ev.db/", "--db: 'ev.db/' ends in '/', as a folder's name does; name a database file"),
    ],
)
def test_cli_db_that_would_keep_nothing_is_refused(tmp_path: Path, engine: str, db: str, match: str) -> None:
    for command in (
        ["put", *PUT],
        ["retrieve", "--tenant", "t", "--revision", "v", "--query", "q", "--now", "0"],
    ):
        done = run_cli(command[0], "--db", db, "--engine", engine, *command[1:], cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == f"pyevidence: error: {match}" + done.stderr.split(match, 1)[1]
        assert "Traceback" not in done.stderr
    done = run_cli("sql", db, "SELECT 1", cwd=tmp_path)
    assert done.returncode == 2 and "DB: " in done.stderr
    assert os.listdir(tmp_path) == []


# ---- the finalizer (item 15)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_unclosed_stores_release_their_files_with_a_resource_warning(tmp_path: Path, engine: str) -> None:
    written_store(tmp_path / "ev.db", engine)
    gc.collect()
    baseline = open_fds()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(100):
            EvidenceStore(tmp_path / "ev.db", engine=engine)  # never closed
        gc.collect()
    assert open_fds() <= baseline
    unclosed = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(unclosed) == 100
    assert str(unclosed[0].message) == f"unclosed EvidenceStore on {str(tmp_path / 'ev.db')!r}; call close()"


def test_a_closed_or_failed_store_gives_no_warning(tmp_path: Path, engine: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        EvidenceStore(tmp_path / "ev.db", engine=engine).close()
        with pytest.raises(ValidationError):
            EvidenceStore(tmp_path / "ev.db", engine=engine, limits="big")  # type: ignore[arg-type]
        with pytest.raises(SchemaError):
            EvidenceStore(FIXTURES / "v2_store.db", engine=engine, read_only=True)
        gc.collect()


# ---- read-only opens where the user cannot write (item 16)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can read (pytest's tmp_path is private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="pyevidence-shared-"))
    directory.chmod(0o755)
    yield directory
    directory.chmod(0o755)
    shutil.rmtree(directory)


def as_user(setpriv: str, uid: int) -> list[str]:
    """The setpriv command line that runs a child as ``uid`` (and gid ``uid``), root's way of
    being another user. CAP_DAC_READ_SEARCH only lets the child read and search (an
    interpreter under /root, mode 0700, and its libpython); writing stays denied as for any
    other user, which is what these tests are about."""
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
    ]


def run_as_other_user(script: str, unwritable: Path) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` in a Python that cannot write to ``unwritable`` (a directory or a
    file): as root, in a child that runs as uid/gid 65534 (nobody) through setpriv;
    otherwise with ``unwritable`` made read-only for its owner."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("running as root needs setpriv (util-linux) to drop privileges for this test")
        drop = as_user(setpriv, 65534)
        return subprocess.run(
            [*drop, sys.executable, "-c", script], capture_output=True, text=True, check=False
        )
    mode = unwritable.stat().st_mode
    unwritable.chmod(mode & 0o555)
    try:
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    finally:
        unwritable.chmod(mode)


def test_read_only_open_in_an_unwritable_directory_says_what_to_do(shared_dir: Path, engine: str) -> None:
    db = shared_dir / "ev.db"
    written_store(db, engine)
    db.chmod(0o644)
    script = textwrap.dedent(f"""
        from pyevidence import EvidenceStore, StoreError
        for path, read_only in (({str(db)!r}, True), ({str(shared_dir / "new.db")!r}, False)):
            try:
                EvidenceStore(path, engine={engine!r}, read_only=read_only)
            except StoreError as exc:
                print(exc)
    """)
    done = run_as_other_user(script, shared_dir)
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"opening {db} failed: attempt to write a readonly database; the database is in WAL mode, "
        f"and even a reader needs {db}-wal and {db}-shm next to it, which do not exist and cannot be "
        f"created because this user cannot write to the directory {shared_dir}; let this user write "
        f"to {shared_dir}, or copy the database to a directory you can write and open the copy",
        f"opening {shared_dir}/new.db failed: unable to open database file; this user cannot write to "
        f"the directory {shared_dir}, where SQLite keeps {shared_dir}/new.db-wal and "
        f"{shared_dir}/new.db-shm; let this user write to {shared_dir}, or open the store with "
        "read_only=True to read it",
    ]
    assert sorted(os.listdir(shared_dir)) == ["ev.db"]


def test_a_file_this_user_cannot_write_is_refused_for_writing_and_read_as_it_is(
    shared_dir: Path, engine: str
) -> None:
    """Someone else's file: SQLite would open it read-only without a word and fail on
    the first put; pyevidence refuses the writable open and says what to do."""
    db = shared_dir / "ev.db"
    written_store(db, engine)
    db.chmod(0o644)
    shared_dir.chmod(0o777)  # the directory is not the problem here
    script = textwrap.dedent(f"""
        from pyevidence import EvidenceStore, StoreError
        try:
            EvidenceStore({str(db)!r}, engine={engine!r})
        except StoreError as exc:
            print(exc)
        with EvidenceStore({str(db)!r}, engine={engine!r}, read_only=True) as store:
            print(store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count)
    """)
    done = run_as_other_user(script, db)
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"opening {db} failed: this user cannot write to it; open it with read_only=True to read "
        "it, or let this user write to it",
        "1",
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs two other users, so root to switch to them")
def test_sidecars_another_reader_left_are_refused_for_writing_with_what_to_do(
    shared_dir: Path, engine: str
) -> None:
    """A reader running as another user creates -wal and -shm that only it can write;
    the owner's next writable open is refused up front instead of failing on put."""
    db = shared_dir / "ev.db"
    written_store(db, engine)
    shared_dir.chmod(0o777)
    os.chown(db, 65533, 65533)
    db.chmod(0o644)
    setpriv = str(shutil.which("setpriv"))
    for uid, read_only in ((65534, True), (65533, False)):
        opener = textwrap.dedent(f"""
            from pyevidence import EvidenceStore, StoreError
            try:
                EvidenceStore({str(db)!r}, engine={engine!r}, read_only={read_only})
            except StoreError as exc:
                print(exc)
        """)
        dropped = as_user(setpriv, uid)
        done = subprocess.run(
            [*dropped, sys.executable, "-c", opener], capture_output=True, text=True, check=False
        )
        assert done.stderr == ""
    assert done.stdout == (
        f"opening {db} failed: this user cannot write {db}-wal and {db}-shm, left by another user's "
        "connection; when no process has the store open and the -wal file is empty, remove them, or "
        "give the users a common group and a umask that lets it write (umask 002)\n"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs another user, so root to switch to it")
def test_sidecars_this_user_owns_but_may_not_use_are_named_as_its_own(shared_dir: Path, engine: str) -> None:
    """The message blamed "another user's connection" for the user's own -wal, which holds a
    committed put here. (The read-only open's hint for such a -wal cannot be shown here: the child
    keeps CAP_DAC_READ_SEARCH, so it can read the file.)"""
    db = shared_dir / "ev.db"
    shared_dir.chmod(0o777)
    setpriv = str(shutil.which("setpriv"))
    leave_a_wal = textwrap.dedent(f"""
        import os
        from pyevidence import EvidenceStore
        store = EvidenceStore({str(db)!r}, engine={engine!r})
        store.put(tenant="t", record_id="r", revision="v1", kind="runbook", body="b", source="s",
                  expires_at=9)
        os.chmod({str(db) + "-wal"!r}, 0)
        os._exit(0)  # no close: the -wal stays, with the put in it
    """)
    opener = textwrap.dedent(f"""
        from pyevidence import EvidenceStore, StoreError
        try:
            EvidenceStore({str(db)!r}, engine={engine!r})
        except StoreError as exc:
            print(exc)
    """)
    for script in (leave_a_wal, opener):
        done = subprocess.run(
            [*as_user(setpriv, 65534), sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"opening {db} failed: this user owns {db}-wal but may not write it; give it write permission "
        f"(chmod u+rw {db}-wal)",
    ]


def test_retrieve_and_check_read_a_store_this_user_cannot_write(shared_dir: Path, engine: str) -> None:
    """Both only read, yet opened the store for writing, and told a shell user to pass
    read_only=True, which the command line has no way to say."""
    db = shared_dir / "ev.db"
    written_store(db, engine)
    db.chmod(0o644)
    shared_dir.chmod(0o777)
    script = textwrap.dedent(f"""
        import subprocess, sys
        for args in (["retrieve", "--tenant", "team-a", "--revision", "v1", "--query", "queue", "--now", "0"],
                     ["check"]):
            done = subprocess.run([sys.executable, "-m", "pyevidence", *args, "--db", {str(db)!r},
                                   "--engine", {engine!r}], capture_output=True, text=True)
            print(done.returncode, done.stderr.strip())
    """)
    done = run_as_other_user(script, db)
    assert done.stdout.splitlines() == ["0 ", "0 "], done.stdout + done.stderr


# ---- names that are not UTF-8 (item 17)


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_name_that_is_not_utf8_opens_on_both_engines(in_tmp: Path, engine: str, as_bytes: bool) -> None:
    name: str | bytes = os.fsencode(NOT_UTF8) if as_bytes else NOT_UTF8
    written_store(name, engine)  # type: ignore[arg-type]
    with EvidenceStore(name, engine=engine, read_only=True) as store:
        assert store.history(tenant="team-a", record_id="r1")[0].body == "queue consumer lag"
        store.backup(os.fsencode(NOT_UTF8 + ".bak") if as_bytes else NOT_UTF8 + ".bak")
    names = {name for name in os.listdir(b".") if not name.endswith((b"-wal", b"-shm"))}
    assert names == {os.fsencode(NOT_UTF8), os.fsencode(NOT_UTF8 + ".bak")}


def test_cli_reads_a_database_whose_name_is_not_utf8(tmp_path: Path, engine: str) -> None:
    db = os.fsencode(tmp_path) + b"/caf\xe9.db"
    common = ["--db", os.fsdecode(db), "--engine", engine]
    for command in (["put", *common, *PUT], ["history", *common, "--tenant", "t", "--record-id", "r"]):
        done = subprocess.run(
            [os.fsencode(sys.executable), b"-m", b"pyevidence", *map(os.fsencode, command)],
            capture_output=True,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, b"")
    assert b'"body": "queue"' in done.stdout


def test_cli_backs_up_restores_exports_and_imports_names_that_are_not_utf8(
    tmp_path: Path, engine: str
) -> None:
    """restore --from is kept as args.source, the name of put's text option --source: a backup
    whose name is not UTF-8, which backup made, was refused as "source: is not UTF-8 text"."""
    named = [
        os.fsencode(tmp_path) + name for name in (b"/caf\xe9.db", b"/b\xff.db", b"/r\xfe.db", b"/x\xfd.jsonl")
    ]
    db, backup, restored, exported = map(os.fsdecode, named)
    commands = [
        ["put", "--db", db, "--engine", engine, *PUT],
        ["backup", "--db", db, "--out", backup],
        ["restore", "--db", restored, "--from", backup],
        ["export", "--db", restored, "--engine", engine, "--tenant", "t", "--out", exported],
        ["import", "--db", db, "--engine", engine, "--skip-unchanged", exported],
    ]
    for command in commands:
        done = subprocess.run(
            [os.fsencode(sys.executable), b"-m", b"pyevidence", *map(os.fsencode, command)],
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, (command[0], done.stderr)
    assert b'"unchanged": 1' in done.stdout


# ---- failed commits (item 18)

COMMIT_CHILD = """
import resource, signal, sys
from pyevidence import EvidenceStore, StoreError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit, write() fails with EFBIG
with EvidenceStore(sys.argv[1], engine=sys.argv[2]) as store:
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    big = [dict(tenant="t", record_id=f"r{i}", revision="v", kind="runbook", body="x" * 5000,
                source="s", expires_at=5) for i in range(100)]
    try:
        store.put_many(big)
    except StoreError as exc:
        print(exc)
    try:
        store.put(**{**big[0], "body": "x" * 300_000})
    except StoreError as exc:
        print(exc)
    store.put(**{**big[0], "record_id": "small"})  # the store is still usable
    print(store.retrieve(tenant="t", revision="v", query="x", now=0).eligible_count)
"""


def test_a_failed_commit_names_the_operation_and_what_to_do(tmp_path: Path, engine: str) -> None:
    db = tmp_path / "ev.db"
    EvidenceStore(db, engine=engine).close()
    done = subprocess.run(
        [sys.executable, "-c", COMMIT_CHILD, str(db), engine], capture_output=True, text=True, check=False
    )
    hint = (
        "nothing was written; check the disk (free space, the file size limit) and that the database "
        "file, its -wal file and its directory are writable, then retry"
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"put_many failed while committing: disk I/O error; {hint}",
        f"put failed: disk I/O error; {hint}",
        "1",
    ]


# ---- a refused read-only open leaves the directory as it found it (item 18)


def wal_foreign_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (text)")
    conn.close()


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (wal_foreign_file, "is not a pyevidence database: it already holds notes"),
        (lambda path: shutil.copy(FIXTURES / "v2_store.db", path), "open it once without read_only=True"),
    ],
)
def test_a_refused_read_only_open_creates_no_files(
    tmp_path: Path, engine: str, make: object, match: str
) -> None:
    make(tmp_path / "ev.db")  # type: ignore[operator]
    before = snapshot(tmp_path)
    with pytest.raises(SchemaError, match=match):
        EvidenceStore(tmp_path / "ev.db", engine=engine, read_only=True)
    assert snapshot(tmp_path) == before


def test_a_refused_read_only_open_through_a_symlink_creates_no_files(tmp_path: Path, engine: str) -> None:
    (tmp_path / "real").mkdir()
    wal_foreign_file(tmp_path / "real" / "ev.db")
    os.symlink(tmp_path / "real" / "ev.db", tmp_path / "link.db")
    before = snapshot(tmp_path)
    with pytest.raises(SchemaError, match="is not a pyevidence database: it already holds notes"):
        EvidenceStore(tmp_path / "link.db", engine=engine, read_only=True)
    assert snapshot(tmp_path) == before


def test_an_older_store_this_user_cannot_write_says_who_can_upgrade_it(shared_dir: Path) -> None:
    """check told such a user to run check, the command they had just run."""
    db = shared_dir / "old.db"
    db.write_bytes((Path(__file__).parent / "fixtures" / "v3_store.db").read_bytes())
    db.chmod(0o644)
    shared_dir.chmod(0o777)
    script = textwrap.dedent(f"""
        import subprocess, sys
        done = subprocess.run([sys.executable, "-m", "pyevidence", "check", "--db", {str(db)!r}],
                              capture_output=True, text=True)
        print(done.returncode, done.stderr.strip())
    """)
    done = run_as_other_user(script, db)
    assert done.stdout.strip().endswith(
        "'pyevidence check' only reads: this user cannot write it, so a user who can must open it once, "
        f"such as with 'pyevidence check --db {db}'"
    ), done.stdout + done.stderr
    assert done.stdout.startswith("1 ")


def test_the_command_line_gives_command_line_advice_for_a_file_it_cannot_write(shared_dir: Path) -> None:
    db = shared_dir / "ev.db"
    written_store(db, "auto")
    db.chmod(0o644)
    (shared_dir / "records.jsonl").write_text(json.dumps(record(record_id="r2")) + "\n")
    (shared_dir / "records.jsonl").chmod(0o644)
    put = ["put", "--db", str(db), "--tenant", "team-a", "--record-id", "r3", "--revision", "v1", "--kind",
           "runbook", "--body", "b", "--source", "s", "--expires-at", "9"]  # fmt: skip
    commands = [
        put,
        ["forget", "--db", str(db), "--tenant", "team-a", "--record-id", "r1"],
        ["reindex", "--db", str(db)],
        ["import", "--db", str(db), str(shared_dir / "records.jsonl")],
    ]
    script = textwrap.dedent(f"""
        import contextlib, io
        from pyevidence.interfaces.cli import main
        for args in {commands!r}:
            said = io.StringIO()
            with contextlib.redirect_stderr(said):
                code = main(args)
            print(code, said.getvalue().strip())
    """)
    done = run_as_other_user(script, db)
    assert done.stderr == ""
    advice = (
        f"1 pyevidence: error: opening {db} failed: this user cannot write to it; let this user write to it "
        "(retrieve, history, get-version, verify, check and export read it as it is)"
    )
    assert done.stdout.splitlines() == [advice] * 4


def test_an_open_out_of_file_descriptors_says_so(tmp_path: Path, engine: str) -> None:
    """It said only "unable to open database file"."""
    engine_name = engine
    path = tmp_path / "s.db"
    EvidenceStore(path, engine=engine_name).close()
    script = textwrap.dedent(f"""
        import resource
        from pyevidence import EvidenceStore
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
        held = []
        try:
            while True:
                held.append(open("/dev/null"))
        except OSError:
            held.pop().close()  # one left: the store's file opens, its -wal does not
        try:
            EvidenceStore({str(path)!r}, engine={engine_name!r})
        except Exception as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "too many open files" in done.stdout and "ulimit -n" in done.stdout, done.stdout + done.stderr
