"""Hostile files: every kind of name and file a store might be pointed at.

Each one is refused with a clear pyevidence error, or works where it should, on
both engines, read-write and read-only, and through the command line; a refused
open creates or changes nothing on disk. (A directory the user cannot write and
a file owned by someone else are in test_paths.py: they need a second user.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import record

from pyevidence import EvidenceStore, StoreError, ValidationError
from pyevidence.storage import paths


@dataclass(frozen=True)
class Hostile:
    """A name built in a fresh directory, and what opening it must do."""

    make: Callable[[Path], str | bytes]
    error: type[Exception] | None  # None: it opens
    message: str = ""


def fifo(place: Path) -> str:
    os.mkfifo(place / "pipe")
    return str(place / "pipe")


def unix_socket(place: Path) -> str:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(place / "sock"))
    server.close()  # the socket file stays
    return str(place / "sock")


def directory(place: Path) -> str:
    (place / "dir.db").mkdir()
    return str(place / "dir.db")


def link_to(target: Callable[[Path], str]) -> Callable[[Path], str]:
    def make(place: Path) -> str:
        os.symlink(target(place), place / "link.db")
        return str(place / "link.db")

    return make


def a_store(name: str | bytes) -> str | bytes:
    with EvidenceStore(name, engine="python") as store:
        store.put(**record())
    return name


CORPUS = {
    "directory": Hostile(directory, StoreError, "dir.db is a directory, not a database file"),
    "fifo": Hostile(fifo, StoreError, "pipe is a FIFO (named pipe), not a database file"),
    "socket": Hostile(unix_socket, StoreError, "sock is a socket, not a database file"),
    "device": Hostile(link_to(lambda _: "/dev/null"), StoreError, "link.db is a character device"),
    "link-to-directory": Hostile(link_to(directory), StoreError, "link.db is a directory"),
    "link-to-fifo": Hostile(link_to(fifo), StoreError, "link.db is a FIFO"),
    "dangling-link": Hostile(
        link_to(lambda place: str(place / "nowhere.db")), StoreError, "it is a symbolic link to nothing"
    ),
    "missing-directory": Hostile(
        lambda place: str(place / "no-such-dir" / "ev.db"), StoreError, "no-such-dir does not exist"
    ),
    "uri": Hostile(lambda _: "file:ev.db", ValidationError, "would be read by SQLite as a URI"),
    "uri-memory": Hostile(lambda _: "file:ev.db?mode=memory", ValidationError, "as a URI"),
    "uri-absolute": Hostile(lambda place: f"file:{place}/ev.db", ValidationError, "as a URI"),
    "empty": Hostile(lambda _: "", ValidationError, "is empty"),
    "nul": Hostile(lambda place: f"{place}/ev\x00.db", ValidationError, "must not contain NUL"),
    "not-utf8": Hostile(lambda place: a_store(os.fsencode(place) + b"/caf\xe9.db"), None),
    "uri-looking-file": Hostile(lambda _: a_store("./file:ev.db"), None),
    # URI syntax inside a plain name: the read-only open's URI must escape it, not read it.
    "uri-syntax-name": Hostile(lambda _: a_store("ev?mode=memory&cache=shared#x%41.db"), None),
}


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short directory (a socket's path is limited to 108 bytes), the working directory."""
    made = Path(tempfile.mkdtemp(prefix="pe-hostile-"))
    monkeypatch.chdir(made)
    yield made
    shutil.rmtree(made)


def snapshot(directory: Path) -> dict[bytes, tuple[int, int, int]]:
    found = {}
    for root, dirs, files in os.walk(os.fsencode(directory)):
        for name in dirs + files:
            info = os.lstat(os.path.join(root, name))
            found[os.path.join(root, name)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


def open_within(path: str | bytes, engine: str, read_only: bool, seconds: float = 20) -> object:
    """Opens (and closes) a store in a thread: a hang (a FIFO) fails the test instead of
    stalling the suite. Returns the exception raised, or None."""
    outcome: list[object] = []

    def attempt() -> None:
        try:
            EvidenceStore(path, engine=engine, read_only=read_only).close()
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # a FIFO: give the stuck open a writer
        os.close(fd)
        thread.join(seconds)
        pytest.fail(f"opening {path!r} hung")
    return outcome[0]


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("kind", sorted(CORPUS))
def test_hostile_path_is_refused_clearly_and_changes_nothing(
    place: Path, engine: str, kind: str, read_only: bool
) -> None:
    hostile = CORPUS[kind]
    path = hostile.make(place)
    before = snapshot(place)
    raised = open_within(path, engine, read_only)
    if hostile.error is None:
        assert raised is None
        return
    assert type(raised) is hostile.error, raised
    assert hostile.message in str(raised)
    assert snapshot(place) == before


def test_a_file_that_vanishes_between_the_checks_and_the_open(
    place: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (place / "ev.db").write_bytes(b"")
    checked = paths.database

    def then_vanish(path: object, **kwargs: bool) -> paths.DatabasePath:
        where = checked(path, **kwargs)
        os.unlink(where.target)
        return where

    monkeypatch.setattr(paths, "database", then_vanish)
    with pytest.raises(StoreError, match=r"opening ev\.db failed: unable to open database file"):
        EvidenceStore("ev.db", engine=engine, read_only=True)
    assert os.listdir(place) == []


@pytest.mark.parametrize("kind", sorted(k for k, h in CORPUS.items() if h.error is not None))
def test_the_cli_refuses_a_hostile_db_without_a_traceback(place: Path, engine: str, kind: str) -> None:
    hostile = CORPUS[kind]
    db = hostile.make(place)
    if "\x00" in os.fsdecode(db):
        return  # an argument vector cannot carry NUL: the shell never passes one
    before = snapshot(place)
    scope = ["--tenant", "t", "--record-id", "r"]
    put = [*scope, "--revision", "v", "--kind", "runbook", "--body", "b", "--source", "s"]
    put += ["--expires-at", "9"]
    # backup read the store's schema version through SQLite first: a FIFO hung it for ever
    backup = ["--out", os.fsdecode(place / "copy.db")]
    for command, extra in (("history", scope), ("put", put), ("backup", backup)):
        argv = [sys.executable, "-m", "pyevidence", command, "--db", os.fsdecode(db), "--engine", engine]
        done = subprocess.run(
            [*argv, *extra],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == (2 if hostile.error is ValidationError else 1), done.stderr
        assert done.stderr.startswith("pyevidence: error: ") and "Traceback" not in done.stderr
        assert hostile.message in done.stderr or "no database at" in done.stderr
        assert done.stdout == ""
    assert snapshot(place) == before
