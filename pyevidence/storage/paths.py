"""What a database path may be: the one rule every open and every backup goes through.

A path is a plain file name (``str``, ``bytes`` or ``os.PathLike``; any bytes the
file system allows, so names that are not UTF-8 work too), or ``":memory:"``
where the caller allows it. Refused, before SQLite sees anything:

- an empty name (SQLite would open a temporary database and delete it on close),
- a name beginning with ``file:`` (this SQLite reads such names as URIs, so
  ``file:x.db?mode=memory`` would acknowledge writes and keep nothing; a file
  really named so is opened as ``./file:x.db``),
- anything that exists and is not a regular file once symlinks are followed
  (a directory, FIFO, socket or device: a FIFO would hang a read-only open),
  and a symlink that points nowhere;
- for writing, a file this user cannot write (SQLite would open it read-only
  without a word); with ``read_only=True``, a file that does not exist.

SQLite is then given the absolute path, so no name can ever reach it as a URI
or as one of its special names. ``new_file`` creates a backup's destination with
O_EXCL, so a backup never overwrites a file, even one that appears meanwhile.

Files beside the database: a read-only open that schema.prepare() would refuse
is refused before SQLite creates -wal and -shm files (a read-only connection
cannot remove them); a writable open is refused while -wal or -shm files exist
that this user cannot write; ``open_failure_hint`` says what to do when SQLite
cannot create them.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Union

from ..core.errors import SchemaError, StoreError, ValidationError
from . import schema, sqlite_file

MEMORY = ":memory:"
# A dqlite cluster's address in place of a file (storage/engines/cluster_engine.py).
CLUSTER_SCHEME = "dqlite://"

StorePath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

# What stat() says a name is, for "X is a directory, not a database file".
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)

# SQLite's extended result codes for "the directory (or a file next to the
# database) is not writable" during an open.
SQLITE_CANTOPEN = 14
SQLITE_READONLY_CANTINIT = 1288
SQLITE_READONLY_DIRECTORY = 1544


@dataclass(frozen=True)
class DatabasePath:
    """A checked path: ``shown`` as the caller wrote it (for messages), ``target`` as
    SQLite opens it (an absolute path, or ":memory:")."""

    shown: str
    target: str

    @property
    def in_memory(self) -> bool:
        return self.target == MEMORY

    def read_only_uri(self, *, immutable: bool = False) -> str:
        """The ``file:`` URI that opens ``target`` read-only: the only way the stdlib's
        sqlite3 passes SQLITE_OPEN_READONLY. Built from the file system bytes, so a name
        that is not UTF-8 survives, and every byte SQLite's URI parser would read as
        syntax (``?``, ``#``, ``%``) is escaped."""
        quoted = urllib.parse.quote(os.fsencode(self.target), safe="/")
        return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


def is_cluster_url(path: object) -> bool:
    """Whether ``path`` names a cluster (dqlite://host:port,.../database), not a file."""
    return isinstance(path, str) and path.startswith(CLUSTER_SCHEME)


def checked_name(path: object, *, field: str = "path", allow_memory: bool = True) -> tuple[str, str]:
    """The (shown, absolute-or-":memory:") names of ``path`` after the naming rules,
    with no look at the file system. Raises ValidationError naming ``field``."""
    memory_hint = " or ':memory:'" if allow_memory else ""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ValidationError(field, f"must be a file path{memory_hint}, got {type(path).__name__}")
    shown = os.fsdecode(path)
    try:
        os.fsencode(shown)
    except UnicodeEncodeError as exc:  # a lone surrogate that is not an undecodable byte's escape
        raise ValidationError(
            field, f"is not a name the file system can hold (lone surrogate at index {exc.start})"
        ) from None
    if "\x00" in shown:
        # C would silently open the path cut at the NUL; refuse it instead.
        raise ValidationError(field, "must not contain NUL characters")
    if shown == "":
        raise ValidationError(
            field,
            f"is empty; name a database file{memory_hint} (SQLite would open a temporary "
            "database for an empty name and delete it on close)",
        )
    if shown.endswith(("/", "/.")):
        # The name of a folder: abspath() below would drop the "/" and open, or create, the file
        # "ev.db" for "ev.db/", where the file system finds no file.
        raise ValidationError(field, f"{shown!r} ends in '/', as a folder's name does; name a database file")
    if shown == MEMORY:
        if not allow_memory:
            raise ValidationError(field, "':memory:' keeps nothing after the process exits; name a file")
        return shown, MEMORY
    if shown[:5].lower() == "file:":
        raise ValidationError(
            field,
            f"{shown!r} would be read by SQLite as a URI, and pyevidence takes plain file names only; "
            f"for a file really named so, write './{shown}'",
        )
    return shown, os.path.abspath(shown)


def database(path: object, *, read_only: bool = False, allow_memory: bool = True) -> DatabasePath:
    """``path`` checked for opening: the naming rules, then the file system. A file that
    exists must be a regular file; with ``read_only`` it must exist. Raises
    ValidationError for a name the rules refuse, StoreError for what is on disk."""
    shown, target = checked_name(path, allow_memory=allow_memory)
    where = DatabasePath(shown, target)
    if where.in_memory:
        return where
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        if os.path.islink(target):
            raise StoreError(f"opening {shown} failed: it is a symbolic link to nothing") from None
        parent = os.path.dirname(target)
        if not os.path.isdir(parent):
            raise StoreError(f"opening {shown} failed: the directory {parent} does not exist") from None
        if read_only:
            raise StoreError(
                f"opening {shown} failed: no such file; a read-only store opens an existing database"
            ) from None
        return where
    except OSError as exc:
        raise StoreError(f"opening {shown} failed: {exc.strerror or exc}") from None
    _refuse_special(shown, mode)
    if read_only:
        _refuse_untouched(where)
    elif not os.access(target, os.W_OK):
        # SQLite would open it read-only without a word, and the first put would fail.
        raise StoreError(
            f"opening {shown} failed: this user cannot write to it; open it with read_only=True "
            "to read it, or let this user write to it"
        )
    else:
        _refuse_unwritable_sidecars(where)
    return where


def _refuse_unwritable_sidecars(where: DatabasePath) -> None:
    """A reader running as another user leaves -wal and -shm files only it can write;
    SQLite would then open the store and fail on the first put."""
    real = os.path.realpath(where.target)
    stuck = [
        real + s for s in ("-wal", "-shm") if os.path.exists(real + s) and not os.access(real + s, os.W_OK)
    ]
    if stuck and all(os.stat(path).st_uid == os.geteuid() for path in stuck):
        raise StoreError(
            f"opening {where.shown} failed: this user owns {' and '.join(stuck)} but may not write "
            f"{'it' if len(stuck) == 1 else 'them'}; give it write permission (chmod u+rw {' '.join(stuck)})"
        )
    if stuck:
        raise StoreError(
            f"opening {where.shown} failed: this user cannot write {' and '.join(stuck)}, left by "
            "another user's connection; when no process has the store open and the -wal file is "
            "empty, remove them, or give the users a common group and a umask that lets it write "
            "(umask 002)"
        )


def _refuse_special(shown: str, mode: int) -> None:
    for test, kind in _KINDS:
        if test(mode):
            raise StoreError(f"{shown} is {kind}, not a database file; name a regular file")
    if not stat.S_ISREG(mode):
        raise StoreError(f"{shown} is not a regular file, not a database file; name a regular file")


# The files SQLite keeps beside a database, named by appending these to its name.
SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")


@contextmanager
def new_file(dest: object) -> Iterator[str]:
    """Creates ``dest`` as a new empty file, exclusively (O_EXCL: never an existing
    file, never through a symlink), and yields its absolute path for SQLite to fill.
    If the block fails, the file is removed again, if it is still the one created."""
    shown, target = checked_name(dest, field="dest", allow_memory=False)
    for suffix in SIDECAR_SUFFIXES:
        if target.endswith(suffix):
            raise ValidationError(
                "dest",
                f"{shown} ends in {suffix}, the name SQLite gives the {suffix[1:]} file of "
                f"{shown[: -len(suffix)] or 'a database'}; SQLite would delete or replay it on that "
                "database's next open: name the backup otherwise",
            )
    try:
        created = create_exclusively(target)
    except FileExistsError:
        raise ValidationError(
            "dest", f"{shown} already exists; a backup never overwrites a file, name a new one"
        ) from None
    except FileNotFoundError:
        raise ValidationError(
            "dest", f"cannot create {shown}: the directory {os.path.dirname(target)} does not exist"
        ) from None
    except OSError as exc:
        raise StoreError(f"backup failed: cannot create {shown}: {exc.strerror or exc}") from None
    try:
        yield target
    except BaseException:
        if is_same_file(target, created):
            try:
                os.unlink(target)
            except OSError:
                pass  # already gone
        raise


def create_exclusively(target: str) -> os.stat_result:
    """Creates ``target`` as a new empty file, exclusively (O_EXCL: never an existing file,
    never through a symlink); its identity, for is_same_file. Raises OSError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o644)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def is_same_file(target: str, created: os.stat_result) -> bool:
    """Whether ``target`` still names the file ``created`` (create_exclusively's): only such a
    file is removed again, never one another program put at the path since."""
    try:
        now = os.lstat(target)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (created.st_dev, created.st_ino)


def open_failure_hint(code: int, where: DatabasePath, *, read_only: bool) -> str:
    """What to do when SQLite could not open ``where`` with extended result ``code``:
    an empty string when there is nothing more useful to say than SQLite's message."""
    if where.in_memory:
        return ""
    if code & 0xFF == SQLITE_CANTOPEN and _out_of_file_descriptors():
        return (
            "; this process has as many files open as it may (too many open files): close the "
            "stores and files it no longer uses, or raise its limit (ulimit -n)"
        )
    real = os.path.realpath(where.target)  # SQLite keeps -wal and -shm beside the file a symlink names
    directory = os.path.dirname(real)
    sidecars = (
        f"{real}-wal and {real}-shm" if real != where.target else f"{where.shown}-wal and {where.shown}-shm"
    )
    if code == SQLITE_READONLY_DIRECTORY or (
        code & 0xFF == SQLITE_CANTOPEN and not os.access(directory, os.W_OK)
    ):
        if read_only:
            return (
                f"; the database is in WAL mode, and even a reader needs {sidecars} next to it, "
                f"which do not exist and cannot be created because this user cannot write to the "
                f"directory {directory}; let this user write to {directory}, or copy the database "
                "to a directory you can write and open the copy"
            )
        return (
            f"; this user cannot write to the directory {directory}, where SQLite keeps "
            f"{sidecars}; let this user write to {directory}, or open the store with "
            "read_only=True to read it"
        )
    if code == SQLITE_READONLY_CANTINIT:
        return (
            f"; {sidecars} exist but this user cannot write them; let this user write them "
            "(or remove them after every writer has closed the store)"
        )
    blocked = [
        real + s
        for s in ("-wal", "-shm")
        if os.path.exists(real + s) and not os.access(real + s, os.R_OK | os.W_OK)
    ]
    if code & 0xFF == SQLITE_CANTOPEN and blocked:
        # A -wal may hold committed writes: it is never to be removed while it cannot be read.
        return (
            f"; this user cannot read and write {' and '.join(blocked)}, which SQLite needs to open the "
            f"store (the -wal may hold committed writes); give it permission (chmod u+rw "
            f"{' '.join(blocked)}, as their owner)"
        )
    return ""


def _out_of_file_descriptors() -> bool:
    """Whether this process can open no more files (EMFILE) or the system none (ENFILE)."""
    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        return exc.errno in (errno.EMFILE, errno.ENFILE)
    return False


def _sidecars_missing(where: DatabasePath) -> bool:
    """Whether no -wal or -journal file sits next to ``where``: then the main file holds
    every committed transaction, and its header is the database's state."""
    real = os.path.realpath(where.target)  # SQLite keeps them beside the file a symlink names
    return not any(os.path.lexists(real + suffix) for suffix in ("-wal", "-journal"))


def _header_says_wal(where: DatabasePath) -> bool:
    """Whether the file's SQLite header marks it WAL mode (a read then creates -wal and -shm)."""
    found = sqlite_file.header(where.target)
    return found is not None and found[18:20] == b"\x02\x02"


def _signature(where: DatabasePath) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of the file, to tell whether it changed meanwhile."""
    try:
        info = os.stat(where.target)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _refuse_untouched(where: DatabasePath) -> None:
    """Before a read-only open of a WAL-mode file with no -wal beside it: decides whether
    schema.prepare() refuses the file by reading it with SQLite's immutable flag (no
    locks, no -wal, no -shm), so a refused file gets no files created beside it (a
    read-only connection creates them and cannot remove them). A verdict reached while
    the file changed is dropped, and the real open decides."""
    if not _header_says_wal(where) or not _sidecars_missing(where):
        return
    before = _signature(where)
    try:
        conn = sqlite3.connect(where.read_only_uri(immutable=True), uri=True, isolation_level=None)
    except sqlite3.Error:
        return
    try:
        schema.prepare(lambda sql: conn.execute(sql).fetchall(), _never_writes, where.shown, read_only=True)
    except SchemaError:
        if _signature(where) == before and _sidecars_missing(where):
            raise
    except sqlite3.Error:
        pass  # the real open reports it, with its own message
    finally:
        conn.close()


def check_schema(path: object, *, field: str = "db") -> None:
    """Reads the schema of the database file ``path`` as schema.prepare(read_only=True) does,
    through a connection that never writes and leaves no file behind: SQLite's immutable flag
    when no -wal or -journal is beside it, else a read-only connection, which also reads a
    live or crashed writer's -wal. Raises what prepare() raises (UpgradeNeeded for an older
    release's store, SchemaError for another database), StoreError when SQLite cannot read it."""
    where = DatabasePath(*checked_name(path, field=field, allow_memory=False))
    try:
        mode = os.stat(where.target).st_mode
    except OSError:
        pass  # not there, or not to be looked at: SQLite's open says so
    else:
        _refuse_special(where.shown, mode)  # SQLite's open of a FIFO waits for a writer for ever
    try:
        conn = sqlite3.connect(
            where.read_only_uri(immutable=_sidecars_missing(where)), uri=True, isolation_level=None
        )
        try:
            schema.prepare(
                lambda sql: conn.execute(sql).fetchall(), _never_writes, where.shown, read_only=True
            )
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"opening {where.shown} failed: {exc}") from None


def _never_writes(sql: str) -> None:
    raise AssertionError(f"a read-only check ran a script: {sql[:40]}")
