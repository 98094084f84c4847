"""Damage to a store that only raw SQL with its checks off can do, for the tests of
check_index and of an index out of step."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pyevidence.storage import sql_functions


def renumber(
    conn: sqlite3.Connection, tenant: str, record_id: str, doc: int, next_doc: int | None = None
) -> None:
    """Gives a current row the document number ``doc``, then its scope next_doc ``next_doc``
    (None: as it was). evidence_current's CHECK bounds a number, and its triggers let a number
    change only in a scope the index does not hold, so the checks go off and the scope's row
    goes out and comes back. ``conn`` has pyevidence's SQL functions: the triggers call them."""
    conn.execute("PRAGMA ignore_check_constraints = 1")
    try:
        ((revision,),) = conn.execute(
            "SELECT revision FROM evidence_current WHERE tenant = ? AND record_id = ?", (tenant, record_id)
        )
        (scope,) = conn.execute(
            "SELECT tenant, revision, scope, docs, next_doc FROM evidence_index_scopes"
            " WHERE tenant = ? AND revision = ?",
            (tenant, revision),
        ).fetchall()
        conn.execute(
            "DELETE FROM evidence_index_scopes WHERE tenant = ? AND revision = ?", (tenant, revision)
        )
        conn.execute(
            "UPDATE evidence_current SET doc = ? WHERE tenant = ? AND record_id = ?", (doc, tenant, record_id)
        )
        conn.execute(
            "INSERT INTO evidence_index_scopes VALUES (?, ?, ?, ?, ?)",
            (*scope[:4], scope[4] if next_doc is None else next_doc),
        )
    finally:
        conn.execute("PRAGMA ignore_check_constraints = 0")


def renumber_file(path: Path, tenant: str, record_id: str, doc: int, next_doc: int | None = None) -> None:
    """renumber() on a connection of its own, committed."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        sql_functions.register(conn)
        conn.execute("BEGIN")
        renumber(conn, tenant, record_id, doc, next_doc)
        conn.execute("COMMIT")
    finally:
        conn.close()
