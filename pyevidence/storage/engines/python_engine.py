"""The pure-Python engine: the standard library's sqlite3 and Python scoring.

It needs no compiler and no extension loading, and it is the reference the
native engine is cross-checked against.
"""

from __future__ import annotations

import math
import re
import sqlite3
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ...core.errors import SchemaError, StoreError, from_sqlite, not_utf8
from ...core.hashing import FIRST_PREVIOUS
from ...core.records import Candidate, Hit, IndexRebuild, Record
from ...core.vectors import Vector, Vectors, cosine_distance, squared_norm
from ...ranking.scoring import TokenScorer, rank
from ...ranking.vector_scoring import Scored, python_rank_by_vector
from .. import schema, sql_functions
from ..index import maintain, rebuild, search
from ..paths import DatabasePath, open_failure_hint
from ..row_batches import RowBatches
from ..versions import put_hashes

# A batch of this many records or more is written with the schema's triggers off and its
# CHECK constraints ignored: the writer has validated, hashed and indexed every row itself,
# and it drops a replaced record's vector, the one thing a trigger still did for it. Smaller
# batches keep them, as switching recompiles the connection's statements.
# csrc/evidence_batch.c: BATCH_UNCHECKED_MIN is the same number; the rows are the same
# either way. The sqlite3 module switches triggers from Python 3.12 on (setconfig); before
# it, every batch is written checked: the CHECKs alone gained 2% in batches of 10,000 and
# lost about as much at the switch (docs/performance.md, "Unchecked batches").
UNCHECKED_BATCH_MIN = 256
_SETCONFIG = getattr(sqlite3.Connection, "setconfig", None)
_ENABLE_TRIGGER = getattr(sqlite3, "SQLITE_DBCONFIG_ENABLE_TRIGGER", None)
CAN_WRITE_UNCHECKED = _SETCONFIG is not None and _ENABLE_TRIGGER is not None


