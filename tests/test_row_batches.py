"""RowBatches: many rows a statement write exactly what executemany writes, row by row."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyevidence.storage import schema
from pyevidence.storage.index import maintain
from pyevidence.storage.row_batches import ROWS_A_STATEMENT, RowBatches

# An upsert whose result depends on the order of the rows, conflicts within one statement included.
_TABLE = "CREATE TABLE t (k INTEGER PRIMARY KEY, tag TEXT NOT NULL, v BLOB NOT NULL, n INTEGER NOT NULL)"
_UPSERT = (
    "INSERT INTO t (k, tag, v, n) VALUES (?, 'x', ?, ?)"
    " ON CONFLICT (k) DO UPDATE SET v = CAST(v || excluded.v AS BLOB), n = n * 3 + excluded.n"
)

rows = st.lists(
    st.tuples(st.integers(0, 30), st.binary(max_size=3), st.integers(-5, 5)),
    max_size=3 * ROWS_A_STATEMENT + 7,
)


def _table_after(write: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_TABLE)
    write(conn)  # type: ignore[operator]
    return conn.execute("SELECT * FROM t ORDER BY k").fetchall()


@given(rows=rows, size=st.sampled_from([1, 2, 7, ROWS_A_STATEMENT]))
def test_run_writes_what_executemany_writes(rows: list[tuple[int, bytes, int]], size: int) -> None:
    batches = RowBatches(_UPSERT, size)
    assert _table_after(lambda conn: batches.run(conn, rows)) == _table_after(
        lambda conn: conn.executemany(_UPSERT, rows)
    )


@pytest.mark.parametrize("count", [0, 1, ROWS_A_STATEMENT - 1, ROWS_A_STATEMENT, 2 * ROWS_A_STATEMENT + 1])
def test_every_row_is_written_once_whatever_the_count(count: int) -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_TABLE)
    RowBatches(_UPSERT).run(conn, [(k, b"a", 1) for k in range(count)])
    assert conn.execute("SELECT count(*), coalesce(sum(n), 0) FROM t").fetchone() == (count, count)


def test_a_statement_is_many_copies_of_its_one_row() -> None:
    batches = RowBatches("INSERT INTO t (a, b) VALUES (?, 'put') ON CONFLICT (a) DO NOTHING", 3)
    assert batches.many_sql == (
        "INSERT INTO t (a, b) VALUES (?, 'put'), (?, 'put'), (?, 'put') ON CONFLICT (a) DO NOTHING"
    )


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t (a) SELECT ?",
        "INSERT INTO t (a) VALUES (coalesce(?, 1))",  # a value with parentheses of its own
        "DELETE FROM t WHERE a = ?",
    ],
)
def test_only_an_insert_of_one_plain_row_is_taken(sql: str) -> None:
    with pytest.raises(ValueError, match="not an INSERT of one row"):
        RowBatches(sql)


def test_the_writers_statements_are_taken() -> None:
    """The statements the Python writer runs this way parse as one row each (else import fails)."""
    for sql in (
        schema.VERSION_APPEND_SQL,
        schema.CURRENT_UPSERT_SQL,
        maintain._POSTING_APPEND_SQL,
        maintain._POSTING_WRITE_SQL,
        maintain._EXPIRY_ADD_SQL,
    ):
        many = RowBatches(sql, 2).many_sql
        assert many.count("VALUES (") == 1 and many.count("), (") == 1


def test_a_row_of_the_wrong_length_is_refused_before_anything_is_written() -> None:
    """Flattened, a short row and a long one would shift values into other columns unseen."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_TABLE)
    rows = [(k, b"a", 1) for k in range(ROWS_A_STATEMENT)]
    rows[3], rows[4] = (3, b"a"), (4, b"a", 1, 9)
    with pytest.raises(ValueError, match="a row of 2 values for a statement that binds 3"):
        RowBatches(_UPSERT).run(conn, rows)
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_connection_that_binds_fewer_variables_gets_its_rows_one_at_a_time() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_TABLE)
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 3 * ROWS_A_STATEMENT - 1)
    rows = [(k % 7, bytes([k]), k) for k in range(2 * ROWS_A_STATEMENT + 3)]
    RowBatches(_UPSERT).run(conn, rows)
    assert conn.execute("SELECT * FROM t ORDER BY k").fetchall() == _table_after(
        lambda other: other.executemany(_UPSERT, rows)
    )
