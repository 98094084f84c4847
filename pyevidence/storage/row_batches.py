"""One INSERT for many rows: the Python engine's writer, ROWS_A_STATEMENT rows a statement.

``executemany`` steps its statement once a row, and each step has a price of its own in
Python's sqlite3 (fetching the row, a reset, a call into SQLite) of about half a
microsecond: a third of the time of an upsert of a posting. The same statement with
ROWS_A_STATEMENT rows in its VALUES clause writes the same rows, in the same order, with
the same conflicts resolved row by row (an upsert's DO UPDATE sees the rows before it in
the same statement), for a fiftieth of those steps (docs/performance.md, "Many rows a
statement"). The last rows of a batch, fewer than ROWS_A_STATEMENT, go through
``executemany``: every statement text stays one of two, and so cached.

    VERSIONS = RowBatches("INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a) DO NOTHING")
    VERSIONS.run(conn, rows)
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from itertools import chain
from typing import Any

# 50 rows of 12 values (a version) bind 600 variables: under the 999 that SQLite's default
# build allowed before 3.32 (32,766 since). A connection whose limit is lower
# (SQLITE_LIMIT_VARIABLE_NUMBER) gets its rows through executemany. 20 rows a statement gave
# nearly the same gain, 100 little more.
ROWS_A_STATEMENT = 50

# "VALUES (" then one row's values: placeholders and quoted literals, no parenthesis.
_ONE_ROW = re.compile(r" VALUES (\((?:\?|'[a-z_]*'|, )+\))")


class RowBatches:
    """An ``INSERT ... VALUES (one row) [tail]`` statement, run for many rows at a time."""

    def __init__(self, sql: str, rows: int = ROWS_A_STATEMENT) -> None:
        found = _ONE_ROW.search(sql)
        if found is None or rows < 1:
            raise ValueError(f"not an INSERT of one row of placeholders: {sql!r}")
        self.sql = sql
        self.rows = rows
        self.width = found.group(1).count("?")  # the values a row binds
        many = ", ".join([found.group(1)] * rows)
        self.many_sql = f"{sql[: found.start(1)]}{many}{sql[found.end(1) :]}"

    def run(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> None:
        """Runs the statement for each of ``rows`` in order, as ``executemany`` would."""
        width = self.width
        # Flattened, a row of the wrong length would shift every value after it into the
        # wrong column; executemany refuses one, and so does this.
        for row in rows:
            if len(row) != width:
                raise ValueError(
                    f"a row of {len(row)} values for a statement that binds {width}: {self.sql!r}"
                )
        step = self.rows
        if step * width > conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER):
            step = len(rows) + 1  # all of them through executemany
        whole = len(rows) - len(rows) % step
        if whole:
            execute, many_sql, flat = conn.execute, self.many_sql, chain.from_iterable
            for start in range(0, whole, step):
                execute(many_sql, list(flat(rows[start : start + step])))
        if whole < len(rows):
            conn.executemany(self.sql, rows[whole:])
