"""Exceptions raised by pyevidence (every one derives from EvidenceError), and its warning."""

from __future__ import annotations


class EvidenceError(Exception):
    """Base class of every error pyevidence raises on purpose."""


class ValidationError(EvidenceError, ValueError):
    """An argument broke a documented rule; nothing was changed.

    ``field`` names the offending argument, so a caller (or a CLI) can point at it;
    ``reason`` says what is wrong with it.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ScorerError(EvidenceError):
    """A scorer returned something that is not a finite number."""


class EngineUnavailableError(EvidenceError):
    """The requested engine is not available in this installation."""


class EngineFallbackWarning(UserWarning):
    """engine="auto" runs the Python engine: the native engine is not built in this installation.

    Issued once per process. The results are the same, only slower; pass engine="python"
    to choose it on purpose, or reinstall with a C compiler to get the native engine.
    """


class StoreError(EvidenceError):
    """The database could not be opened, read or written as asked."""


class SchemaError(StoreError):
    """The file is not a pyevidence database of a version this release understands."""


class NoSchema(SchemaError):
    """A read-only open found a database without a pyevidence schema (an empty one), which it
    cannot create: on a cluster, a database name no put has used yet."""


class UpgradeNeeded(SchemaError):
    """A read-only open found a store of an older schema version, which only a writable
    open upgrades. Each interface says how to open it writable: this message, the API's."""

    def __init__(self, where: str, version: int, upgrades_to: int) -> None:
        self.where, self.version, self.upgrades_to = where, version, upgrades_to
        super().__init__(f"{self.older()}; open it once without read_only=True to upgrade it")

    def __reduce__(self) -> tuple[type[UpgradeNeeded], tuple[str, int, int]]:
        return type(self), (self.where, self.version, self.upgrades_to)

    def older(self) -> str:
        return (
            f"{self.where} has pyevidence schema version {self.version}, which this release upgrades "
            f"to {self.upgrades_to} when it opens it"
        )


def not_utf8(what: str) -> str:
    """Both engines' message for stored text that is not valid UTF-8, which only raw SQL can
    store (CAST(x'ff' AS TEXT)): ``what`` is "column 'body'" and the like."""
    rebuild = (
        "; 'pyevidence reindex' rebuilds the token index from the records" if what == "column 'token'" else ""
    )
    stored = "it is stored text that is not valid UTF-8; raw SQL wrote it, put() never does"
    return f"reading {what} failed: {stored}{rebuild}"


# SQLite's primary result codes for "this file is not a usable database".
_NOT_A_DATABASE = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
# ... and for "the disk refused": SQLITE_IOERR, SQLITE_FULL.
_DISK_TROUBLE = {10, 13}
_DISK_HINT = (
    "check the disk (free space, the file size limit) and that the database file, its -wal "
    "file and its directory are writable, then retry"
)


# ... for "another connection kept the lock past the busy timeout": SQLITE_BUSY itself, not its
# extended codes (SQLITE_BUSY_SNAPSHOT and _RECOVERY come at once, without a wait), nor
# SQLITE_LOCKED (a conflict inside one connection).
_SQLITE_BUSY = 5
_LOCK_HINT = (
    "another connection held the database's lock for longer than the busy timeout of 5 s (another "
    "program's long write, or a write transaction it left open); retry once it is done"
)
# ... and for "the file is damaged": SQLITE_CORRUPT as SQLite reports it ("database disk image is
# malformed"; the token index out of step, which both engines also report as SQLITE_CORRUPT, says
# what to do itself).
_CORRUPT = 11
_CORRUPT_HINT = (
    "the database file is damaged (a copy over a store whose -wal file was left beside it does "
    "this): check it with the sqlite3 shell's PRAGMA integrity_check, and put a backup back with "
    "'pyevidence restore' (docs/cli.md, \"Backup and restore\")"
)


def from_sqlite(code: int, message: str, *, writing: bool = False, waited: bool = True) -> StoreError:
    """The exception both engines raise for an SQLite failure with result ``code``.
    ``writing``: the failed call was a write (put, put_many, forget), which SQLite
    has rolled back, so the message can say nothing was written. ``waited``: the
    connection has pyevidence's busy timeout (the file engines'; not a cluster's)."""
    if code & 0xFF in _DISK_TROUBLE:
        message += ("; nothing was written; " if writing else "; ") + _DISK_HINT
    elif code == _SQLITE_BUSY and waited:
        message += ("; nothing was written; " if writing else "; ") + _LOCK_HINT
    elif code & 0xFF == _CORRUPT and "malformed" in message:  # SQLite's words, not the index's
        message += "; " + _CORRUPT_HINT
    return (SchemaError if code & 0xFF in _NOT_A_DATABASE else StoreError)(message)
