"""The loadable SQLite extension shipped in this package, for hosts that can load one.

    import apsw, pyevidence
    conn = apsw.Connection("evidence.db")
    pyevidence.load(conn)
    conn.execute("SELECT token_overlap('queue lag', 'lag in the queue')")

The standard library's sqlite3 can load it only where Python was built with
extension loading (many builds, including macOS's system Python, are not).
Without it, use EvidenceStore(engine="native"), which registers the same
functions on its own connection.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path
from typing import Any

from .core.errors import EngineUnavailableError

ENTRY_POINT = "sqlite3_evidence_init"


def loadable_path() -> str:
    """The path of the compiled extension (``evidence.<suffix>`` in this package)."""
    here = Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / f"evidence{suffix}"
        if candidate.is_file():
            return str(candidate)
    raise EngineUnavailableError(
        "the loadable extension was not built in this installation; reinstall with a C "
        "compiler and the SQLite headers present (Debian/Ubuntu: apt-get install gcc "
        "libsqlite3-dev) and past pip's cache (pip install --no-cache-dir --force-reinstall), "
        "or build it with 'make ext'"
    )


def load(connection: Any) -> None:
    """Load the extension into an apsw or sqlite3 connection that allows it.

    Extension loading is switched on only for the call and off again after.
    """
    path = loadable_path()
    enable = getattr(connection, "enable_load_extension", None)
    if enable is None:
        raise EngineUnavailableError(
            f"{type(connection).__module__}.{type(connection).__name__} cannot load extensions "
            "(this Python's sqlite3 was built without it); use apsw, or "
            "EvidenceStore(path, engine='native') which needs no extension loading"
        )
    enable(True)
    try:
        connection.load_extension(path)
    finally:
        enable(False)
