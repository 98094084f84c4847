"""The Python engine's index writer: a batch of puts, grouped.

While PythonEngine._write vouches for its rows (evidence_writer_vouches() = 1), the
index triggers of schema.sql step aside and this module makes their changes instead:
for each record's final current row of the batch, in evidence's primary-key order,
"remove the old current row (keep its document number if it stays in its scope),
add the new one", exactly as INSERT INTO evidence_index_remove / evidence_index_add
would, one record after the other. The result is the same rows; the work is grouped:
each docset (scope, token, chunk) is read once and written once, each expiry count
(scope, level, bucket) once, each scope row once.

Why grouping gives the same rows: a document number belongs to one record only and
is never reused, so per docset the sequential steps come down to "the old set minus
the removed numbers, plus the added ones", and a docset's bytes depend on its set
only. Counts add up the same way. This holds for an index that is in step with
evidence (tests/test_index.py), which every writer keeps it.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from ...core.tokens import token_set
from . import docsets

LEVELS = 8  # expiry levels 0..7: expires_at >> (8 * level)
_BITS = docsets.CHUNK_BITS
_LOW = docsets.CHUNK_DOCS - 1
_LISTED = docsets.MAX_LISTED
_BIG_ENDIAN = sys.byteorder == "big"

# An old current row, by its (tenant, record_id). One statement per record: given an IN
# list, the planner scans the tenant's rows in primary-key order instead.
_OLD_ROW_SQL = "SELECT revision, expires_at, body FROM evidence WHERE tenant = ? AND record_id = ?"
_SCOPE_SQL = "SELECT scope, docs, next_doc FROM evidence_index_scopes WHERE tenant = ? AND revision = ?"
_MAX_SCOPE_SQL = "SELECT coalesce(max(scope), 0) FROM evidence_index_scopes"
_DOC_SQL = "SELECT doc FROM evidence_index_docs WHERE scope = ? AND record_id = ?"
_POSTINGS_SQL = (
    "SELECT token, docs FROM evidence_index_postings"
    " WHERE scope = ? AND chunk = ? AND token IN (SELECT value FROM json_each(?))"
)
_EXPIRY_SQL = (
    "SELECT bucket, rows FROM evidence_index_expiry"
    " WHERE scope = ? AND level = ? AND bucket IN (SELECT value FROM json_each(?))"
)


def old_rows(
    conn: sqlite3.Connection, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], tuple[Any, ...]]:
    """The current (revision, expires_at, body) of each (tenant, record_id) of ``keys``
    that has one; read before the batch's upsert replaces them."""
    found: dict[tuple[str, str], tuple[Any, ...]] = {}
    execute = conn.execute
    for key in keys:
        row = execute(_OLD_ROW_SQL, key).fetchone()
        if row is not None:
            found[key] = row
    return found


class _Scope:
    """One scope's row as the batch changes it."""

    __slots__ = ("docs", "first_doc", "new", "next_doc", "number")

    def __init__(self, number: int, docs: int, next_doc: int, new: bool) -> None:
        self.number, self.docs, self.next_doc, self.new = number, docs, next_doc, new
        self.first_doc = next_doc  # the first number the batch gives out


