"""What a command's --db may name: the one rule of every command that takes a database."""

from __future__ import annotations

import os

from ..core.errors import NoSchema, StoreError, UpgradeNeeded
from ..storage import paths


def database(path: str, *, field: str = "--db") -> str:
    """A database file: never ':memory:', an empty name (an unset shell variable) or a
    file: URI, which would acknowledge writes and keep nothing (pyevidence/storage/paths.py)."""
    if paths.is_cluster_url(path):
        return path  # a cluster: the engine checks its address
    paths.checked_name(path, field=field, allow_memory=False)
    return path


def writable(path: str) -> str:
    """For the commands that write (put, forget, reindex, import): a file this user cannot write
    is refused with the command line's advice (the store's own names read_only=True, which is
    the Python API's)."""
    if not paths.is_cluster_url(path) and os.path.isfile(path) and not os.access(path, os.W_OK):
        raise StoreError(
            f"opening {path} failed: this user cannot write to it; let this user write to it "
            "(retrieve, history, get-version, verify, check and export read it as it is)"
        )
    return path


def existing(path: str, *, field: str = "--db") -> str:
    """A database that is there already: the commands that read, forget or serve never create
    one, so a typo must not look like 'no evidence'. An empty file is no database either."""
    if paths.is_cluster_url(path):
        _on_the_cluster(path)
        return path
    if not os.path.lexists(database(path, field=field)):
        raise FileNotFoundError(f"no database at {path}; create one with 'pyevidence put'")
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        # SQLite would take it for a new database and write a schema into it. (A store is never
        # an empty file: SQLite writes the first page before the first write goes to a -wal file.)
        raise FileNotFoundError(
            f"{path} is an empty file, not a pyevidence database; create one with 'pyevidence put'"
        )
    return path


def _on_the_cluster(url: str) -> None:
    """A cluster creates a database on first use, so retrieve, forget or check would create a
    mistyped one and answer from it: look first, read-only, whether the database has a schema.
    (An unreachable cluster is reported here too, as the engine reports it.)"""
    from ..storage.engines.cluster_engine import parse_url
    from ..store import EvidenceStore

    try:
        EvidenceStore(url, read_only=True).close()
    except NoSchema:
        raise FileNotFoundError(
            f"no database {parse_url(url)[1]!r} on the cluster at {url}; create one with "
            "'pyevidence put' or 'pyevidence import' (or check the name)"
        ) from None
    except UpgradeNeeded:
        pass  # there, of an older version: the command's own open upgrades it or says why not
