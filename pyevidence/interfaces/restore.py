"""``pyevidence restore``: a backup put back in place of a store, through SQLite; and the
backup of an older release's store, copied as it is.

Copying a backup over the store's file is not a restore. A process that ended without
closing the store (a crash, kill -9) leaves a -wal file beside it, and SQLite replays that
log onto whatever file it finds under the name: the pages of the old store land in the
backup's, and the store is damaged for good. Here SQLite's backup API copies the backup
page by page into the store through a connection of its own, which first replays the
store's own log onto the store it belongs to, then writes every page of the backup, in one
write transaction; the log is then checkpointed and cut to zero bytes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager

from ..core.errors import EvidenceError, StoreError, UpgradeNeeded, ValidationError
from ..core.limits import ANY_SIZE
from ..core.strict_json import shown
from ..storage import paths, schema, versions
from ..store import EvidenceStore


def restore(backup: str, target: str) -> None:
    """Puts the pyevidence store in the file ``backup`` in place of the store ``target``
    (created if missing). Both are checked first: ``backup`` must open as a pyevidence store
    and pass SQLite's quick_check and, when it is of this release's schema, ``verify`` of every
    tenant's chain; ``target``, if it exists, must open as a pyevidence store of any release,
    so that a mistyped path does not overwrite another database. Nothing is changed when
    either is refused, and a ``target`` the restore created is removed again if it fails."""
    if not os.path.isfile(backup):  # bad input, exit 2, as for any file named that is not there
        raise ValidationError("from", f"no backup file at {backup}; name the backup file")
    if os.path.exists(target) and os.path.samefile(backup, target):
        raise ValidationError("from", f"{backup} is the store itself; name the backup file")
    if os.path.lexists(target) and not os.path.isfile(target):
        raise ValidationError("db", f"{target} is not a file; name the store's database file")
    with _no_new_sidecars(backup), _claimed_if_new(target) as claim:
        _checked_backup(backup, target)
        if not claim.new:
            _restorable(target)
            _same_page_size(backup, target)
        elif not claim.untouched():
            claim.created = None  # another program's file now: left as it is
            raise StoreError(
                f"another program wrote to {target} while the backup was checked; nothing was "
                "restored, and what it wrote is left as it is"
            )
        _copy(backup, target)
    try:
        paths.check_schema(target)
    except UpgradeNeeded:
        pass  # a backup of an older release: the next open that writes upgrades it


def copy_as_it_is(db: str, out: str) -> None:
    """``pyevidence backup`` of a store of an older release: SQLite's backup API from a
    read-only connection, so the store is not upgraded on the way (the backup is what a
    restore before an upgrade needs). ``out`` is created as store.backup() creates it."""
    source_uri = paths.DatabasePath(*paths.checked_name(db, field="db", allow_memory=False)).read_only_uri()
    with paths.new_file(out) as target:
        try:
            with (
                closing(sqlite3.connect(source_uri, uri=True)) as source,
                closing(sqlite3.connect(target)) as copy,
            ):
                source.backup(copy)
        except sqlite3.Error as exc:
            raise StoreError(f"backup failed ({exc}); nothing was written to {out}") from None


class _Claim:
    """The target of a restore: ``new`` when the restore created it (empty, exclusively)."""

    def __init__(self, target: str, created: os.stat_result | None) -> None:
        self.target, self.created = target, created

    @property
    def new(self) -> bool:
        return self.created is not None

    def ours(self) -> bool:
        """Whether the path still holds the file the restore created."""
        return self.created is not None and paths.is_same_file(self.target, self.created)

    def untouched(self) -> bool:
        """Whether the file created is still there and empty: no other program wrote to it."""
        return self.ours() and os.path.getsize(self.target) == 0


@contextmanager
def _claimed_if_new(target: str) -> Iterator[_Claim]:
    """A new ``target`` is created empty at once, exclusively (O_EXCL, never through a
    symlink), so that no file another program puts there while the backup is checked is
    overwritten. If the restore fails, the file it created goes again, with the -wal, -shm
    and -journal beside it that were not there before."""
    if os.path.lexists(target):
        yield _Claim(target, None)
        return
    try:
        claim = _Claim(target, paths.create_exclusively(target))
    except FileExistsError:
        raise ValidationError("db", f"{target} appeared as the restore began; nothing was restored") from None
    except FileNotFoundError:
        directory = os.path.dirname(os.path.abspath(target))
        reason = f"cannot create {target}: the directory {directory} does not exist"
        raise ValidationError("db", reason) from None
    except OSError as exc:
        raise StoreError(f"cannot create {target}: {exc.strerror or exc}") from None
    sidecars = [f"{target}{end}" for end in paths.SIDECAR_SUFFIXES if not os.path.lexists(f"{target}{end}")]
    try:
        yield claim
    except BaseException:
        if claim.ours():
            for path in (target, *sidecars):
                try:
                    os.remove(path)
                except OSError:
                    pass  # not there
        raise


def _checked_backup(backup: str, target: str) -> None:
    """``backup`` is a pyevidence store that SQLite's quick_check finds whole and, if it is of
    this release's schema, whose every tenant's chain verifies (a damaged text breaks its hash);
    else ValidationError, nothing changed. A backup of an older release is checked by SQLite
    only: its chain is verified once the store is upgraded (``pyevidence verify``)."""
    unchanged = f"nothing was restored and {target} is unchanged"
    if os.path.getsize(backup) == 0:
        raise ValidationError("from", f"{backup} is an empty file, not a backup; {unchanged}")
    try:  # the backup's records are checked by their hashes, not by this machine's Limits
        store: EvidenceStore | None = EvidenceStore(backup, read_only=True, limits=ANY_SIZE)
    except UpgradeNeeded:
        store = None
    except EvidenceError as exc:
        raise ValidationError(
            "from", f"{backup} does not open as a pyevidence store ({exc}); {unchanged}"
        ) from None
    try:
        with closing(sqlite3.connect(backup)) as conn:
            problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
            tenants = [] if store is None else [row[0] for row in conn.execute(versions.TENANTS_SQL)]
    except sqlite3.Error as exc:
        problems = [str(exc)]
    try:
        if problems != ["ok"]:
            raise ValidationError(
                "from", f"{backup} is damaged (SQLite's quick_check: {'; '.join(problems)}); {unchanged}"
            )
        for tenant in tenants:
            found = _verified(store, tenant)
            if found is not None:
                raise ValidationError("from", f"{backup} is damaged ({found}); {unchanged}")
    finally:
        if store is not None:
            store.close()


def _verified(store: EvidenceStore | None, tenant: str) -> str | None:
    """None when ``tenant``'s chain in the backup verifies; else what is wrong with it."""
    assert store is not None
    try:
        checked = store.verify(tenant=tenant)
    except EvidenceError as exc:
        return f"tenant {shown(tenant)}: {exc}"
    if checked.ok or checked.broken is None:
        return None
    where = f", record {shown(checked.broken.record_id)}" if checked.broken.record_id is not None else ""
    return f"tenant {shown(tenant)}{where}: {checked.broken.reason}"


