"""Checking the token index against evidence: `pyevidence check` and store.check_index().

The check is logical: it asks whether the index answers as a rebuild would, not
whether its bytes are a rebuild's (writes leave gaps in the document numbers that
only a rebuild closes). Per scope: the docs count, each current row's number
(evidence_current.doc, which is also the index's map from a number to its record)
below next_doc and held by no other row, each token's
docsets naming exactly the records whose body has that token (the token rule,
pyevidence/core/tokens.py), every docset canonical (docsets.py), the expiry counts
equal to counts of the rows; and no index row of a scope that does not exist.
It only reads, in keyset-paginated batches, inside the caller's snapshot. The tokens
are compared one era (docsets.ERA_CHUNK_BITS) at a time, so it holds one era's
docsets, not the whole index's; the expiry counts one bucket per level at a time,
in expires_at order, so a store whose every record has its own expiry costs no
more memory than one whose records share a few.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...core.records import IndexCheck, IndexProblem
from ...core.tokens import token_set
from ...core.validation import INT64_MAX  # raw SQL can write numbers up to it; none past it is bound
from . import docsets
from .rebuild import INDEX_TABLES, Run

MAX_REPORTED = 50  # problems listed in full; problems_found counts them all
LEVELS = range(8)
_BATCH = 10_000
_ERA_DOCS = 1 << (docsets.ERA_CHUNK_BITS + docsets.CHUNK_BITS)

_SCOPES_SQL = "SELECT scope, tenant, revision, docs, next_doc FROM evidence_index_scopes ORDER BY scope"
_UNINDEXED_SQL = (
    "SELECT tenant, revision, count(*) FROM evidence AS e WHERE NOT EXISTS ("
    " SELECT 1 FROM evidence_index_scopes AS s WHERE s.tenant = e.tenant AND s.revision = e.revision)"
    " GROUP BY tenant, revision ORDER BY tenant, revision"
)
_ROW_COUNT_SQL = "SELECT count(*) FROM evidence_current WHERE tenant = ?1 AND revision = ?2"
# The bodies of the current rows whose documents are numbered ?3 to ?4, one era. The body
# is read as bytes: raw SQL can store text that is not UTF-8, whose tokens are those of its
# valid parts.
_ERA_BODIES_SQL = (
    "SELECT c.doc, CAST(v.body AS BLOB) FROM evidence_current AS c"
    " JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq"
    " WHERE c.tenant = ?1 AND c.revision = ?2 AND c.doc BETWEEN ?3 AND ?4 ORDER BY c.doc"
)
_NEXT_DOC_ERA_SQL = (
    "SELECT doc FROM evidence_current WHERE tenant = ?1 AND revision = ?2 AND doc >= ?3 ORDER BY doc LIMIT 1"
)
_NEXT_POSTING_ERA_SQL = (
    "SELECT era FROM evidence_index_postings WHERE scope = ?1 AND era >= ?2 ORDER BY era LIMIT 1"
)
# Lists read a page at a time (_pages): each query's {after} is left out of the first page
# and replaced by the condition after it (_AFTER) on the others.
# Numbers that more than one current row of the scope holds (only raw SQL with the
# triggers off writes them: the key does not refuse them, see schema.sql).
_SHARED_SQL = (
    "SELECT doc, count(*), min(record_id), max(record_id) FROM evidence_current"
    " WHERE tenant = ?1 AND revision = ?2 {after} GROUP BY doc HAVING count(*) > 1 ORDER BY doc LIMIT ?3"
)
_SHARED_AFTER = "AND doc > ?4"
_BEYOND_NEXT_SQL = (
    "SELECT doc, expires_at, record_id FROM evidence_current WHERE tenant = ?1 AND revision = ?2"
    " AND doc >= ?3 {after} ORDER BY doc, expires_at, record_id LIMIT ?4"
)
_BEYOND_NEXT_AFTER = "AND (doc, expires_at, record_id) > (?5, ?6, ?7)"
_POSTINGS_SQL = (
    "SELECT token, chunk, docs FROM evidence_index_postings"
    " WHERE scope = ?1 AND era = ?2 AND (token, chunk) > (?3, ?4) ORDER BY token, chunk LIMIT ?5"
)
_RECORD_OF_SQL = (
    "SELECT record_id FROM evidence_current WHERE tenant = ?1 AND revision = ?2 AND doc = ?3"
    " ORDER BY record_id LIMIT 1"
)
# The scope's current rows counted by expires_at, in evidence_current's key order (the view
# evidence has the same rows, but its join to the history is not left out under GROUP BY).
_EXPIRIES_SQL = (
    "SELECT expires_at, count(*) FROM evidence_current WHERE tenant = ?1 AND revision = ?2 {after}"
    " GROUP BY expires_at ORDER BY expires_at LIMIT ?3"
)
_EXPIRIES_AFTER = "AND expires_at > ?4"
# The counts the index holds for one level, by bucket.
_EXPIRY_SQL = (
    "SELECT bucket, rows FROM evidence_index_expiry WHERE scope = ?1 AND level = ?2 {after}"
    " ORDER BY bucket LIMIT ?3"
)
_EXPIRY_AFTER = "AND bucket > ?4"
_ORPHANS_SQL = "SELECT count(*) FROM {table} WHERE scope NOT IN (SELECT scope FROM evidence_index_scopes)"


class _Findings:
    """The problems found so far: the first MAX_REPORTED in full, all of them counted."""

    def __init__(self) -> None:
        self.listed: list[IndexProblem] = []
        self.count = 0

    def add(self, kind: str, scope: tuple[str, str] | None, detail: str) -> None:
        self.count += 1
        if len(self.listed) < MAX_REPORTED:
            tenant, revision = scope if scope else (None, None)
            self.listed.append(IndexProblem(kind, tenant, revision, detail))

    def merge(self, later: _Findings) -> None:
        """Adds the problems ``later`` found, as if they had been found after these."""
        self.listed += later.listed[: MAX_REPORTED - len(self.listed)]
        self.count += later.count


def check(run: Run) -> IndexCheck:
    """Compares the index with evidence; run it inside one read snapshot."""
    found = _Findings()
    records = 0
    for tenant, revision, rows in run(_UNINDEXED_SQL, ()):
        found.add("scope_missing", (tenant, revision), f"{rows} current rows, and no scope row in the index")
    scopes = run(_SCOPES_SQL, ())
    for scope, tenant, revision, docs, next_doc in scopes:
        key = (str(tenant), str(revision))
        records += _check_scope(run, found, int(scope), key, int(docs), int(next_doc))
    for table in INDEX_TABLES[1:]:
        ((orphans,),) = run(_ORPHANS_SQL.format(table=table), ())
        if orphans:
            found.add("orphan_rows", None, f"{orphans} rows of {table} belong to no scope")
    return IndexCheck(
        ok=found.count == 0,
        scopes_checked=len(scopes),
        records_checked=records,
        problems_found=found.count,
        problems=tuple(found.listed),
    )


def _check_scope(
    run: Run, found: _Findings, scope: int, key: tuple[str, str], docs: int, next_doc: int
) -> int:
    """Checks one scope; returns how many current rows it has."""
    rows = int(run(_ROW_COUNT_SQL, key)[0][0])
    if docs != rows:
        found.add(
            "docs_count_wrong", key, f"the scope row says {docs} documents; the scope has {rows} current rows"
        )
    for doc, count, first, last in _pages(run, _SHARED_SQL, _SHARED_AFTER, key, 1):
        found.add(
            "doc_number_shared",
            key,
            f"document {doc} is held by {count} current rows, records {first!r} to {last!r}",
        )
    if next_doc >= docsets.DOC_NUMBER_LIMIT:
        found.add(
            "next_doc_too_high",
            key,
            f"next_doc is {next_doc}; document numbers stay below {docsets.DOC_NUMBER_LIMIT}, "
            "and a rebuild numbers the documents from 0 again",
        )
    for doc, _, record_id in _pages(run, _BEYOND_NEXT_SQL, _BEYOND_NEXT_AFTER, (*key, next_doc), 3):
        found.add(
            "doc_number_too_high", key, f"record {record_id!r} has document {doc}, next_doc is {next_doc}"
        )
    era = _next_era(run, scope, key, 0)
    while era is not None:
        _compare_era(run, found, scope, key, era)
        era = _next_era(run, scope, key, era + 1)
    _compare_expiry(run, found, scope, key)
    return rows


def _next_era(run: Run, scope: int, key: tuple[str, str], start: int) -> int | None:
    """The first era from start on that has a document or a posting row of the scope."""
    eras = [int(era) for (era,) in run(_NEXT_POSTING_ERA_SQL, (scope, start))]
    if start * _ERA_DOCS <= INT64_MAX:
        eras += [int(doc) // _ERA_DOCS for (doc,) in run(_NEXT_DOC_ERA_SQL, (*key, start * _ERA_DOCS))]
    return min(eras, default=None)


def _compare_era(run: Run, found: _Findings, scope: int, key: tuple[str, str], era: int) -> None:
    """Compares the docsets of one era with the tokens of the bodies numbered in it."""
    tenant, revision = key
    # (token, chunk) -> the numbers doc & 4095 of its documents, packed as a list docset packs
    # them: read in doc order, a set of 255 or fewer is then its canonical bytes already.
    expected: dict[tuple[str, int], bytearray] = {}
    first = era * _ERA_DOCS
    bodies: Sequence[Sequence[Any]] = ()
    if first <= INT64_MAX:  # an era beyond the integers (a corrupt chunk) numbers no document
        bounds = (tenant, revision, first, min(first + _ERA_DOCS - 1, INT64_MAX))
        bodies = run(_ERA_BODIES_SQL, bounds)
    for doc, body in bodies:
        chunk, packed = (
            int(doc) >> docsets.CHUNK_BITS,
            docsets.PACKED_NUMBERS[int(doc) & (docsets.CHUNK_DOCS - 1)],
        )
        for token in token_set(bytes(body).decode("utf-8", "replace")):
            numbers = expected.get((token, chunk))
            if numbers is None:
                expected[token, chunk] = bytearray(packed)
            else:
                numbers += packed
    after: tuple[str, int] = ("", -1)
    while batch := run(_POSTINGS_SQL, (scope, era, *after, _BATCH)):
        for token, chunk, blob in batch:
            token, chunk = str(token), int(chunk)
            if chunk >> docsets.ERA_CHUNK_BITS != era:  # only with CHECK constraints switched off
                found.add("posting_wrong_era", key, f"token {token!r}, chunk {chunk} is filed in era {era}")
                continue
            numbers = expected.pop((token, chunk), bytearray())
            if len(numbers) <= 2 * docsets.MAX_LISTED and blob == numbers:
                continue  # the common case, without decoding: the same set, canonical
            held, wrong = _held(blob)
            if wrong:
                found.add("docset_not_canonical", key, f"token {token!r}, chunk {chunk}: {wrong}")
            _report_difference(run, found, key, token, chunk, _bits(numbers), held)
        after = (str(batch[-1][0]), int(batch[-1][1]))
    for (token, chunk), numbers in sorted(expected.items()):
        _report_difference(run, found, key, token, chunk, _bits(numbers), 0)


def _bits(numbers: bytes | bytearray) -> int:
    """The set of the packed numbers as an int whose bit n is document n."""
    bits = 0
    for n in docsets.unpack(numbers):
        bits |= 1 << n
    return bits


def _report_difference(
    run: Run, found: _Findings, key: tuple[str, str], token: str, chunk: int, want: int, held: int
) -> None:
    for kind, bits, says in (
        ("posting_missing", want & ~held, "has the token {token!r} but its posting is missing"),
        ("posting_extra", held & ~want, "is posted under the token {token!r}, which its body does not have"),
    ):
        while bits:
            low = bits & -bits
            bits ^= low
            doc = (chunk << docsets.CHUNK_BITS) | (low.bit_length() - 1)
            named = run(_RECORD_OF_SQL, (*key, doc)) if doc <= INT64_MAX else ()
            who = f"record {named[0][0]!r}" if named else f"document {doc} (no record)"
            found.add(kind, key, f"{who} " + says.format(token=token))


def _compare_expiry(run: Run, found: _Findings, scope: int, key: tuple[str, str]) -> None:
    """Compares the scope's expiry counts with its current rows, reported in (level, bucket)
    order: one pass over the rows counted by expires_at, each level settling a bucket when
    the next one starts."""
    levels = [_LevelCounts(run, scope, key, level) for level in LEVELS]
    for expires_at, rows in _pages(run, _EXPIRIES_SQL, _EXPIRIES_AFTER, key, 1):
        for level in levels:
            level.add(int(expires_at), int(rows))
    for level in levels:
        level.finish()
        found.merge(level.found)


class _LevelCounts:
    """One level of a scope's expiry counts: the rows of each bucket, met in ascending
    order, against the counts the index holds for that level, read in the same order."""

    def __init__(self, run: Run, scope: int, key: tuple[str, str], level: int) -> None:
        self._shift = 8 * level
        self._key, self._level = key, level
        self._held = ((int(b), int(n)) for b, n in _pages(run, _EXPIRY_SQL, _EXPIRY_AFTER, (scope, level), 1))
        self._next_held = next(self._held, None)
        self._bucket: int | None = None
        self._rows = 0
        self.found = _Findings()  # this level's, merged in level order by _compare_expiry

    def add(self, expires_at: int, rows: int) -> None:
        bucket = expires_at >> self._shift
        if bucket != self._bucket:
            self._settle()
            self._bucket, self._rows = bucket, 0
        self._rows += rows

    def finish(self) -> None:
        self._settle()
        self._bucket = None
        while self._next_held is not None:
            self._differs(*self._take_held(), 0)

    def _settle(self) -> None:
        """Compares the bucket counted so far, and any held bucket below it."""
        if self._bucket is None:
            return
        while self._next_held is not None and self._next_held[0] < self._bucket:
            self._differs(*self._take_held(), 0)
        held = 0
        if self._next_held is not None and self._next_held[0] == self._bucket:
            held = self._take_held()[1]
        if held != self._rows:
            self._differs(self._bucket, held, self._rows)

    def _take_held(self) -> tuple[int, int]:
        assert self._next_held is not None
        bucket, rows = self._next_held
        self._next_held = next(self._held, None)
        return bucket, rows

    def _differs(self, bucket: int, held: int, rows: int) -> None:
        self.found.add(
            "expiry_count_wrong",
            self._key,
            f"level {self._level}, bucket {bucket}: the index counts {held} rows, the scope has {rows}",
        )


def _pages(
    run: Run, sql: str, after: str, params: tuple[Any, ...], key_columns: int
) -> Iterator[Sequence[Any]]:
    """The rows of ``sql`` a page of _BATCH at a time, so that a list as long as the store is
    never held: ``sql`` takes ``params`` and then the page size; on every page but the
    first, its ``{after}`` becomes ``after``, which takes the previous page's last row's first
    ``key_columns`` columns, the key of its ORDER BY."""
    page = run(sql.format(after=""), (*params, _BATCH))
    while True:
        yield from page
        if len(page) < _BATCH:
            return
        page = run(sql.format(after=after), (*params, _BATCH, *page[-1][:key_columns]))


def _held(blob: Any) -> tuple[int, str | None]:
    """The set a docset holds (empty if unreadable), and what is wrong with its bytes."""
    if not isinstance(blob, bytes):
        return 0, f"a {type(blob).__name__}, not a docset blob"
    try:
        bits = docsets.decode(blob)
    except docsets.DocsetError as exc:
        return 0, str(exc)
    if not bits:
        return 0, "an empty docset (its row should be gone)"
    if docsets.encode(bits) != blob:
        return bits, "not the canonical encoding of its set"
    return bits, None
