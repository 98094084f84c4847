"""What a fork does to the stores a process has open, and what pyevidence refuses after one.

SQLite's rule: a connection must not cross a fork. The child gets a copy of the parent's
connections (their caches, their mutexes, possibly held by a thread that does not exist in
the child, and their file descriptors) and of SQLite's per-process table of the POSIX locks
the process holds on each file (unixInodeInfo, keyed by device and inode), but not the locks
themselves: POSIX locks belong to the process that took them. So in the child:

- a store that was open at the fork is *inherited*: every call on it raises StoreError at
  once, before the store's lock (another thread may have held it at the fork) is taken, and
  nothing ever calls into its connection again, not close(), not garbage collection, not
  the interpreter's shutdown: the store is kept referenced for the child's lifetime (and
  one reference is leaked, so that shutdown never frees it);
- a new store on a file a store had open at the fork is refused: SQLite would read the
  copied lock table and believe it holds locks it does not, and write over the parent's
  writes. Other files, ``:memory:`` and cluster URLs open as usual.

The grandchildren of a fork inherit both rules. The cost outside a fork is one attribute
test per call (EvidenceStore._usable) and one stat() per file opened.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Protocol

from .core.errors import StoreError

FileId = tuple[int, int]  # (st_dev, st_ino): what SQLite keys its lock table by


class Tracked(Protocol):
    """What this module reads and sets on an EvidenceStore."""

    _pid: int  # the process that opened it
    _target: str | None  # its file's absolute path; None for :memory: and a cluster
    _file: FileId | None  # its file's identity once open
    _inherited_from: int | None  # set in a child of a fork: the process that opened it


_open: weakref.WeakSet[Any] = weakref.WeakSet()  # the stores open (or opening) in this process
# Files a store had open when this process (or an ancestor of it since) was forked: the pid
# of the process that had it open. Copied to the grandchildren by the fork itself.
_held: dict[FileId, int] = {}
# The stores this process inherited: referenced until the process ends, so that no close,
# no collection and no shutdown ever frees their connection here.
_kept: list[Any] = []
_incref: Any = None  # ctypes.pythonapi.Py_IncRef, found before any fork (importing after one may hang)


def file_id(target: str) -> FileId | None:
    """The identity of the file ``target`` names (symlinks followed), or None when there is none."""
    try:
        st = os.stat(target)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def track(store: Tracked) -> None:
    """Called before the store's connection opens: from then on a fork marks it inherited."""
    global _incref
    if _incref is None:
        try:
            import ctypes

            def incref(obj: object, incref: Any = ctypes.pythonapi.Py_IncRef) -> None:
                incref(ctypes.py_object(obj))

            _incref = incref
        except (ImportError, AttributeError, OSError):  # no ctypes: _kept alone holds them
            _incref = False
    _open.add(store)


def untrack(store: Tracked) -> None:
    """Called once the store's connection is closed (or failed to open)."""
    _open.discard(store)


def refuse_held(shown: str, target: str) -> None:
    """Raises StoreError when ``target`` is a file a store had open at a fork of this process."""
    if not _held:  # the usual case: no fork since a store was open
        return
    parent = _held.get(file_id(target) or (-1, -1))
    if parent is not None:
        raise StoreError(
            f"opening {shown} refused: this process (pid {os.getpid()}) was forked from process "
            f"{parent} while a store had this file open there, and SQLite's record of the locks "
            "held on a file is per process and was copied by the fork: here it names locks this "
            "process does not hold, so a connection opened here could write over the other "
            "process's writes and corrupt the file. Open stores only after forking (with "
            "multiprocessing: the 'spawn' or 'forkserver' start method), or close every store on "
            "this file before forking"
        )


def inherited(shown: str, opened_in: int) -> StoreError:
    """The error every call on a store inherited by a fork raises."""
    return StoreError(
        f"this EvidenceStore on {shown} was opened in process {opened_in}, and this process "
        f"(pid {os.getpid()}) is a fork of it; SQLite connections do not survive a fork, so it "
        "cannot be used here (nothing was done). Open stores only after forking: with "
        "multiprocessing, use the 'spawn' or 'forkserver' start method and open a new "
        "EvidenceStore in the worker; with os.fork(), close the parent's stores on that file "
        "before forking and open one in the child"
    )


def _after_fork_in_child() -> None:
    for store in list(_open):
        _open.discard(store)
        _kept.append(store)
        if _incref:
            _incref(store)  # never freed, not even by the interpreter's shutdown
        if store._target is not None:
            file = store._file or file_id(store._target)
            if file is not None:
                _held.setdefault(file, store._pid)
        store._inherited_from = store._pid


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
