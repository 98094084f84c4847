"""The Python engine's writer of the token index: a batch of current rows at a time.

The same rules, and so the same table rows, as the schema's triggers (schema.sql,
"The token index") and the native engine's csrc/evidence_index_write.c: each
record's new current row, in (tenant, revision, expires_at, record_id) order, takes its old row out
(keeping its document number within the same scope) and goes in. As in C, the
cost is per batch: the changes are queued, then each docset, expiry count and
scope the batch touched is read and written once.

    batch = IndexBatch(conn)
    docs = batch.replace(rows)   # put/put_many: before the current rows are written,
    batch.finish()               # each with its document number from docs

``build`` is the rebuild: every current row entered, a batch at a time.
"""

from __future__ import annotations

import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from operator import itemgetter
from typing import Any

from ...core.errors import StoreError
from ...core.records import IndexRebuild
from ...core.tokens import token_set
from ..row_batches import RowBatches
from . import docsets
from .rebuild import INDEX_TABLES, RENUMBER_SQL, summary

CHUNK_BITS = docsets.CHUNK_BITS
LOW_MASK = docsets.CHUNK_DOCS - 1
LEVELS = range(8)

BROKEN = (
    "the token index disagrees with the stored records, so nothing was written; "
    "rebuild it with `pyevidence reindex`"
)

# A record's current row with its document number.
_OLD_ROW_SQL = (
    "SELECT c.revision, c.expires_at, v.body, c.doc FROM evidence_current AS c"
    " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
    " WHERE c.tenant = ? AND c.record_id = ?"
)
_SCOPE_SQL = "SELECT scope, docs, next_doc FROM evidence_index_scopes WHERE tenant = ? AND revision = ?"
_MAX_SCOPE_SQL = "SELECT coalesce(max(scope), 0) FROM evidence_index_scopes"
_SCOPE_INSERT_SQL = (
    "INSERT INTO evidence_index_scopes (tenant, revision, scope, docs, next_doc) VALUES (?, ?, ?, ?, ?)"
)
_SCOPE_UPDATE_SQL = "UPDATE evidence_index_scopes SET docs = ?, next_doc = ? WHERE scope = ?"
_READ_CHUNK = 100
_POSTING_READ_ONE_SQL = (
    "SELECT token, docs FROM evidence_index_postings WHERE scope = ? AND era = ? AND chunk = ? AND token = ?"
)
_POSTING_READ_MANY_SQL = (
    "SELECT token, docs FROM evidence_index_postings WHERE scope = ? AND era = ? AND chunk = ? AND token IN ("
    + ", ".join("?" * _READ_CHUNK)
    + ")"
)
_POSTING_WRITE_SQL = (
    "INSERT INTO evidence_index_postings (scope, era, token, chunk, docs) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (scope, era, token, chunk) DO UPDATE SET docs = excluded.docs"
)
# Documents new to the scope only: their numbers are above every one the docset holds, so a
# list that stays a list (255 numbers at most) is the old one with them after it.
_POSTING_APPEND_SQL = (
    "INSERT INTO evidence_index_postings (scope, era, token, chunk, docs) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (scope, era, token, chunk) DO UPDATE SET docs = CASE"
    " WHEN length(docs) + length(excluded.docs) <= 510 THEN CAST(docs || excluded.docs AS BLOB)"
    " ELSE evidence_docset_union(docs, excluded.docs) END"
)
_POSTING_DELETE_SQL = (
    "DELETE FROM evidence_index_postings WHERE scope = ? AND era = ? AND token = ? AND chunk = ?"
)
_EXPIRY_READ_SQL = "SELECT rows FROM evidence_index_expiry WHERE scope = ? AND level = ? AND bucket = ?"
_EXPIRY_WRITE_SQL = (
    "INSERT INTO evidence_index_expiry (scope, level, bucket, rows) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (scope, level, bucket) DO UPDATE SET rows = excluded.rows"
)
_EXPIRY_DELETE_SQL = "DELETE FROM evidence_index_expiry WHERE scope = ? AND level = ? AND bucket = ?"
_EXPIRY_ADD_SQL = (
    "INSERT INTO evidence_index_expiry (scope, level, bucket, rows) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (scope, level, bucket) DO UPDATE SET rows = rows + excluded.rows"
)
# A batch's rows, many a statement (pyevidence/storage/row_batches.py).
_POSTING_WRITES = RowBatches(_POSTING_WRITE_SQL)
_POSTING_APPENDS = RowBatches(_POSTING_APPEND_SQL)
_EXPIRY_ADDS = RowBatches(_EXPIRY_ADD_SQL)
# Every current row in the table's key order, which RENUMBER_SQL has just made the order
# (tenant, revision, expires_at, record_id) too. The native rebuild reads the same
# (csrc/evidence_index_write.c).
_ALL_ROWS_SQL = (
    "SELECT c.tenant, c.revision, c.expires_at, c.doc, v.body FROM evidence_current AS c"
    " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
    " ORDER BY c.tenant, c.revision, c.doc"
)