class PythonEngine:
    name = "python"

    def __init__(
        self, where: DatabasePath, *, read_only: bool = False, progress: rebuild.Progress | None = None
    ) -> None:
        self._where = where
        # A read-only open goes through a URI (built from the checked absolute path), the
        # only way sqlite3 passes SQLITE_OPEN_READONLY; otherwise the absolute path itself.
        target = where.read_only_uri() if read_only else where.target
        with _opening_errors(where, read_only):
            # isolation_level=None: no implicit transactions; every statement
            # commits on its own unless we BEGIN explicitly.
            self._conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, uri=read_only)
        # The triggers of schema.sql hash every version with evidence_sha256() and check
        # text with evidence_utf8_valid().
        sql_functions.register(self._conn, relay_interrupts=True)
        # 1 while _write's own statements run: the triggers that would recompute its
        # rows step aside (schema.sql); 0 otherwise, as on any raw-SQL connection.
        self._vouching = False
        vouches = sql_functions.relaying(lambda: int(self._vouching))
        self._conn.create_function("evidence_writer_vouches", 0, vouches)
        self._in_write = False  # inside write_transaction(): writes join its transaction
        self._in_snapshot = False  # inside snapshot()
        self._checks_off = False  # schema.sql's checks off for an unchecked batch
        try:
            with _opening_errors(where, read_only):
                schema.prepare(
                    self._query,
                    self._script,
                    where.shown,
                    read_only=read_only,
                    build_index=lambda: self.build_index(progress),
                )
        except BaseException:
            self._conn.close()
            raise

    def _query(self, sql: str) -> Sequence[Sequence[Any]]:
        return self._conn.execute(sql).fetchall()

    def _run(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._conn.execute(sql, _numbered(params)).fetchall()

    def build_index(self, progress: rebuild.Progress | None = None) -> IndexRebuild:
        """Builds the token index from the current rows, inside the open transaction:
        the rows of the generic build (storage/index/rebuild.py), written a batch at a
        time by the engine's own index writer (storage/index/maintain.py)."""
        with _sqlite_errors("building the token index", writing=True):
            return maintain.build(self._conn, progress, batch=rebuild.BATCH_ROWS)

    def reindex(self, progress: rebuild.Progress | None = None) -> IndexRebuild:
        """Rebuilds the token index in one write transaction of its own."""
        with self.write_transaction("reindex"):
            return self.build_index(progress)

    def _script(self, sql: str) -> None:
        # executescript() would COMMIT first; run statements one by one instead so
        # they stay inside the caller's transaction.
        for statement in _statements(sql):
            self._conn.execute(statement)

    def put(self, record: Record, vector: Vector | None = None) -> None:
        if vector is not None:
            self.put_many([record], [vector], operation="put")
            return
        if self._in_write:  # inside write_transaction(): its statements only
            with _sqlite_errors("put", writing=True):
                self._write([record])
            return
        # One put is one write, as the native engine's evidence_store_put reports it:
        # its transaction is its own, and a failed commit is a failed put.
        with _sqlite_errors("put", writing=True):
            try:  # BEGIN inside: an interrupt just after it still rolls back
                self._begin("BEGIN IMMEDIATE")
                self._write([record])
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def put_many(
        self, records: list[Record], vectors: Vectors = None, *, operation: str = "put_many"
    ) -> None:
        if self._in_write:  # inside write_transaction(): its statements only
            with _sqlite_errors(operation, writing=True):
                self._put_rows(records, vectors)
            return
        try:  # BEGIN and COMMIT inside: an interrupt between them and the rows rolls back
            with _sqlite_errors(operation, writing=True):
                self._begin("BEGIN IMMEDIATE")
                self._put_rows(records, vectors)
            self._commit(operation)
        except BaseException:
            self._rollback()
            raise

    def _put_rows(self, records: list[Record], vectors: Sequence[Vector | None] | None) -> None:
        if vectors is None:
            self._write(records)
            return
        # A vector belongs to the version stored just before it, so each record is
        # written before the next one's vector.
        for record, vector in zip(records, vectors, strict=True):
            self._write([record])
            if vector is not None:
                self._conn.execute(schema.VECTOR_PUT_SQL, _vector_params(record, vector))

    def _commit(self, operation: str) -> None:
        with _sqlite_errors(operation, writing=True, during=" while committing"):
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()  # SQLite may keep the transaction open after a failed COMMIT
                raise

    @contextmanager
    def write_transaction(self, operation: str) -> Iterator[None]:
        """Reads and writes inside the block are one write transaction (BEGIN IMMEDIATE):
        no other writer comes between them. An exception rolls all of it back. Inside
        another, it is part of that one."""
        if self._in_write:
            yield
            return
        try:  # BEGIN and COMMIT inside: an interrupt between them and the block rolls back
            with _sqlite_errors(operation, writing=True):
                self._begin("BEGIN IMMEDIATE")
            self._in_write = True
            try:
                yield
            finally:
                self._in_write = False
            self._commit(operation)
        except BaseException:
            self._rollback()
            raise

    def _begin(self, sql: str) -> None:
        """BEGIN, after rolling back a transaction an interrupted call of this engine left
        open (a KeyboardInterrupt between its BEGIN and its try): no call writes into, or
        reads from, a transaction it did not open. Only this engine begins transactions on
        its connection (store.query() is read-only), so an open one here is such a leftover."""
        self.end_interrupted()
        self._conn.execute(sql)

    def end_interrupted(self) -> None:
        """What a call interrupted twice (in its own cleanup) may have left: a transaction
        open, the schema's checks off for an unchecked batch, the writer's vouching on.
        EvidenceStore calls it as each call takes the store's lock, when none of the
        engine's own transactions is open."""
        if self._in_write or self._in_snapshot:
            return
        self._vouching = False
        with _sqlite_errors("ending what an interrupted call left"):
            if self._checks_off:
                self._schema_checks(on=True)
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

    def _rollback(self) -> None:
        """Ends the open transaction, if an error has not already ended it."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _write(self, records: list[Record]) -> None:
        """The batch writer (the same steps as csrc/evidence_batch.c): the rows that
        schema.PUT_SQL's trigger would write for each record in turn. Each tenant's
        chain head and each record's latest version are read once; the versions are
        appended in chain order; each record's current row is written once, for its
        last version, in (tenant, revision, expires_at, record_id) order."""
        execute = self._conn.execute
        heads: dict[str, tuple[int, str]] = {}
        latest = self._latest_versions(records)
        new_records = {key for key, (seq, _, _) in latest.items() if seq == 0}  # no current row to replace
        revived = [key for key, (_, _, forgotten) in latest.items() if forgotten]
        appended: list[tuple[Any, ...]] = []
        current: dict[tuple[str, str], tuple[Any, ...]] = {}
        for r in records:
            tenant, record_id = r.tenant, r.record_id
            head = heads.get(tenant)
            if head is None:
                head = execute(schema.CHAIN_HEAD_SQL, (tenant,)).fetchone() or (0, FIRST_PREVIOUS)
            key = (tenant, record_id)
            last_seq, previous, _ = latest[key]
            seq = last_seq + 1
            chain_seq = head[0] + 1
            content, chain = put_hashes(
                head[1], chain_seq, seq, tenant, record_id, r.revision, r.kind, r.body, r.source, r.expires_at
            )
            heads[tenant], latest[key] = (chain_seq, chain.hex()), (seq, chain_seq, False)
            appended.append(
                (
                    tenant,
                    chain_seq,
                    record_id,
                    seq,
                    previous,
                    r.revision,
                    r.kind,
                    r.body,
                    r.source,
                    r.expires_at,
                    content,  # the 32 bytes the hex of evidence_sha256() stands for
                    chain,
                )
            )
            # the current row (tenant, revision, expires_at, record_id, chain_seq), with
            # the body the token index reads after it
            current[key] = (tenant, r.revision, r.expires_at, record_id, chain_seq, r.body)
        in_key_order: list[tuple[Any, ...]] = sorted(current.values(), key=_current_key)
        unchecked = CAN_WRITE_UNCHECKED and len(records) >= UNCHECKED_BATCH_MIN
        self._vouching = True
        try:
            if unchecked:
                self._schema_checks(on=False)
            _VERSION_APPEND.run(self._conn, appended)
            self._conn.executemany(schema.FORGOTTEN_DROP_SQL, revived)
            # the index first: it reads the current rows these replace
            index = maintain.IndexBatch(self._conn)
            numbers = index.replace(in_key_order, new_records)
            index.finish()
            _CURRENT_UPSERT.run(
                self._conn, [(*row[:4], doc, row[4]) for row, doc in zip(in_key_order, numbers, strict=True)]
            )
            if unchecked:  # what the trigger evidence_vectors_follow_puts would do
                replaced = [(row[0], row[3]) for row in in_key_order if (row[0], row[3]) not in new_records]
                self._conn.executemany(schema.VECTOR_DROP_SQL, replaced)
        finally:
            self._vouching = False
            if unchecked:  # back on whatever happened: every later statement is checked in full
                self._schema_checks(on=True)

    def _schema_checks(self, *, on: bool) -> None:
        """Turns schema.sql's triggers and CHECK constraints off or back on for this
        connection (csrc/evidence_batch.c does the same); only if CAN_WRITE_UNCHECKED."""
        assert _SETCONFIG is not None and _ENABLE_TRIGGER is not None
        if not on:
            self._checks_off = True  # first: an interrupt from here on is seen by end_interrupted
        _SETCONFIG(self._conn, _ENABLE_TRIGGER, on)
        self._conn.execute(f"PRAGMA ignore_check_constraints = {int(not on)}")
        if on:
            self._checks_off = False

    def _latest_versions(self, records: list[Record]) -> dict[tuple[str, str], tuple[int, int | None, bool]]:
        """The latest version of each record of the batch: its seq (0: none yet), its
        chain_seq (None: none yet) and whether it is a tombstone. schema.LATEST_VERSION_SQL
        for a tenant's only record, else one statement per _SEQ_CHUNK records of a tenant
        (the same lookups over IN lists)."""
        latest: dict[tuple[str, str], tuple[int, int | None, bool]] = {}
        by_tenant: dict[str, list[str]] = {}
        for r in records:
            if (r.tenant, r.record_id) not in latest:
                latest[r.tenant, r.record_id] = (0, None, False)
                by_tenant.setdefault(r.tenant, []).append(r.record_id)
        for tenant, ids in by_tenant.items():
            if len(ids) == 1:  # one put: a 200-id IN list would cost more than the lookup
                row = self._conn.execute(
                    schema.LATEST_VERSION_SQL, (tenant, tenant, ids[0], tenant, ids[0])
                ).fetchone()
                if row is not None:
                    latest[tenant, ids[0]] = (row[0], row[1], bool(row[2]))
                continue
            for i in range(0, len(ids), _SEQ_CHUNK):
                chunk = ids[i : i + _SEQ_CHUNK]
                chunk += chunk[:1] * (_SEQ_CHUNK - len(chunk))  # one statement text: cached
                rows = self._conn.execute(_LATEST_VERSIONS_SQL, (tenant, *chunk, tenant, *chunk, tenant))
                for record_id, seq, chain_seq, forgotten in rows:
                    latest[tenant, record_id] = (seq, chain_seq, bool(forgotten))
        return latest

    def forget(self, tenant: str, record_id: str) -> bool:
        with _sqlite_errors("forget", writing=True):
            self.end_interrupted()
            cursor = self._conn.execute(schema.FORGET_SQL, _numbered((tenant, record_id)))
        return cursor.rowcount > 0

    def checkpoint_erasure(self) -> bool:
        """schema.ERASURE_CHECKPOINT_SQL, without waiting: True when the WAL no longer holds
        any frame."""
        try:
            self._conn.execute(schema.ERASURE_NO_WAIT_SQL)
            try:
                row = self._conn.execute(schema.ERASURE_CHECKPOINT_SQL).fetchone()
            finally:
                self._conn.execute(schema.BUSY_TIMEOUT_SQL)
        except sqlite3.Error:  # the forget stands; the store tries again (EvidenceStore.close)
            return False
        return row is None or row[0] == 0

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Runs one read statement of pyevidence's own (pyevidence/storage/versions.py)."""
        with _sqlite_errors("reading the history"):
            return [tuple(row) for row in self._conn.execute(sql, _numbered(params)).fetchall()]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside the block see one consistent state of the database."""
        if self._in_write or self._in_snapshot:  # a transaction of this engine's is open: one state
            yield
            return
        try:  # BEGIN inside: an interrupt just after it still ends the read
            with _sqlite_errors("reading the history"):
                self._begin("BEGIN")
            self._in_snapshot = True
            yield
        finally:
            self._in_snapshot = False
            with _sqlite_errors("reading the history"):
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

    def candidates(self, tenant: str, revision: str, now: int) -> list[Candidate]:
        with _sqlite_errors("retrieve"):
            rows = self._conn.execute(schema.ELIGIBLE_SQL, _numbered((tenant, revision, now))).fetchall()
        return [Candidate(*row) for row in rows]

    def rank_by_tokens(
        self, tenant: str, revision: str, now: int, query: str, limit: int, *, method: str = "index"
    ) -> tuple[tuple[Hit, ...], int]:
        """The token ranking's hits and eligible count: through the token index
        (storage/index/search.py), or with method="scan" by scoring every eligible row
        with TokenScorer, the reference the index is checked against."""
        if method == "scan":
            candidates = self.candidates(tenant, revision, now)
            return rank(query, candidates, TokenScorer(), limit), len(candidates)
        with _sqlite_errors("retrieve"):
            try:
                return search.search(self._conn, tenant, revision, now, query, limit)
            except search.IndexOutOfStep as exc:  # as the native engine says it (SQLITE_CORRUPT)
                raise from_sqlite(_SQLITE_CORRUPT, f"retrieve failed: {exc}") from None

    def vector_candidates(
        self, tenant: str, revision: str, now: int, query: Vector
    ) -> Callable[[], list[Scored]]:
        """Reads every eligible record with its vector of ``query``'s model now; the
        function returned computes the cosine distances (None: no vector), and may run
        after the store's lock is released: it touches no connection."""
        with _sqlite_errors("retrieve"):
            rows = self._conn.execute(
                schema.VECTOR_ROWS_SQL, _numbered((tenant, revision, now, query.model, query.dims))
            ).fetchall()

        return lambda: scored_by_distance(rows, query)

    def rank_by_vector(
        self, tenant: str, revision: str, now: int, query: Vector, min_similarity: float, limit: int
    ) -> Callable[[], tuple[tuple[Hit, ...], int, int]]:
        read = self.vector_candidates(tenant, revision, now, query)
        return lambda: python_rank_by_vector(read(), min_similarity, limit)

    def backup(self, dest: str) -> None:
        """Copies the database into ``dest``: an absolute path to a new empty file."""
        with _sqlite_errors("backup"):
            target = sqlite3.connect(dest)
            try:
                self._conn.backup(target)  # all pages in one step: one consistent snapshot
            finally:
                target.close()

    def close(self) -> None:
        self._conn.close()


def scored_by_distance(rows: Sequence[Sequence[Any]], query: Vector) -> list[Scored]:
    """Each row of VECTOR_ROWS_SQL with its cosine distance to ``query`` (None: no vector),
    computed in Python as sqlite-vec computes it; for the engines without sqlite-vec."""
    components = query.components()
    norm = squared_norm(components)
    unpack = struct.Struct(f"<{query.dims}f").unpack
    scored = []
    for row in rows:
        distance = None if row[8] is None else cosine_distance(components, norm, unpack(row[8]))
        if distance is not None and math.isnan(distance):
            distance = None  # as SQLite stores a NaN result: NULL
        scored.append(Scored(Candidate(*row[:8]), distance, row[8] is not None))
    return scored


@contextmanager
def _sqlite_errors(doing: str, *, writing: bool = False, during: str = "") -> Iterator[None]:
    """Turns sqlite3's exceptions into pyevidence's, the same mapping as the native engine;
    one that stands for a KeyboardInterrupt (or SystemExit) raised inside a SQL function is
    that exception again (sql_functions.interrupted)."""
    sql_functions.clear_interrupt()
    try:
        yield
    except sqlite3.Error as exc:
        relayed = sql_functions.take_interrupt()
        if relayed is not None:
            raise relayed from None
        undecodable = _NOT_UTF8.match(str(exc))
        if undecodable:  # the native engine's words for it (not_utf8), whatever the call was doing
            raise StoreError(not_utf8(f"column {undecodable.group(1)!r}")) from None
        code = getattr(exc, "sqlite_errorcode", 1)
        raise from_sqlite(code, f"{doing} failed{during}: {exc}", writing=writing) from None


_SQLITE_CORRUPT = 11
# sqlite3's message when a stored text is not UTF-8 (text_factory=str).
_NOT_UTF8 = re.compile(r"Could not decode to UTF-8 column '([^']*)'")


@contextmanager
def _opening_errors(where: DatabasePath, read_only: bool) -> Iterator[None]:
    """While opening: the failure named as one to open ``where``, with what to do about it
    (a KeyboardInterrupt a SQL function met during an upgrade is that interrupt again)."""
    sql_functions.clear_interrupt()
    try:
        yield
    except sqlite3.Error as exc:
        relayed = sql_functions.take_interrupt()
        if relayed is not None:
            raise relayed from None
        code = getattr(exc, "sqlite_errorcode", 1)
        hint = open_failure_hint(code, where, read_only=read_only)
        raise from_sqlite(code, f"opening {where.shown} failed: {exc}{hint}") from None


def _statements(sql: str) -> list[str]:
    """Split SQL text into complete statements, using SQLite's own notion of one."""
    statements, pending = [], ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending)
            pending = ""
    if pending.strip() and not _only_comments(pending):
        raise SchemaError("schema.sql ends with an incomplete statement")
    return statements


