"""What this installation can do: engines, SQLite versions, extension loading."""

from __future__ import annotations

import platform
import sqlite3
from typing import Any

from . import __version__
from .errors import EvidenceError
from .loadable import loadable_path
from .store import EvidenceStore


def report() -> dict[str, Any]:
    native_error = None
    native_sqlite = None
    try:
        with EvidenceStore(":memory:", engine="native") as store:
            native_sqlite = store.query("SELECT sqlite_version()")[0][0]
    except EvidenceError as exc:
        native_error = str(exc)
    try:
        extension: str | None = loadable_path()
    except EvidenceError:
        extension = None
    probe = sqlite3.connect(":memory:")
    can_load = hasattr(probe, "enable_load_extension")
    probe.close()
    with EvidenceStore(":memory:") as auto:
        auto_engine = auto.engine
    return {
        "pyevidence": __version__,
        "python": platform.python_version(),
        "engines": {
            "python": {"available": True, "sqlite_version": sqlite3.sqlite_version},
            "native": {
                "available": native_error is None,
                "sqlite_version": native_sqlite,
                **({"why_not": native_error} if native_error else {}),
            },
            "auto_chooses": auto_engine,
        },
        "loadable_extension": extension,
        "python_sqlite3_can_load_extensions": can_load,
    }