def _same_page_size(backup: str, target: str) -> None:
    """SQLite cannot change the page size of a database in WAL mode, as a store is, so a
    backup of another page size cannot be copied into ``target``: say so, and how instead."""
    sizes = []
    for path in (backup, target):
        try:
            with closing(sqlite3.connect(path, timeout=schema.BUSY_TIMEOUT_MS / 1000)) as conn:
                sizes.append(int(conn.execute("PRAGMA page_size").fetchone()[0]))
        except sqlite3.Error:
            return  # the copy reports what is wrong
    if sizes[0] != sizes[1]:
        raise ValidationError(
            "db",
            f"{target} has pages of {sizes[1]} bytes and {backup} of {sizes[0]}; SQLite cannot change "
            f"the page size of a store in WAL mode, so nothing was restored: restore into a new file "
            f"(pyevidence restore --db NEW --from {backup}), then, with no process using the store, "
            f"move NEW over {target} and remove {target}-wal and {target}-shm",
        )


def _copy(backup: str, target: str) -> None:
    # The backup's connection closes last, so its -wal and -shm go with it.
    with (
        closing(_connect(backup, backup, target)) as source,
        closing(_connect(target, backup, target)) as store,
    ):
        try:
            source.backup(store, progress=_gives_up_when_locked(backup, target))
        except sqlite3.Error as exc:  # the backup's one write transaction rolled back
            raise StoreError(
                f"restoring {backup} into {target} failed ({exc}); {target} is unchanged"
            ) from None
        try:  # the old pages out of the log too, holding up no writer (as forget does)
            store.execute(schema.ERASURE_NO_WAIT_SQL)
            store.execute(schema.ERASURE_CHECKPOINT_SQL)
        except sqlite3.Error:
            pass  # restored all the same; a later checkpoint empties the log


def _connect(path: str, backup: str, target: str) -> sqlite3.Connection:
    try:
        return sqlite3.connect(path, timeout=schema.BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:
        raise StoreError(f"restoring {backup} into {target} failed: cannot open {path} ({exc})") from None


@contextmanager
def _no_new_sidecars(backup: str) -> Iterator[None]:
    """If the restore is refused after the check opened ``backup`` (read-only, so its close
    leaves them), removes the -wal and -shm files that were not beside it before; a restore
    that goes on removes them by its own connection's close."""
    new = [f"{backup}{suffix}" for suffix in ("-wal", "-shm") if not os.path.lexists(f"{backup}{suffix}")]
    try:
        yield
    except BaseException:
        for path in new:
            if os.path.isfile(path) and (path.endswith("-shm") or os.path.getsize(path) == 0):
                os.remove(path)
        raise


def _gives_up_when_locked(backup: str, target: str) -> Callable[[int, int, int], None]:
    """sqlite3's backup() retries a locked target for ever; this ends it (nothing copied)
    once the target has stayed locked past the busy timeout, as any other write would."""
    deadline = time.monotonic() + schema.BUSY_TIMEOUT_MS / 1000

    def progress(status: int, remaining: int, total: int) -> None:
        if status in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) and time.monotonic() >= deadline:
            raise StoreError(
                f"restoring {backup} into {target} failed (database is locked: another connection "
                f"held its lock for longer than the busy timeout of 5 s); {target} is unchanged: stop "
                "the programs that use it and retry"
            )

    return progress


def _restorable(target: str) -> None:
    """``target`` is a pyevidence store (of this release or an older one), or ValidationError
    saying how to restore over what it is instead."""
    try:
        paths.check_schema(target)  # read without leaving a -wal or -shm beside it
    except UpgradeNeeded:  # an older release's store: the backup replaces it whole
        return
    except EvidenceError as exc:
        raise ValidationError(
            "db",
            f"{target} does not open as a pyevidence store ({exc}), so it is not overwritten; if it is "
            f"the damaged store to replace, stop every process that uses it, move {target} and its "
            f"-wal and -shm files away, and restore into {target} again",
        ) from None