_SEQ_CHUNK = 200
_VERSION_APPEND = RowBatches(schema.VERSION_APPEND_SQL)
_CURRENT_UPSERT = RowBatches(schema.CURRENT_UPSERT_SQL)
_IDS = ", ".join("?" * _SEQ_CHUNK)
# schema.LATEST_VERSION_SQL for _SEQ_CHUNK records of one tenant.
_LATEST_VERSIONS_SQL = (
    "SELECT latest.record_id, v.seq, latest.chain_seq, latest.forgotten FROM"
    " (SELECT record_id, chain_seq, 0 AS forgotten"
    f" FROM evidence_current INDEXED BY evidence_current_by_record WHERE tenant = ? AND record_id IN ({_IDS})"
    " UNION ALL"
    " SELECT record_id, chain_seq, 1 FROM evidence_forgotten"
    f" WHERE tenant = ? AND record_id IN ({_IDS})) AS latest"
    " JOIN evidence_versions AS v ON v.tenant = ? AND v.chain_seq = latest.chain_seq"
)


def _current_key(row: tuple[Any, ...]) -> tuple[str, str, int, str]:
    """The order a batch writes its current rows in (tenant, revision, expires_at, record_id),
    in which the index numbers the new ones (csrc/evidence_batch.c sorts the same). Python
    orders str by code point, which is the UTF-8 byte order SQLite's BINARY uses."""
    return row[0], row[1], row[2], row[3]


def _numbered(params: Sequence[Any]) -> dict[str, Any]:
    """Arguments for pyevidence's SQL, whose placeholders are numbered (?1, ?2...) so
    that C binds them by index: by number, as sqlite3 wants them since Python 3.12."""
    return {str(number): value for number, value in enumerate(params, 1)}


def _vector_params(record: Record, vector: Vector) -> dict[str, Any]:
    return _numbered((record.tenant, record.record_id, vector.model, vector.dims, vector.blob))


def _only_comments(sql: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in sql.splitlines())