class _Scopes:
    """The scope rows the batch touches, read once; new ones numbered max + 1, in the
    order the batch first uses them."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.rows: dict[tuple[str, str], _Scope | None] = {}
        self._max: int | None = None

    def existing(self, tenant: str, revision: str) -> _Scope | None:
        key = (tenant, revision)
        if key not in self.rows:
            row = self._conn.execute(_SCOPE_SQL, key).fetchone()
            self.rows[key] = None if row is None else _Scope(row[0], row[1], row[2], False)
        return self.rows[key]

    def entered(self, tenant: str, revision: str) -> _Scope:
        scope = self.existing(tenant, revision)
        if scope is None:
            if self._max is None:
                self._max = int(self._conn.execute(_MAX_SCOPE_SQL).fetchone()[0])
            self._max += 1
            scope = self.rows[tenant, revision] = _Scope(self._max, 0, 0, True)
        return scope


def apply(
    conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]], old: dict[tuple[str, str], tuple[Any, ...]]
) -> None:
    """Updates the index for the batch's final current rows ``rows`` (evidence's column
    order: tenant, revision, expires_at, record_id, kind, body, ...), in evidence's
    primary-key order, given ``old``: the rows they replace (old_rows())."""
    scopes = _Scopes(conn)
    # (scope, chunk) -> token -> the chunk-local numbers added / removed.
    added: dict[tuple[int, int], dict[str, list[int]]] = {}
    removed: dict[tuple[int, int], dict[str, list[int]]] = {}
    expiry: dict[tuple[int, int, int], int] = {}  # (scope, level, bucket) -> change of its count
    docs_new: list[tuple[int, str, int, int]] = []
    docs_gone: list[tuple[int, str]] = []
    docs_moved: list[tuple[int, int, str]] = []  # (expires_at, scope, record_id): a kept number
    for row in rows:
        tenant, revision, expires_at, record_id, body = row[0], row[1], row[2], row[3], row[5]
        kept: int | None = None
        before = old.get((tenant, record_id))
        if before is not None:
            old_revision, old_expires_at, old_body = before
            scope = scopes.existing(tenant, old_revision)
            if scope is not None:
                keep = old_revision == revision
                found = conn.execute(_DOC_SQL, (scope.number, record_id)).fetchone()
                if found is not None:
                    doc = found[0]
                    _note(removed, scope.number, doc, token_set(old_body))
                    if not keep:
                        docs_gone.append((scope.number, record_id))
                    else:
                        kept = doc
                        if old_expires_at != expires_at:
                            docs_moved.append((expires_at, scope.number, record_id))
                _count(expiry, scope.number, old_expires_at, -1)
                if not keep:
                    scope.docs -= 1
        scope = scopes.entered(tenant, revision)
        if kept is None:
            doc = scope.next_doc
            scope.next_doc += 1
            scope.docs += 1
            docs_new.append((scope.number, record_id, doc, expires_at))
        else:
            doc = kept
        _note(added, scope.number, doc, token_set(body))
        _count(expiry, scope.number, expires_at, 1)
    reached = {s.number: (s.first_doc - 1) >> _BITS for s in scopes.rows.values() if s is not None}
    _write_postings(conn, added, removed, reached)
    _write_expiry(conn, expiry)
    execute_many = conn.executemany
    execute_many("DELETE FROM evidence_index_docs WHERE scope = ? AND record_id = ?", docs_gone)
    execute_many(
        "UPDATE evidence_index_docs SET expires_at = ? WHERE scope = ? AND record_id = ?", docs_moved
    )
    execute_many(
        "INSERT INTO evidence_index_docs (scope, record_id, doc, expires_at) VALUES (?, ?, ?, ?)", docs_new
    )
    for (tenant, revision), s in scopes.rows.items():
        if s is None:
            continue
        if s.new:
            conn.execute(
                "INSERT INTO evidence_index_scopes (tenant, revision, scope, docs, next_doc)"
                " VALUES (?, ?, ?, ?, ?)",
                (tenant, revision, s.number, s.docs, s.next_doc),
            )
        else:
            conn.execute(
                "UPDATE evidence_index_scopes SET docs = ?, next_doc = ? WHERE scope = ?",
                (s.docs, s.next_doc, s.number),
            )


def _note(
    into: dict[tuple[int, int], dict[str, list[int]]], scope: int, doc: int, tokens: Iterable[str]
) -> None:
    by_token = into.get((scope, doc >> _BITS))
    if by_token is None:
        by_token = into[scope, doc >> _BITS] = {}
    low = doc & _LOW
    for token in tokens:
        numbers = by_token.get(token)
        if numbers is None:
            by_token[token] = [low]
        else:
            numbers.append(low)


def _count(into: dict[tuple[int, int, int], int], scope: int, expires_at: int, change: int) -> None:
    for level in range(LEVELS):
        key = (scope, level, expires_at >> (8 * level))
        into[key] = into.get(key, 0) + change


def _write_postings(
    conn: sqlite3.Connection,
    added: dict[tuple[int, int], dict[str, list[int]]],
    removed: dict[tuple[int, int], dict[str, list[int]]],
    reached: dict[int, int],
) -> None:
    """Writes the changed docsets. ``reached`` maps a scope to the last chunk that held a
    document before the batch: the chunks after it have no rows to read."""
    inserts: list[tuple[int, str, int, bytes]] = []
    updates: list[tuple[bytes, int, str, int]] = []
    deletes: list[tuple[int, str, int]] = []
    for scope, chunk in sorted(added.keys() | removed.keys()):
        plus = added.get((scope, chunk), {})
        minus = removed.get((scope, chunk), {})
        tokens = sorted(plus.keys() | minus.keys())
        stored: dict[str, bytes] = {}
        if chunk <= reached[scope]:  # a chunk no document reached yet holds nothing
            listed = '["' + '","'.join(tokens) + '"]'  # tokens are [a-z0-9]+: nothing to escape
            stored = dict(conn.execute(_POSTINGS_SQL, (scope, chunk, listed)).fetchall())
        for token in tokens:
            before = stored.get(token)
            after = _changed(before, plus.get(token), minus.get(token))
            if before is None:
                if after:
                    inserts.append((scope, token, chunk, after))
            elif not after:
                deletes.append((scope, token, chunk))
            elif after != before:
                updates.append((after, scope, token, chunk))
    conn.executemany(
        "DELETE FROM evidence_index_postings WHERE scope = ? AND token = ? AND chunk = ?", deletes
    )
    conn.executemany(
        "UPDATE evidence_index_postings SET docs = ? WHERE scope = ? AND token = ? AND chunk = ?", updates
    )
    conn.executemany(
        "INSERT INTO evidence_index_postings (scope, token, chunk, docs) VALUES (?, ?, ?, ?)", inserts
    )


def _changed(before: bytes | None, plus: list[int] | None, minus: list[int] | None) -> bytes:
    """The docset ``before`` without ``minus`` and with ``plus`` (chunk-local numbers)."""
    if plus is not None:
        plus.sort()
    if minus is None and plus is not None:
        # The usual case, new documents only: their numbers are above every stored one,
        # so a list grows by appending them.
        if not before:
            if len(plus) <= _LISTED:
                return _listed(plus)
        elif len(before) < docsets.BITSET_BYTES and len(before) // 2 + len(plus) <= _LISTED:
            if int.from_bytes(before[-2:], "little") < plus[0]:
                return before + _listed(plus)
    bits = docsets.decode(before)
    for n in minus or ():
        bits &= ~(1 << n)
    for n in plus or ():
        bits |= 1 << n
    return docsets.encode(bits)


def _listed(numbers: list[int]) -> bytes:
    out = array("H", numbers)
    if _BIG_ENDIAN:  # pragma: no cover - little-endian everywhere we run
        out.byteswap()
    return out.tobytes()


def _write_expiry(conn: sqlite3.Connection, changes: dict[tuple[int, int, int], int]) -> None:
    by_level: dict[tuple[int, int], list[int]] = {}
    for (scope, level, bucket), change in changes.items():
        if change:
            by_level.setdefault((scope, level), []).append(bucket)
    inserts: list[tuple[int, int, int, int]] = []
    updates: list[tuple[int, int, int, int]] = []
    deletes: list[tuple[int, int, int]] = []
    for (scope, level), buckets in sorted(by_level.items()):
        buckets.sort()
        stored = dict(conn.execute(_EXPIRY_SQL, (scope, level, "[" + ",".join(map(str, buckets)) + "]")))
        for bucket in buckets:
            before = stored.get(bucket, 0)
            after = before + changes[scope, level, bucket]
            if after <= 0:
                if before:
                    deletes.append((scope, level, bucket))
            elif before:
                updates.append((after, scope, level, bucket))
            else:
                inserts.append((scope, level, bucket, after))
    conn.executemany(
        "DELETE FROM evidence_index_expiry WHERE scope = ? AND level = ? AND bucket = ?", deletes
    )
    conn.executemany(
        "UPDATE evidence_index_expiry SET rows = ? WHERE scope = ? AND level = ? AND bucket = ?", updates
    )
    conn.executemany(
        "INSERT INTO evidence_index_expiry (scope, level, bucket, rows) VALUES (?, ?, ?, ?)", inserts
    )
