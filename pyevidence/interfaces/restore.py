"""``pyevidence restore``: a backup put back in place of a store, through SQLite.

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
from ..storage import schema
from ..store import EvidenceStore


def restore(backup: str, target: str) -> None:
    """Puts the pyevidence store in the file ``backup`` in place of the store ``target``
    (created if missing). Both are checked first: ``backup`` must open as a pyevidence store
    of this release's schema, and ``target``, if it exists, as a pyevidence store of any
    release, so that a mistyped path does not overwrite another database; nothing is changed
    when either is refused."""
    if not os.path.isfile(backup):  # bad input, exit 2, as for any file named that is not there
        raise ValidationError("from", f"no backup file at {backup}; name the backup file")
    if os.path.exists(target) and os.path.samefile(backup, target):
        raise ValidationError("from", f"{backup} is the store itself; name the backup file")
    with _no_new_sidecars(backup):
        with EvidenceStore(backup, read_only=True):
            pass  # a pyevidence store, readable as it is: not an older release's, not damaged
        if os.path.exists(target):
            _restorable(target)
        _copy(backup, target)
    with EvidenceStore(target, read_only=True):
        pass


def _copy(backup: str, target: str) -> None:
    # The backup's connection closes last, so its -wal and -shm go with it.
    with (
        closing(sqlite3.connect(backup)) as source,
        closing(sqlite3.connect(target, timeout=schema.BUSY_TIMEOUT_MS / 1000)) as store,
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
        EvidenceStore(target, read_only=True).close()
    except UpgradeNeeded:  # an older release's store: the backup replaces it whole
        return
    except EvidenceError as exc:
        raise ValidationError(
            "db",
            f"{target} does not open as a pyevidence store ({exc}), so it is not overwritten; if it is "
            f"the damaged store to replace, stop every process that uses it, move {target} and its "
            f"-wal and -shm files away, and restore into {target} again",
        ) from None
