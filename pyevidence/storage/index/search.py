"""Retrieve through the token index, for the Python engine: the scan's hits exactly.

The same search as csrc/evidence_search.c, with Python's big ints as the bit
vectors (bit d is document d of the scope):

  1. eligible_count = the scope's docs - its rows with expires_at <= now, summed
     from evidence_index_expiry (at most 8 x 255 + 1 buckets);
  2. scores: each distinct query token's docsets laid out over the scope's
     document range, added into bit-sliced counters (one int per bit of the score);
  3. hits: from the highest score down, the documents with that score resolved to
     record ids, expired ones skipped: a lookup each when few tie, else a walk of
     the scope's records in record_id order, which meets them in ranking order.

Everything is read in one snapshot; the hits' fields come from evidence.
"""

from __future__ import annotations

import re
import sqlite3

from ...core.errors import StoreError
from ...core.records import Candidate, Hit
from ...core.tokens import token_set
from ...ranking.scoring import hit_from
from . import docsets

OUT_OF_STEP = "the token index disagrees with the stored records; rebuild it with `pyevidence reindex`"

_SCOPE_SQL = (
    "SELECT s.scope, s.docs, s.next_doc, (SELECT max(c.doc) FROM evidence_current AS c"
    " WHERE c.tenant = s.tenant AND c.revision = s.revision)"
    " FROM evidence_index_scopes AS s WHERE s.tenant = ? AND s.revision = ?"
)
_EXPIRED_SQL = (
    "SELECT coalesce(sum(rows), 0) FROM evidence_index_expiry"
    " WHERE scope = ? AND level = ? AND bucket BETWEEN ? AND ?"
)
# A token's docsets, era by era (the postings' key leads with the era); binds the
# number of eras, the scope, the token.
_POSTINGS_SQL = (
    "WITH RECURSIVE eras (era) AS (SELECT 0 UNION ALL SELECT era + 1 FROM eras WHERE era + 1 < ?)"
    " SELECT p.chunk, p.docs FROM eras JOIN evidence_index_postings AS p"
    " ON p.scope = ? AND p.era = eras.era AND p.token = ?"
)
# A document's record, by evidence_current's key (schema version 12).
_DOC_BY_NUMBER_SQL = (
    "SELECT expires_at, record_id FROM evidence_current WHERE tenant = ? AND revision = ? AND doc = ?"
)
# The scope's rows in record_id order, from evidence_current's index by record, which holds
# the rest of the primary key, the number included, and covers the walk (schema.sql).
_DOCS_IN_ORDER_SQL = (
    "SELECT record_id, doc, expires_at FROM evidence_current WHERE tenant = ? AND revision = ?"
    " ORDER BY record_id"
)
_RECORD_SQL = (
    "SELECT record_id, revision, kind, body, source, expires_at, version, content_hash FROM evidence"
    " WHERE tenant = ? AND record_id = ?"
)
_NONZERO = re.compile(rb"[^\x00]")


class IndexOutOfStep(StoreError):
    """The index does not hold what the records say it must: `pyevidence reindex`."""


def search(
    conn: sqlite3.Connection, tenant: str, revision: str, now: int, query: str, limit: int
) -> tuple[tuple[Hit, ...], int]:
    """The token ranking's hits and eligible count, read in one snapshot (a read
    transaction of its own unless the connection is in one)."""
    if conn.in_transaction:
        return _search(conn, tenant, revision, now, query, limit)
    try:  # BEGIN inside: an interrupt just after it still ends the read
        conn.execute("BEGIN")
        return _search(conn, tenant, revision, now, query, limit)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _search(
    conn: sqlite3.Connection, tenant: str, revision: str, now: int, query: str, limit: int
) -> tuple[tuple[Hit, ...], int]:
    found = conn.execute(_SCOPE_SQL, (tenant, revision)).fetchone()
    if found is None:
        return (), 0  # no such scope: nothing eligible
    scope, docs, next_doc, max_doc = found
    if max_doc is not None and (max_doc >= next_doc or max_doc >= docsets.DOC_NUMBER_LIMIT):
        raise IndexOutOfStep(OUT_OF_STEP)
    expired = _expired(conn, scope, now)
    if expired > docs:
        raise IndexOutOfStep(OUT_OF_STEP)
    eligible = docs - expired
    tokens = sorted(token_set(query))
    if eligible == 0 or limit < 1 or not tokens or max_doc is None:
        return (), eligible
    planes = _scores(conn, scope, tokens, max_doc + 1)
    ranked = _ranked(conn, (tenant, revision), now, docs, planes, limit)
    hits = []
    for record_id, score in ranked:
        row = conn.execute(_RECORD_SQL, (tenant, record_id)).fetchone()
        if row is None:
            raise IndexOutOfStep(OUT_OF_STEP)
        hits.append(hit_from(Candidate(*row), score))
    return tuple(hits), eligible


