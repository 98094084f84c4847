"""Exact search over the token index on a stdlib sqlite3 connection (the Python engine).

Returns what the scan returns (pyevidence.ranking.scoring.rank with TokenScorer over
the eligible rows): the same hits, scores, order and eligible_count, reading the
postings of the query's tokens instead of every eligible row:

- eligible_count: the scope's docs minus its rows with expires_at <= now, counted
  from evidence_index_expiry (at most 8 * 255 + 1 count rows, whatever the size);
- scores: one Python int per token, bit d set when document d holds it, summed into
  bit-sliced counters (plane i holds bit i of every document's count);
- order: the documents of the highest score left, then the next, ...; a score's ties
  go by record_id: looked up by number when few, else found by walking the scope's
  documents in record_id order; an expired document is skipped.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from array import array
from collections.abc import Sequence

from ...core.records import Candidate, Hit
from ...core.tokens import token_set
from ...ranking.scoring import hit_from
from . import docsets

_CHUNK_BYTES = docsets.BITSET_BYTES
_BIG_ENDIAN = sys.byteorder == "big"
_NONZERO = re.compile(rb"[^\x00]")

_SCOPE_SQL = "SELECT scope, docs, next_doc FROM evidence_index_scopes WHERE tenant = ? AND revision = ?"
_EXPIRED_SQL = (
    "SELECT coalesce(sum(rows), 0) FROM evidence_index_expiry"
    " WHERE scope = ? AND level = ? AND bucket BETWEEN ? AND ?"
)
_POSTINGS_SQL = "SELECT chunk, docs FROM evidence_index_postings WHERE scope = ? AND token = ?"
# By number (few ties). json_each first: its numbers are looked up in the by-number index.
_BY_NUMBER_SQL = (
    "SELECT d.record_id FROM json_each(?) AS k CROSS JOIN evidence_index_docs AS d"
    " WHERE d.scope = ? AND d.doc = k.value AND d.expires_at > ?"
)
# In record_id order (many ties): the primary key's order, BINARY, as Python orders str.
_IN_ORDER_SQL = (
    "SELECT record_id, doc FROM evidence_index_docs WHERE scope = ? AND expires_at > ? ORDER BY record_id"
)
_ROW_SQL = (
    "SELECT record_id, revision, kind, body, source, expires_at, version, content_hash FROM evidence"
    " WHERE tenant = ? AND record_id = ?"
)


def search(
    conn: sqlite3.Connection, tenant: str, revision: str, now: int, query: str, limit: int
) -> tuple[tuple[Hit, ...], int]:
    """The hits and eligible_count of retrieve(tenant, revision, now, query, limit), from
    the index. Run it inside one read transaction: it reads several tables."""
    scope_row = conn.execute(_SCOPE_SQL, (tenant, revision)).fetchone()
    if scope_row is None:
        return (), 0
    scope, docs, next_doc = scope_row
    eligible = docs - expired(conn, scope, now)
    tokens = token_set(query)
    if not tokens or eligible <= 0:
        return (), eligible
    planes = _counters(conn, scope, sorted(tokens), next_doc)
    size = ((next_doc + 4095) >> 12) * _CHUNK_BYTES
    left = 0  # every document with a score above 0, less those already taken
    for plane in planes:
        left |= plane
    chosen: list[tuple[str, int]] = []
    while left and len(chosen) < limit:
        top, score = left, 0  # narrowed to the documents of the highest score left
        for bit in range(len(planes) - 1, -1, -1):
            with_bit = top & planes[bit]
            if with_bit:
                top, score = with_bit, score | 1 << bit
        left ^= top
        for record_id in _first_by_record_id(conn, scope, now, top, size, docs, limit - len(chosen)):
            chosen.append((record_id, score))
    hits = []
    for record_id, score in chosen:
        row = conn.execute(_ROW_SQL, (tenant, record_id)).fetchone()
        hits.append(hit_from(Candidate(*row), score))
    return tuple(hits), eligible


def expired(conn: sqlite3.Connection, scope: int, now: int) -> int:
    """How many of the scope's documents have expires_at <= now, from the expiry counts:
    for each level, the buckets below now's own that share now's higher digits, and
    now's own bucket at level 0."""
    if now < 0:
        return 0
    total = 0
    execute = conn.execute
    for level in range(8):
        low = 0 if level == 7 else (now >> (8 * (level + 1))) << 8
        high = (now >> (8 * level)) - 1
        if high >= low:
            total += execute(_EXPIRED_SQL, (scope, level, low, high)).fetchone()[0]
    total += execute(_EXPIRED_SQL, (scope, 0, now, now)).fetchone()[0]
    return int(total)


def _counters(conn: sqlite3.Connection, scope: int, tokens: Sequence[str], next_doc: int) -> list[int]:
    """Bit-sliced counts: bit d of plane i is bit i of the number of ``tokens`` document
    d holds."""
    size = ((next_doc + 4095) >> 12) * _CHUNK_BYTES
    planes: list[int] = []
    for token in tokens:
        rows = conn.execute(_POSTINGS_SQL, (scope, token)).fetchall()
        if not rows:
            continue
        carry = _bits(rows, size)
        for i, plane in enumerate(planes):
            planes[i] = plane ^ carry
            carry &= plane
            if not carry:
                break
        else:
            planes.append(carry)
    return planes


def _bits(rows: Sequence[tuple[int, bytes]], size: int) -> int:
    """One token's postings as an int over the scope's document numbers."""
    buffer = bytearray(size)
    for chunk, blob in rows:
        start = chunk * _CHUNK_BYTES
        if len(blob) == _CHUNK_BYTES:
            buffer[start : start + _CHUNK_BYTES] = blob
        else:
            numbers = array("H", blob)
            if _BIG_ENDIAN:  # pragma: no cover - little-endian everywhere we run
                numbers.byteswap()
            for n in numbers:
                buffer[start + (n >> 3)] |= 1 << (n & 7)
    return int.from_bytes(buffer, "little")


def _first_by_record_id(
    conn: sqlite3.Connection, scope: int, now: int, docs_mask: int, size: int, docs: int, wanted: int
) -> list[str]:
    """The record ids of the first ``wanted`` unexpired documents of ``docs_mask``, in
    record_id order."""
    count = docs_mask.bit_count()
    raw = docs_mask.to_bytes(size, "little")
    # Looking up each number costs about as much as walking a few rows in order; the
    # walk reads about docs * wanted / count rows before it has found ``wanted``.
    if count <= 64 or count * count <= docs * wanted:
        numbers: list[int] = []
        for match in _NONZERO.finditer(raw):
            byte, base = match.start(), match.start() << 3
            value = raw[byte]
            numbers.extend(base + bit for bit in range(8) if value >> bit & 1)
        listed = "[" + ",".join(map(str, numbers)) + "]"
        found = sorted(row[0] for row in conn.execute(_BY_NUMBER_SQL, (listed, scope, now)))
        return found[:wanted]
    taken: list[str] = []
    cursor = conn.execute(_IN_ORDER_SQL, (scope, now))
    try:
        for record_id, doc in cursor:
            if raw[doc >> 3] >> (doc & 7) & 1:
                taken.append(record_id)
                if len(taken) == wanted:
                    break
    finally:
        cursor.close()
    return taken