# A current row as _write holds it: tenant, revision, expires_at, record_id, then body at BODY.
BODY = 5
Progress = Callable[[int, int], None]


class IndexBroken(StoreError):
    """The index does not hold what the records say it must (a raw write to its
    tables, or a bug): `pyevidence reindex` rebuilds it."""


class _Scope:
    """A scope the batch touched, with its counts as the batch leaves them."""

    __slots__ = ("docs", "docs_was", "new", "next_doc", "next_doc_was", "number", "revision", "tenant")

    def __init__(self, tenant: str, revision: str, number: int, docs: int, next_doc: int, new: bool) -> None:
        self.tenant, self.revision, self.number = tenant, revision, number
        self.docs = self.docs_was = docs
        self.next_doc = self.next_doc_was = next_doc
        self.new = new


# Postings changes: (scope, chunk) -> token -> the numbers doc & 4095 gaining or losing it.
_Changes = dict[tuple[int, int], defaultdict[str, list[int]]]
# The documents entering their scope: (scope, chunk) -> token -> their numbers doc & 4095
# packed as they were numbered, ascending, two bytes each: the docset's list encoding.
_Entered = dict[tuple[int, int], defaultdict[str, bytearray]]


class IndexBatch:
    """The index changes of one batch of current rows, queued, then applied by finish()."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._scopes: dict[tuple[str, str], _Scope | None] = {}
        self._next_scope = 0  # 0: max(scope) not read yet
        self._fresh: _Entered = {}  # documents entering their scope in this batch
        self._adds: _Changes = {}  # kept documents gaining a token
        self._removes: _Changes = {}
        self._expiry: dict[tuple[int, int], int] = {}  # (scope, expires_at) -> rows gained

    # ---- queueing

    def replace(
        self, rows: Sequence[Sequence[Any]], new_records: Set[tuple[str, str]] = frozenset()
    ) -> list[int]:
        """Each row (tenant, revision, expires_at, record_id, _, body, ...) is its
        record's new current row, the rows in (tenant, revision, expires_at, record_id) order, one per
        record: its old current row (still in evidence_current) goes out, it comes in.
        ``new_records`` are (tenant, record_id) keys the caller knows had no version
        before the batch, so no current row: they are not looked up. Returns each row's
        document number, the value of its column doc in evidence_current."""
        old = self._old_rows([row for row in rows if (row[0], row[3]) not in new_records])
        numbers = []
        for row in rows:
            tenant, revision, expires_at, record_id = row[0], row[1], row[2], row[3]
            tokens = token_set(row[BODY])
            new = self._scope(tenant, revision, create=True)
            assert new is not None
            was = old.get((tenant, record_id))
            if was is None:
                numbers.append(self._enter(new, expires_at, tokens))
                continue
            old_revision, old_expires, old_body, doc = was
            before = self._scope(tenant, old_revision, create=False)
            if before is None or not 0 <= doc < before.next_doc:  # a number the index never gave
                raise IndexBroken(BROKEN)
            old_tokens = token_set(old_body)
            if before is new:  # same scope: the document keeps its number
                self._queue(self._adds, new.number, doc, tokens - old_tokens)
                self._queue(self._removes, new.number, doc, old_tokens - tokens)
                if old_expires != expires_at:
                    self._count_expiry(new.number, old_expires, -1)
                    self._count_expiry(new.number, expires_at, 1)
                numbers.append(doc)
                continue
            # another revision: out of the old scope, into the new one
            self._queue(self._removes, before.number, doc, old_tokens)
            self._count_expiry(before.number, old_expires, -1)
            before.docs -= 1
            numbers.append(self._enter(new, expires_at, tokens))
        return numbers

    def enter(self, tenant: str, revision: str, expires_at: int, body: str) -> int:
        """A current row the index does not hold yet (the rebuild's step); its number."""
        scope = self._scope(tenant, revision, create=True)
        assert scope is not None
        return self._enter(scope, expires_at, token_set(body))

    def _enter(self, scope: _Scope, expires_at: int, tokens: Iterable[str]) -> int:
        doc = scope.next_doc
        if not 0 <= doc < docsets.DOC_NUMBER_LIMIT:  # as csrc/evidence_index_write.c, iwEnter()
            raise IndexBroken(BROKEN)
        scope.next_doc += 1
        scope.docs += 1
        key = (scope.number, doc >> CHUNK_BITS)
        by_token = self._fresh.get(key)
        if by_token is None:
            by_token = self._fresh[key] = defaultdict(bytearray)
        # A scope numbers the documents it gains in order, so each token's numbers stay
        # ascending: appending the packed number keeps the list encoding of the docset.
        packed = docsets.PACKED_NUMBERS[doc & LOW_MASK]
        for numbers in map(by_token.__getitem__, tokens):
            numbers += packed
        self._count_expiry(scope.number, expires_at, 1)
        return doc

    def _queue(self, changes: _Changes, scope: int, doc: int, tokens: Iterable[str]) -> None:
        key = (scope, doc >> CHUNK_BITS)
        by_token = changes.get(key)
        if by_token is None:
            by_token = changes[key] = defaultdict(list)
        low = doc & LOW_MASK
        for token in tokens:
            by_token[token].append(low)

    def _count_expiry(self, scope: int, expires_at: int, delta: int) -> None:
        key = (scope, expires_at)
        self._expiry[key] = self._expiry.get(key, 0) + delta

    def _scope(self, tenant: str, revision: str, *, create: bool) -> _Scope | None:
        """The batch's entry for (tenant, revision): read on first use; created
        (numbered max + 1) when ``create`` and the table has none."""
        key = (tenant, revision)
        scope = self._scopes.get(key)
        if scope is not None:
            return scope
        found = self._conn.execute(_SCOPE_SQL, key).fetchone()
        if found is not None:
            scope = self._scopes[key] = _Scope(tenant, revision, found[0], found[1], found[2], new=False)
            return scope
        if not create:
            return None
        if self._next_scope == 0:
            self._next_scope = int(self._conn.execute(_MAX_SCOPE_SQL).fetchone()[0]) + 1
        scope = self._scopes[key] = _Scope(tenant, revision, self._next_scope, 0, 0, new=True)
        self._next_scope += 1
        return scope

    def _old_rows(self, rows: Sequence[Sequence[Any]]) -> dict[tuple[str, str], tuple[str, int, str, int]]:
        """The current rows the batch replaces: (tenant, record_id) -> (revision,
        expires_at, body, its document number). One lookup a record, through evidence_current's UNIQUE
        (tenant, record_id): an IN list of many ids can lead the planner to a scan of
        the tenant's rows."""
        execute = self._conn.execute
        old: dict[tuple[str, str], tuple[str, int, str, int]] = {}
        for row in rows:
            key = (row[0], row[3])
            found = execute(_OLD_ROW_SQL, key).fetchone()
            if found is not None:
                old[key] = found
        return old

    # ---- applying

    def finish(self) -> None:
        """Writes the queued changes: each docset, expiry count and scope once."""
        execute = self._conn.execute
        self._apply_postings()
        self._apply_expiry()
        for scope in sorted((s for s in self._scopes.values() if s is not None), key=lambda s: s.number):
            if scope.new:
                execute(
                    _SCOPE_INSERT_SQL,
                    (scope.tenant, scope.revision, scope.number, scope.docs, scope.next_doc),
                )
            elif scope.docs != scope.docs_was or scope.next_doc != scope.next_doc_was:
                execute(_SCOPE_UPDATE_SQL, (scope.docs, scope.next_doc, scope.number))
        self._clear()

    def _clear(self) -> None:
        self._scopes.clear()
        self._next_scope = 0
        self._fresh, self._adds, self._removes, self._expiry = {}, {}, {}, {}

    def _apply_postings(self) -> None:
        """Each touched docset written once, in the table's key order. One that only
        gains documents new to its scope (numbered above every one it holds) is
        appended to in one statement, unread; any other is read (a statement per
        _READ_CHUNK of them), changed, and written or deleted when empty."""
        # rows (scope, era, token, chunk, docs) and keys (scope, era, token, chunk)
        appends: defaultdict[tuple[int, int], list[tuple[int, int, str, int, bytes]]] = defaultdict(list)
        writes: list[tuple[int, int, str, int, bytes]] = []
        deletes: list[tuple[int, int, str, int]] = []
        fresh, adds, removes = self._fresh, self._adds, self._removes
        none: Mapping[str, list[int]] = {}
        nothing_entered: Mapping[str, bytearray] = {}
        listed = _MAX_LISTED_BYTES
        for key in sorted(fresh.keys() | adds.keys() | removes.keys()):
            scope, chunk = key
            era = chunk >> docsets.ERA_CHUNK_BITS
            entered = fresh.get(key, nothing_entered)
            gained = adds.get(key, none)
            lost = removes.get(key, none)
            changed = gained.keys() | lost.keys()
            # A load's chunks gain only documents new to the scope: their packed numbers are
            # already the docset's list encoding (bytes() of them), unless too many for a list.
            appends[scope, era] += [
                (scope, era, token, chunk, bytes(packed) if len(packed) <= listed else _as_docset(packed))
                for token, packed in entered.items()
                if token not in changed
            ]
            if not changed:
                continue
            tokens = sorted(changed)
            found = self._docsets(scope, chunk, tokens)
            for token in tokens:
                blob = found.get(token)
                more = gained.get(token, []) + _unpacked(entered.get(token))
                try:
                    docs = _changed(blob, more, lost.get(token))
                except docsets.DocsetError:
                    raise IndexBroken(BROKEN) from None
                if docs:
                    writes.append((scope, era, token, chunk, docs))
                elif blob is not None:
                    deletes.append((scope, era, token, chunk))
        executemany = self._conn.executemany
        if deletes:
            executemany(_POSTING_DELETE_SQL, deletes)
        if writes:
            _POSTING_WRITES.run(self._conn, writes)
        for scope_and_era in sorted(appends):
            # In the table's key order (scope, era, token, chunk): the rows of one era are in
            # chunk order already, and a stable sort by token keeps it (a sort on one string
            # key is about 4x as fast as one on the tuple).
            rows = appends[scope_and_era]
            if rows:
                rows.sort(key=_token_of)
                _POSTING_APPENDS.run(self._conn, rows)

    def _docsets(self, scope: int, chunk: int, tokens: list[str]) -> dict[str, bytes]:
        """The stored docsets of (scope, token, chunk) for ``tokens``: token -> blob."""
        execute = self._conn.execute
        era = chunk >> docsets.ERA_CHUNK_BITS
        found: dict[str, bytes] = {}
        for i in range(0, len(tokens), _READ_CHUNK):
            some = tokens[i : i + _READ_CHUNK]
            if len(some) == 1:
                rows = execute(_POSTING_READ_ONE_SQL, (scope, era, chunk, some[0]))
            else:
                some += some[:1] * (_READ_CHUNK - len(some))  # one statement text: cached
                rows = execute(_POSTING_READ_MANY_SQL, (scope, era, chunk, *some))
            found.update(rows)
        return found

    def _apply_expiry(self) -> None:
        deltas: dict[tuple[int, int, int], int] = {}
        # level 0 counts by expires_at; each level above sums 256 buckets of the one below
        # (expires_at >= 0, schema.sql CHECK), so it is summed from that level, not per row
        below = {key: delta for key, delta in self._expiry.items() if delta}
        for level in LEVELS:
            above: dict[tuple[int, int], int] = {}
            for (scope, bucket), delta in below.items():
                deltas[scope, level, bucket] = delta
                up = (scope, bucket >> 8)
                above[up] = above.get(up, 0) + delta
            below = {key: delta for key, delta in above.items() if delta}
        adds = sorted((*key, delta) for key, delta in deltas.items() if delta > 0)
        if adds:
            _EXPIRY_ADDS.run(self._conn, adds)
        execute = self._conn.execute
        for key, delta in sorted(deltas.items()):
            if delta >= 0:
                continue
            found = execute(_EXPIRY_READ_SQL, key).fetchone()
            rows = (found[0] if found is not None else 0) + delta
            if rows < 0:
                raise IndexBroken(BROKEN)
            if rows:
                execute(_EXPIRY_WRITE_SQL, (*key, rows))
            else:
                execute(_EXPIRY_DELETE_SQL, key)


def _changed(blob: bytes | None, gained: list[int] | None, lost: list[int] | None) -> bytes:
    """The docset ``blob`` (None: empty) with the numbers ``gained`` added and ``lost``
    taken out, encoded (b"": empty)."""
    if blob is None:
        return docsets.encode_numbers(gained) if gained else b""
    size = len(blob)
    if size == docsets.BITSET_BYTES:
        bits = docsets.decode(blob)
        for n in gained or ():
            bits |= 1 << n
        for n in lost or ():
            bits &= ~(1 << n)
        return docsets.encode(bits)
    if gained and not lost and size % 2 == 0 and size // 2 + len(gained) <= docsets.MAX_LISTED:
        # the common case: new documents, numbered above every one listed, appended
        ahead = sorted(gained)
        if size == 0 or ahead[0] > int.from_bytes(blob[-2:], "little"):
            return blob + docsets.encode_numbers(ahead)
    numbers = set(docsets.listed(blob))
    if gained:
        numbers.update(gained)
    if lost:
        numbers.difference_update(lost)
    return docsets.encode_numbers(numbers)


_token_of = itemgetter(2)
_MAX_LISTED_BYTES = 2 * docsets.MAX_LISTED


def _as_docset(packed: bytearray) -> bytes:
    """The docset of more documents than a list holds, from their packed numbers."""
    return docsets.encode_numbers(docsets.unpack(packed))


def _unpacked(packed: bytearray | None) -> list[int]:
    """The numbers packed two little-endian bytes each (None: none)."""
    return docsets.unpack(packed) if packed else []


def build(conn: sqlite3.Connection, progress: Progress | None = None, *, batch: int) -> IndexRebuild:
    """The rebuild (INDEX_SPEC): the index's tables emptied, then every current row entered
    in (tenant, revision, expires_at, record_id) order, ``batch`` rows between two flushes and two progress
    reports: the same rows as rebuild.build, written a batch at a time."""
    if batch < 1:
        raise ValueError(f"batch must be 1 or more rows, not {batch}")
    started = time.monotonic()
    for table in INDEX_TABLES:
        conn.execute(f"DELETE FROM {table}")
    conn.execute(RENUMBER_SQL)
    total = int(conn.execute("SELECT count(*) FROM evidence").fetchone()[0])
    report = progress or (lambda done, total: None)
    report(0, total)
    writer = IndexBatch(conn)
    done = 0
    rows = conn.execute(_ALL_ROWS_SQL)
    while True:
        some = rows.fetchmany(batch)
        if not some:
            break
        for tenant, revision, expires_at, doc, body in some:
            if writer.enter(tenant, revision, expires_at, body) != doc:
                raise IndexBroken(BROKEN)  # RENUMBER_SQL numbers in the same order
        writer.finish()
        done += len(some)
        report(done, total)
    return summary(lambda sql, params: conn.execute(sql, params).fetchall(), time.monotonic() - started)
