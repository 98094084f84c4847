"""Building the token index from evidence alone: the rebuild behind `pyevidence reindex`
and the upgrade to schema version 5 (docs/token-index.md).

The generic build runs the schema's own SQL path, so it is right on any engine whose
connection has the index's SQL functions: the index's tables are emptied, every scope's
current rows are numbered 0..n-1 in (expires_at, record_id) order (RENUMBER_SQL, which
writes evidence_current.doc), then every current row is entered through the view
evidence_index_add, in evidence_current's key order, which is then (tenant, revision,
expires_at, record_id) order too (INDEX_SPEC's rule: scopes come in (tenant, revision)
order). It goes a batch of rows at a time, keyset-paginated over (tenant, revision, doc),
so the caller can show progress; an engine may replace it with a faster
native build that writes the same rows. It runs inside the caller's transaction and
never commits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ...core.records import IndexRebuild

# run(sql, params): one statement with numbered parameters (?1, ?2, ...); its rows.
Run = Callable[[str, Sequence[Any]], Sequence[Sequence[Any]]]
# progress(done, total): current rows entered so far, of all of them.
Progress = Callable[[int, int], None]

BATCH_ROWS = 10_000
INDEX_TABLES = (
    "evidence_index_scopes",
    "evidence_index_postings",
    "evidence_index_expiry",
)
# Every scope's current rows numbered 0, 1, ... in (expires_at, record_id) order, once the
# index is empty (schema.sql allows a change of the number alone then). Only
# the rows whose number changes are written. The native rebuild runs the same text
# (csrc/evidence_index_write.c; tests/test_index_rebuild.py keeps them equal).
RENUMBER_SQL = (
    "UPDATE evidence_current SET doc = n.doc FROM (SELECT tenant, record_id, row_number() OVER"
    " (PARTITION BY tenant, revision ORDER BY expires_at, record_id) - 1 AS doc FROM evidence_current) AS n"
    " WHERE evidence_current.tenant = n.tenant AND evidence_current.record_id = n.record_id"
    " AND evidence_current.doc <> n.doc"
)
_KEY = "tenant, revision, doc"
_C_KEY = "c.tenant, c.revision, c.doc"
_ENTER = (
    "INSERT INTO evidence_index_add (tenant, revision, expires_at, record_id, doc, body)"
    " SELECT c.tenant, c.revision, c.expires_at, c.record_id, c.doc, v.body"
    " FROM evidence_current AS c"
    " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
)

# The whole build as one script, without progress: for a caller that can only run SQL
# text (schema.py's upgrade on a connection no engine built, the cluster's nodes).
BUILD_SCRIPT = (
    "".join(f"DELETE FROM {table};\n" for table in INDEX_TABLES)
    + f"{RENUMBER_SQL};\n{_ENTER} ORDER BY {_C_KEY};\n"
)

# The last key of the next batch: the row BATCH rows on from the previous last key.
_FIRST_LAST_SQL = f"SELECT {_KEY} FROM evidence_current ORDER BY {_KEY} LIMIT 1 OFFSET ?1"
_NEXT_LAST_SQL = (
    f"SELECT {_KEY} FROM evidence_current WHERE ({_KEY}) > (?1, ?2, ?3) ORDER BY {_KEY} LIMIT 1 OFFSET ?4"
)
_ENTER_FIRST_SQL = f"{_ENTER} WHERE ({_C_KEY}) <= (?1, ?2, ?3) ORDER BY {_C_KEY}"
_ENTER_NEXT_SQL = f"{_ENTER} WHERE ({_C_KEY}) > (?1, ?2, ?3) AND ({_C_KEY}) <= (?4, ?5, ?6) ORDER BY {_C_KEY}"
_ENTER_REST_SQL = f"{_ENTER} WHERE ({_C_KEY}) > (?1, ?2, ?3) ORDER BY {_C_KEY}"
_ENTER_ALL_SQL = f"{_ENTER} ORDER BY {_C_KEY}"


def build(run: Run, progress: Progress | None = None, *, batch: int | None = None) -> IndexRebuild:
    """Empties the index and enters every current row again, ``batch`` rows (default
    BATCH_ROWS) per statement; returns what it holds now. ``progress`` is called with
    (0, total) first, then after each batch, last with (total, total)."""
    batch = BATCH_ROWS if batch is None else batch
    if batch < 1:
        raise ValueError(f"batch must be 1 or more rows, not {batch}")
    started = time.monotonic()
    for table in INDEX_TABLES:
        run(f"DELETE FROM {table}", ())
    run(RENUMBER_SQL, ())
    total = int(run("SELECT count(*) FROM evidence", ())[0][0])
    report = progress or (lambda done, total: None)
    report(0, total)
    done = 0
    last: tuple[Any, ...] | None = None
    while done < total:
        if last is None:
            found = run(_FIRST_LAST_SQL, (batch - 1,))
        else:
            found = run(_NEXT_LAST_SQL, (*last, batch - 1))
        if not found:  # the rest is less than a batch
            run(_ENTER_ALL_SQL if last is None else _ENTER_REST_SQL, () if last is None else last)
            done = total
        else:
            upto = tuple(found[0])
            if last is None:
                run(_ENTER_FIRST_SQL, upto)
            else:
                run(_ENTER_NEXT_SQL, (*last, *upto))
            last, done = upto, min(done + batch, total)
        report(done, total)
    return summary(run, time.monotonic() - started)


def summary(run: Run, seconds: float) -> IndexRebuild:
    """What the index holds: its scopes, its documents and its postings rows."""
    ((scopes, records, postings),) = run(
        "SELECT (SELECT count(*) FROM evidence_index_scopes),"
        " (SELECT coalesce(sum(docs), 0) FROM evidence_index_scopes),"
        " (SELECT count(*) FROM evidence_index_postings)",
        (),
    )
    return IndexRebuild(
        scopes=int(scopes), records=int(records), postings_rows=int(postings), seconds=round(seconds, 3)
    )
