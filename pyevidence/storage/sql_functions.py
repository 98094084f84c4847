"""The SQL functions schema.sql's triggers call, as the Python engine registers them.

The native engine and the loadable extension register the C copies
(csrc/evidence_hash.c, csrc/evidence_utf8.c, csrc/evidence_ext.c); the stdlib sqlite3 connection of
the Python engine gets these. tests/test_versions.py and tests/test_raw_sql.py
prove each pair equal. A raw-SQL writer on a stdlib connection calls
``register(conn)`` to write through evidence_put.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from ..core.hashing import sha256_fields
from ..core.tokens import token_set
from .index import docsets


def utf8_valid(value: bytes | str | int | float | None) -> int | None:
    """evidence_utf8_valid(x): 1 when the bytes of ``x`` are well-formed UTF-8, 0 when
    not, None for NULL. A str arrives already decoded (valid), a number is ASCII text."""
    if value is None:
        return None
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return 0
    return 1


def not_vouching() -> int:
    """evidence_writer_vouches() of a raw-SQL connection: 0, every write is checked in full
    (schema.sql). The engines' connections register their own (see PythonEngine)."""
    return 0


def token_list(text: object) -> str | None:
    """evidence_token_list(text): the distinct tokens of ``text`` (the token rule) as a
    JSON array, ascending; NULL for NULL. The index's triggers read it with json_each."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"evidence_token_list() takes text, not {type(text).__name__}")
    return "[" + ",".join(f'"{token}"' for token in sorted(token_set(text))) + "]"


def hash_bytes(value: object) -> bytes | None:
    """evidence_hash_bytes(hex): the 32 bytes that a value of evidence_sha256() (64
    lowercase hex digits) stands for, as schema.sql stores hashes; NULL for NULL."""
    if value is None:
        return None
    if isinstance(value, str) and len(value) == 64 and _LOWER_HEX.fullmatch(value):
        return bytes.fromhex(value)
    raise ValueError("evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())")


_LOWER_HEX = re.compile("[0-9a-f]{64}")


# sqlite3 reports any exception a function raises as "user-defined function raised
# exception", a KeyboardInterrupt too: Ctrl-C during a statement would become an error the
# caller goes on after. A function registered with relay_interrupts notes such an exception
# here (SQLite calls it in the caller's thread), and the Python engine raises it again in
# place of sqlite3's error (python_engine._sqlite_errors).
interrupted = threading.local()


def relaying(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` as SQL calls it, noting a KeyboardInterrupt or SystemExit in ``interrupted``."""

    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except Exception:
            raise
        except BaseException as exc:
            interrupted.exc = exc
            raise

    return call


def clear_interrupt() -> None:
    """Forgets any interrupt noted before: called as a block of SQL the caller watches begins."""
    interrupted.exc = None


def take_interrupt() -> BaseException | None:
    """The KeyboardInterrupt or SystemExit a function met since clear_interrupt(), taken: the
    exception to raise in place of sqlite3's "user-defined function raised exception"."""
    found: BaseException | None = getattr(interrupted, "exc", None)
    interrupted.exc = None
    return found


def register(conn: sqlite3.Connection, *, relay_interrupts: bool = False) -> None:
    """Registers evidence_sha256(), evidence_hash_bytes(), evidence_utf8_valid(),
    evidence_writer_vouches(), and the token index's evidence_token_list() and
    evidence_docset_*() on a stdlib connection."""
    wrap = relaying if relay_interrupts else (lambda function: function)
    conn.create_function("evidence_sha256", -1, wrap(sha256_fields), deterministic=True)
    conn.create_function("evidence_hash_bytes", 1, wrap(hash_bytes), deterministic=True)
    conn.create_function("evidence_utf8_valid", 1, wrap(utf8_valid), deterministic=True)
    conn.create_function("evidence_writer_vouches", 0, wrap(not_vouching))
    conn.create_function("evidence_token_list", 1, wrap(token_list), deterministic=True)
    conn.create_function("evidence_docset_with", 2, wrap(docsets.with_doc), deterministic=True)
    conn.create_function("evidence_docset_without", 2, wrap(docsets.without_doc), deterministic=True)
    conn.create_function("evidence_docset_union", 2, wrap(docsets.union), deterministic=True)
