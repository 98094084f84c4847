"""Reading a store's tables whole, for tests that compare two stores or one store before and
after: one helper, so that every such comparison reads the rows the same way."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from pyevidence.storage.index.rebuild import INDEX_TABLES


def table_rows(path: Path, tables: Iterable[str]) -> dict[str, list[tuple[object, ...]]]:
    """Every row of each table (or view), ordered by its first three columns."""
    conn = sqlite3.connect(path)
    try:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall() for table in tables}
    finally:
        conn.close()


# The document numbers, which evidence_current holds for the index (schema version 12).
DOCUMENTS = "(SELECT tenant, revision, doc, record_id FROM evidence_current)"


def index_rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """The token index's tables, and each current row's document number."""
    return table_rows(path, (*INDEX_TABLES, DOCUMENTS))
