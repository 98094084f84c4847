"""The native engine: thin cffi bindings over csrc/evidence_store.c.

The whole request runs in C on a connection this module opens through the
SQLite C API, with token_overlap() and evidence_eligible registered on it
directly (no extension loading, so it works on Pythons whose sqlite3 cannot
load extensions). Python validates arguments (pyevidence.core.validation, shared
with the Python engine) and converts results.

The GIL is released during every C call (cffi's API mode does so), so other
threads run while SQLite works; EvidenceStore's lock keeps one call at a time
on a connection. Memory: C allocates every result; this module copies it into
Python objects and frees it in a ``finally`` before returning.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ...core.errors import EngineUnavailableError, EvidenceError, StoreError, from_sqlite, not_utf8
from ...core.records import Candidate, Hit, IndexRebuild, Record
from ...core.vectors import Vector, Vectors
from ...ranking.scoring import hit_from
from ...ranking.vector_scoring import Scored
from .. import schema
from .._native import ffi, lib
from ..index import rebuild
from ..paths import DatabasePath, open_failure_hint

try:  # the C function itself: signal.getsignal() also looks the handler up as an enum (2 µs a call)
    from _signal import getsignal as _getsignal  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - CPython has it
    from signal import getsignal as _getsignal
from signal import SIGINT, default_int_handler

SQLITE_OK = 0
_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL = 1, 2, 3, 4, 5


def _utf8(text: str) -> bytes:
    return str.encode(text, "utf-8")  # str's own: not a subclass's encode()


class NativeEngine:
    name = "native"

    def __init__(
        self, where: DatabasePath, *, read_only: bool = False, progress: rebuild.Progress | None = None
    ) -> None:
        self._where = where
        handle = ffi.new("EvidenceStore **")
        rc = lib.evidence_store_open(os.fsencode(where.target), int(read_only), handle)
        # Collected without close(), the store still closes its connection (close() does it first).
        self._store = ffi.gc(handle[0], lib.evidence_store_close)
        self._sqlite_vec = False
        self._in_write = False  # inside write_transaction()
        self._in_snapshot = False  # inside snapshot()
        # While opening, every failure is reported as a failure to open this file.
        self._opening: str | None = f"opening {where.shown}"
        self._read_only = read_only
        try:
            self._check(rc, "open")
            schema.prepare(
                self.query,
                self._script,
                where.shown,
                read_only=read_only,
                build_index=lambda: self.build_index(progress),
            )
        except BaseException:
            self.close()
            raise
        self._opening = None

    def _message(self) -> str:
        return str(ffi.string(lib.evidence_store_errmsg(self._store)).decode("utf-8", "replace"))

    def _check(self, rc: int, doing: str, *, writing: bool = False, during: str = "") -> None:
        if rc == SQLITE_OK:
            return
        if self._opening:
            hint = open_failure_hint(rc, self._where, read_only=self._read_only)
            raise from_sqlite(rc, f"{self._opening} failed: {self._message()}{hint}")
        raise from_sqlite(rc, f"{doing} failed{during}: {self._message()}", writing=writing)

    def build_index(self, progress: rebuild.Progress | None = None) -> IndexRebuild:
        """Builds the token index from the current rows, inside the open transaction, in C
        (evidence_store_reindex): the rows storage/index/rebuild.py's generic build writes,
        about fifty times faster. ``progress(done, total)`` hears how far it is; an
        exception it raises stops the build, which then changes nothing, and is raised here."""
        started = time.monotonic()
        raised: list[BaseException] = []
        handle = ffi.new_handle((progress, raised))
        callback = lib.evidence_reindex_progress if progress is not None else ffi.NULL
        rc = lib.evidence_store_reindex(self._store, callback, handle)
        if raised:
            raise raised[0]
        self._check(rc, "reindex", writing=True)
        return rebuild.summary(self.query, time.monotonic() - started)

    def reindex(self, progress: rebuild.Progress | None = None) -> IndexRebuild:
        """Rebuilds the token index in one write transaction of its own."""
        with self.write_transaction("reindex"):
            return self.build_index(progress)

    def _script(self, sql: str) -> None:
        data = _utf8(sql)
        self._check(lib.evidence_store_exec(self._store, data, len(data)), "SQL")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Runs one SQL statement (reads or writes) and returns its rows: for pyevidence's own use."""
        return self.run(sql, params, read_only=False)[1]

    def run(
        self, sql: str, params: Sequence[Any], *, read_only: bool
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Runs one statement with bound parameters; returns (column names, rows)."""
        data = _utf8(sql)
        values = ffi.new("EvidenceValue[]", max(len(params), 1))
        keep = [_bind(values[i], param) for i, param in enumerate(params)]  # alive during the call
        out = ffi.new("EvidenceTable **")
        rc = lib.evidence_store_query(self._store, data, len(data), values, len(params), read_only, out)
        del keep
        self._check(rc, "query")
        table = out[0]
        try:
            n_cols, n_rows = table.n_cols, table.n_rows
            names = tuple(ffi.string(table.names[j]).decode("utf-8", "replace") for j in range(n_cols))
            cells = [_value(table.cells[i], names[i % n_cols]) for i in range(n_rows * n_cols)]
        finally:
            lib.evidence_table_free(table)
        return names, [tuple(cells[r * n_cols : (r + 1) * n_cols]) for r in range(n_rows)]

    def put(self, record: Record, vector: Vector | None = None) -> None:
        if vector is None:
            self.end_interrupted()  # the C call's transaction is its own, unless one is open
            self._write([record], "put")
        else:
            self.put_many([record], [vector], operation="put")

    def put_many(
        self, records: list[Record], vectors: Vectors = None, *, operation: str = "put_many"
    ) -> None:
        if self._in_write:  # inside write_transaction(): its statements only
            self._put_rows(records, vectors, operation)
            return
        with self.write_transaction(operation):
            self._put_rows(records, vectors, operation)

    def _put_rows(
        self, records: list[Record], vectors: Sequence[Vector | None] | None, operation: str
    ) -> None:
        if vectors is None:
            self._write(records, operation)
            return
        # A vector belongs to the version stored just before it, so each record is
        # written before the next one's vector.
        for record, vector in zip(records, vectors, strict=True):
            self._write([record], operation)
            if vector is not None:
                params = (record.tenant, record.record_id, vector.model, vector.dims, vector.blob)
                self.run(schema.VECTOR_PUT_SQL, params, read_only=False)

    @contextmanager
    def write_transaction(self, operation: str) -> Iterator[None]:
        """Reads and writes inside the block are one write transaction (BEGIN IMMEDIATE):
        no other writer comes between them. An exception rolls all of it back. Inside
        another, it is part of that one."""
        if self._in_write:
            yield
            return
        try:  # BEGIN and COMMIT inside: an interrupt between them and the block rolls back
            self._begin("BEGIN IMMEDIATE;", operation)
            self._in_write = True
            try:
                yield
            finally:
                self._in_write = False
            rc = lib.evidence_store_exec(self._store, b"COMMIT;", 7)
            if rc != SQLITE_OK:
                message = self._message()
                raise from_sqlite(rc, f"{operation} failed while committing: {message}", writing=True)
        except BaseException:
            self._rollback()  # also after a failed COMMIT, which may leave the transaction open
            raise

    def _begin(self, sql: str, doing: str) -> None:
        """BEGIN, after rolling back a transaction an interrupted call of this engine left
        open (a KeyboardInterrupt between its BEGIN and its try): no call writes into, or
        reads from, a transaction it did not open. Only this engine begins transactions on
        its connection (store.query() is read-only), so an open one here is such a leftover."""
        self.end_interrupted()
        self._exec(sql, doing)

    def watch_ctrl_c(self) -> None:
        """From here until unwatch_ctrl_c(), Ctrl-C stops a C call as it runs, not only once it
        returns (csrc/evidence_sigint.c): its statement fails, rolled back, and KeyboardInterrupt
        is raised as the call returns. Only in the main thread, which handles signals, and only
        while SIGINT raises KeyboardInterrupt: a program's own SIGINT handler acts as before."""
        if self._store == ffi.NULL:
            return
        if (
            threading.get_ident() == threading.main_thread().ident
            and _getsignal(SIGINT) is default_int_handler
        ):
            lib.evidence_store_watch_sigint(self._store)
        else:
            lib.evidence_store_unwatch_sigint(self._store)  # a watch an interrupt left behind

    def unwatch_ctrl_c(self) -> None:
        if self._store != ffi.NULL:
            lib.evidence_store_unwatch_sigint(self._store)

    def end_interrupted(self) -> None:
        """A transaction a call interrupted twice (in its own cleanup) left open. EvidenceStore
        calls it as each call takes the store's lock, when none of the engine's own is open."""
        if not (self._in_write or self._in_snapshot) and lib.evidence_store_in_transaction(self._store):
            self._rollback()

    def _exec(self, sql: str, doing: str) -> None:
        data = _utf8(sql)
        self._check(lib.evidence_store_exec(self._store, data, len(data)), doing, writing=True)

    def _rollback(self) -> None:
        """Ends the open transaction; nothing to do when an error has already ended it."""
        if lib.evidence_store_in_transaction(self._store):
            lib.evidence_store_exec(self._store, b"ROLLBACK;", 9)

    def _write(self, records: list[Record], doing: str) -> None:
        """One C call for the whole batch (csrc/evidence_batch.c numbers, hashes and
        chains the versions and writes the rows), the records packed into one buffer."""
        fields = [
            _utf8(text)
            for r in records
            for text in (r.tenant, r.record_id, r.revision, r.kind, r.body, r.source)
        ]
        data = b"".join(fields)
        lengths = ffi.new("size_t[]", [len(f) for f in fields])
        expires_at = ffi.new("int64_t[]", [r.expires_at for r in records])
        rc = lib.evidence_store_put_many(self._store, data, len(data), lengths, expires_at, len(records))
        self._check(rc, doing, writing=True)

    def forget(self, tenant: str, record_id: str) -> bool:
        t, r = _utf8(tenant), _utf8(record_id)
        deleted = ffi.new("int *")
        self.end_interrupted()
        self._check(
            lib.evidence_store_forget(self._store, t, len(t), r, len(r), deleted), "forget", writing=True
        )
        return bool(deleted[0])

    def checkpoint_erasure(self) -> bool:
        """schema.ERASURE_CHECKPOINT_SQL, without waiting: True when the WAL no longer holds
        any frame."""
        try:
            self.run(schema.ERASURE_NO_WAIT_SQL, (), read_only=False)
            try:
                rows = self.run(schema.ERASURE_CHECKPOINT_SQL, (), read_only=False)[1]
            finally:
                self.run(schema.BUSY_TIMEOUT_SQL, (), read_only=False)
        except EvidenceError:  # the forget stands; the store tries again (EvidenceStore.close)
            return False
        return not rows or rows[0][0] == 0

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Runs one read statement of pyevidence's own (pyevidence/storage/versions.py, the
        index check): constant text, so it runs without the read-only gate, whose checks are
        for a host's SQL, and its prepared statement is kept (csrc/evidence_stmt_cache.c)."""
        return self.run(sql, params, read_only=False)[1]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside the block see one consistent state of the database."""
        if self._in_write or self._in_snapshot:  # a transaction of this engine's is open: one state
            yield
            return
        try:  # BEGIN inside: an interrupt just after it still ends the read
            self._begin("BEGIN;", "reading the history")
            self._in_snapshot = True
            yield
        finally:
            self._in_snapshot = False
            if lib.evidence_store_in_transaction(self._store):
                self._script("COMMIT;")

    def rank_by_tokens(
        self, tenant: str, revision: str, now: int, query: str, limit: int, *, method: str = "index"
    ) -> tuple[tuple[Hit, ...], int]:
        """The token ranking's hits and eligible count: through the token index
        (evidence_store_search), or with method="scan" by scoring every eligible row
        (evidence_store_retrieve), the reference the index is checked against."""
        t, v, q = _utf8(tenant), _utf8(revision), _utf8(query)
        out = ffi.new("EvidenceRows **")
        ranker = lib.evidence_store_retrieve if method == "scan" else lib.evidence_store_search
        rc = ranker(self._store, t, len(t), v, len(v), now, q, len(q), limit, out)
        self._check(rc, "retrieve")
        try:
            rows = [out[0].rows[i] for i in range(out[0].n_rows)]
            hits = tuple(hit_from(_candidate(row), int(row.score)) for row in rows)
            return hits, int(out[0].eligible_count)
        finally:
            lib.evidence_rows_free(out[0])

    def candidates(self, tenant: str, revision: str, now: int) -> list[Candidate]:
        t, v = _utf8(tenant), _utf8(revision)
        out = ffi.new("EvidenceRows **")
        self._check(lib.evidence_store_candidates(self._store, t, len(t), v, len(v), now, out), "retrieve")
        try:
            return [_candidate(out[0].rows[i]) for i in range(out[0].n_rows)]
        finally:
            lib.evidence_rows_free(out[0])

    def _load_sqlite_vec(self) -> None:
        """Loads sqlite-vec into this connection, once: vec_distance_cosine() runs the ranking."""
        if self._sqlite_vec:
            return
        try:
            import sqlite_vec
        except ImportError:
            raise EngineUnavailableError(
                "vector ranking on the native engine runs sqlite-vec inside SQLite, and sqlite-vec is "
                "not installed: in the pyevidence checkout, pip install '.[vectors]' (or open the store "
                "with engine='python')"
            ) from None
        path = os.fsencode(sqlite_vec.loadable_path())
        self._check(
            lib.evidence_store_load_extension(self._store, path, b"sqlite3_vec_init"), "loading sqlite-vec"
        )
        self._sqlite_vec = True

    def vector_candidates(
        self, tenant: str, revision: str, now: int, query: Vector
    ) -> Callable[[], list[Scored]]:
        """Every eligible record with sqlite-vec's cosine distance to ``query`` (None: no
        vector), computed now inside SQLite; the function returned hands it over."""
        self._load_sqlite_vec()
        params = (tenant, revision, now, query.model, query.dims, query.blob)
        rows = self.run(schema.VECTOR_CANDIDATES_SQL, params, read_only=True)[1]
        scored = [Scored(Candidate(*row[:8]), row[8], bool(row[9])) for row in rows]
        return lambda: scored

    def rank_by_vector(
        self, tenant: str, revision: str, now: int, query: Vector, min_similarity: float, limit: int
    ) -> Callable[[], tuple[tuple[Hit, ...], int, int]]:
        """vector_scoring's ranking rule, run now inside SQLite: the counts and the hits in
        one snapshot; the function returned hands them over."""
        self._load_sqlite_vec()
        scope = (tenant, revision, now, query.model, query.dims)
        with self.snapshot():
            ((eligible, unranked),) = self.run(schema.VECTOR_COUNT_SQL, scope, read_only=True)[1]
            rows = self.run(
                schema.VECTOR_RANK_SQL, (*scope, query.blob, min_similarity, limit), read_only=True
            )[1]
        ranked = tuple(hit_from(Candidate(*row[:8]), row[8]) for row in rows), int(eligible), int(unranked)
        return lambda: ranked

    def backup(self, dest: str) -> None:
        """Copies the database into ``dest``: an absolute path to a new empty file."""
        self._check(lib.evidence_store_backup(self._store, os.fsencode(dest)), "backup")

    def close(self) -> None:
        if self._store != ffi.NULL:
            ffi.release(self._store)  # runs evidence_store_close now, and never again
            self._store = ffi.NULL


@ffi.def_extern()  # type: ignore[untyped-decorator]
def evidence_reindex_progress(handle: Any, done: int, total: int) -> int:
    """evidence_store_reindex's progress callback: calls the caller's function; an
    exception it raises is kept for rebuild_index to raise, and stops the rebuild."""
    progress, raised = ffi.from_handle(handle)
    try:
        progress(int(done), int(total))
    except BaseException as exc:  # handed back to build_index, never lost
        raised.append(exc)
        return 1
    return 0


def _candidate(row: Any) -> Candidate:
    """Copies one EvidenceRow out of C memory."""
    return Candidate(
        record_id=_text(row.record_id, row.record_id_len, "column 'record_id'"),
        revision=_text(row.revision, row.revision_len, "column 'revision'"),
        kind=_text(row.kind, row.kind_len, "column 'kind'"),
        body=_text(row.body, row.body_len, "column 'body'"),
        source=_text(row.source, row.source_len, "column 'source'"),
        expires_at=int(row.expires_at),
        version=int(row.version),
        content_hash=_text(row.content_hash, row.content_hash_len, "column 'content_hash'"),
    )


def _text(pointer: Any, length: int, what: str) -> str:
    """The UTF-8 text at pointer; ``what`` names it in the error (any read can meet it)."""
    try:
        return str(ffi.unpack(pointer, length).decode("utf-8"))
    except UnicodeDecodeError as exc:
        # Only raw SQL can store invalid UTF-8 (CAST(x'ff' AS TEXT)); put() never does.
        del exc
        raise StoreError(not_utf8(what)) from None


def _bind(slot: Any, value: Any) -> Any:
    """Fills an EvidenceValue from a validated Python value; returns what must stay alive."""
    if value is None:
        slot.type = _NULL
    elif isinstance(value, int):
        slot.type, slot.i = _INTEGER, value
    elif isinstance(value, float):
        slot.type, slot.d = _FLOAT, value
    else:
        data = _utf8(value) if isinstance(value, str) else value
        buffer = ffi.from_buffer(data)
        slot.type, slot.z, slot.n = (_TEXT if isinstance(value, str) else _BLOB), buffer, len(data)
        return buffer
    return None


def _value(cell: Any, column: str) -> Any:
    if cell.type == _INTEGER:
        return int(cell.i)
    if cell.type == _FLOAT:
        return float(cell.d)
    if cell.type == _TEXT:
        return _text(cell.z, cell.n, f"column {column!r}")
    if cell.type == _BLOB:
        return bytes(ffi.unpack(cell.z, cell.n))
    return None
