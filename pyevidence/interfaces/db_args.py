"""What a command's --db may name: the one rule of every command that takes a database."""

from __future__ import annotations

import os

from ..storage import paths


def database(path: str, *, field: str = "--db") -> str:
    """A database file: never ':memory:', an empty name (an unset shell variable) or a
    file: URI, which would acknowledge writes and keep nothing (pyevidence/storage/paths.py)."""
    if paths.is_cluster_url(path):
        return path  # a cluster: the engine checks its address
    paths.checked_name(path, field=field, allow_memory=False)
    return path


def existing(path: str, *, field: str = "--db") -> str:
    """A database that is there already: the commands that read, forget or serve never create
    one, so a typo must not look like 'no evidence'. An empty file is no database either."""
    if paths.is_cluster_url(path):
        return path  # a cluster: the engine says whether it can be reached
    if not os.path.lexists(database(path, field=field)):
        raise FileNotFoundError(f"no database at {path}; create one with 'pyevidence put'")
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        # SQLite would take it for a new database and write a schema into it. (A store is never
        # an empty file: SQLite writes the first page before the first write goes to a -wal file.)
        raise FileNotFoundError(
            f"{path} is an empty file, not a pyevidence database; create one with 'pyevidence put'"
        )
    return path