def _expired(conn: sqlite3.Connection, scope: int, now: int) -> int:
    """The scope's rows with expires_at <= now: per level L, the buckets below now's
    own under now's prefix of the level above, then the bucket equal to now."""
    if now < 0:
        return 0  # expires_at >= 0 > now: none has expired
    total = 0
    for level in range(8):
        current = now >> (8 * level)
        low = 0 if level == 7 else (now >> (8 * (level + 1))) << 8
        if current > low:
            total = _counted(conn, total, (scope, level, low, current - 1))
    return _counted(conn, total, (scope, 0, now, now))


def _counted(conn: sqlite3.Connection, total: int, bucket_range: tuple[int, int, int, int]) -> int:
    """``total`` plus the rows of the buckets in range. Counts a writer kept never come near 2**63:
    a sum past it (SQL's integer overflow, or the total's) is a damaged table, as in C."""
    try:
        rows = int(conn.execute(_EXPIRED_SQL, bucket_range).fetchone()[0])
    except sqlite3.OperationalError as exc:
        if "integer overflow" not in str(exc):
            raise
        raise IndexOutOfStep(OUT_OF_STEP) from None
    if rows < 0 or rows > 2**63 - 1 - total:
        raise IndexOutOfStep(OUT_OF_STEP)
    return total + rows


def _scores(conn: sqlite3.Connection, scope: int, tokens: list[str], numbers: int) -> list[int]:
    """Bit-sliced counters: bit d of planes[b] is bit b of document d's score, for the
    documents numbered below ``numbers``."""
    chunks = (numbers + docsets.CHUNK_DOCS - 1) >> docsets.CHUNK_BITS
    planes = [0] * len(tokens).bit_length()
    eras = (chunks + (1 << docsets.ERA_CHUNK_BITS) - 1) >> docsets.ERA_CHUNK_BITS
    for token in tokens:
        rows = conn.execute(_POSTINGS_SQL, (eras, scope, token)).fetchall()
        if not rows:
            continue
        if len(rows) == 1:
            chunk, blob = rows[0]
            carry = _decoded(blob, chunk, chunks) << (chunk << docsets.CHUNK_BITS)
        else:
            laid = bytearray(chunks * docsets.BITSET_BYTES)
            for chunk, blob in rows:
                at = chunk * docsets.BITSET_BYTES
                laid[at : at + docsets.BITSET_BYTES] = _decoded(blob, chunk, chunks).to_bytes(
                    docsets.BITSET_BYTES, "little"
                )
            carry = int.from_bytes(laid, "little")
        for b, plane in enumerate(planes):  # a ripple-carry add
            if not carry:
                break
            planes[b] = plane ^ carry
            carry &= plane
    return planes


def _decoded(blob: bytes, chunk: int, chunks: int) -> int:
    if not 0 <= chunk < chunks:
        raise IndexOutOfStep(OUT_OF_STEP)
    try:
        return docsets.decode(blob)
    except docsets.DocsetError:
        raise IndexOutOfStep(OUT_OF_STEP) from None


def _ranked(
    conn: sqlite3.Connection,
    tenant_revision: tuple[str, str],
    now: int,
    docs: int,
    planes: list[int],
    limit: int,
) -> list[tuple[str, int]]:
    """(record_id, score) of the hits: highest score first, ties by record_id, live only."""
    left = 0
    for plane in planes:
        left |= plane  # every document that scored
    out: list[tuple[str, int]] = []
    while left and len(out) < limit:
        tied, score = left, 0
        for b in range(len(planes) - 1, -1, -1):  # narrow to the highest score, bit by bit
            narrowed = tied & planes[b]
            if narrowed:
                tied, score = narrowed, score | 1 << b
        left ^= tied
        need = limit - len(out)
        count = tied.bit_count()
        marks = tied.to_bytes((tied.bit_length() + 7) // 8, "little")
        if count * count <= need * docs:  # a lookup per tied document
            found = []
            for doc in _members(marks):
                row = conn.execute(_DOC_BY_NUMBER_SQL, (*tenant_revision, doc)).fetchone()
                if row is None:
                    raise IndexOutOfStep(OUT_OF_STEP)
                if row[0] > now:
                    found.append(row[1])
            found.sort()
            out.extend((record_id, score) for record_id in found[:need])
        else:  # a walk of the scope's records in record_id order
            size = len(marks)
            walk = conn.execute(_DOCS_IN_ORDER_SQL, tenant_revision)
            for record_id, doc, expires_at in walk:
                if 0 <= doc >> 3 < size and marks[doc >> 3] >> (doc & 7) & 1 and expires_at > now:
                    out.append((record_id, score))
                    if len(out) == limit:
                        break
            walk.close()
    return out


def _members(marks: bytes) -> list[int]:
    """The set bits' numbers of a little-endian bit string, ascending."""
    out = []
    for m in _NONZERO.finditer(marks):
        at = m.start()
        byte = marks[at]
        for bit in range(8):
            if byte >> bit & 1:
                out.append(at * 8 + bit)
    return out
