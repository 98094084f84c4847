"""EvidenceStore: the one public API over both engines."""

from __future__ import annotations

import importlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from types import TracebackType
from typing import Any, TypeVar

from . import forks
from .core import validation
from .core.errors import (
    EngineFallbackWarning,
    EngineUnavailableError,
    ScorerError,
    StoreError,
    ValidationError,
)
from .core.limits import DEFAULT_LIMITS, Limits
from .core.records import (
    Candidate,
    IndexCheck,
    IndexRebuild,
    QueryResult,
    Record,
    Retrieval,
    Verification,
    Version,
    VersionLookup,
)
from .core.strict_json import shown
from .core.vectors import Embedder, Vector, embedding_list, vector
from .ranking.scoring import Scorer, SetRanker, TokenScorer, rank, scorer_name
from .ranking.send_gate import Requests, StillCurrent, StoreGate, current_gate
from .ranking.vector_scoring import InStoreRanker
from .storage import paths, versions
from .storage.engines.python_engine import PythonEngine
from .storage.index import check as index_check
from .storage.index.rebuild import Progress
from .storage.paths import StorePath

ENGINES = ("auto", "native", "python", "cluster")
T = TypeVar("T")
# Before each try to take a forget's text out of the WAL (EvidenceStore._erase_from_journal):
# at once, then about a third of a second in all, time for a retrieve of another connection
# to end, spent with this store's lock held.
_ERASURE_PAUSES = (0.0, 0.01, 0.05, 0.1, 0.2)
_MAX_ERASURE_WAIT = 3600  # finish_erasure's longest timeout, in seconds


def _native_engine_class() -> Any:
    """The native engine's class; EngineUnavailableError saying how to get it if not built."""
    try:
        return importlib.import_module(".storage.engines.native_engine", __package__).NativeEngine
    except ImportError as exc:
        raise EngineUnavailableError(
            f"the native engine is not built in this installation ({exc}); reinstall with a C "
            "compiler and the SQLite headers present (Debian/Ubuntu: apt-get install gcc "
            "libsqlite3-dev) and past pip's cache, which may hold a build without it (pip install "
            "--no-cache-dir --force-reinstall), or use engine='python'"
        ) from None


def native_available() -> bool:
    """Whether the compiled native engine was built for this installation."""
    try:
        _native_engine_class()
    except EngineUnavailableError:
        return False
    return True


def fallback_reason() -> str | None:
    """Why engine="auto" runs the Python engine here, or None when it runs the native one."""
    try:
        _native_engine_class()
    except EngineUnavailableError as exc:
        return f"engine='auto' runs the Python engine (same results, slower): {exc}"
    return None


_fallback_warned = False


def _warn_fallback_once(reason: str) -> None:
    """Said once per process (an EngineFallbackWarning), not on every store opened."""
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        warnings.warn(reason, EngineFallbackWarning, stacklevel=4)


def _open_engine(path: StorePath, engine: str, read_only: bool, progress: Progress | None) -> Any:
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValidationError("engine", f"must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "cluster" or paths.is_cluster_url(path):
        # A cluster's URL in place of the file (storage/engines/cluster_engine.py).
        return importlib.import_module(".storage.engines.cluster_engine", __package__).open_cluster(
            path, engine, read_only
        )
    engine_class: Any = PythonEngine
    if engine == "native":
        engine_class = _native_engine_class()
    elif engine == "auto":
        reason = fallback_reason()
        if reason is None:
            engine_class = _native_engine_class()
        else:
            _warn_fallback_once(reason)
    # The path rule (pyevidence/storage/paths.py) is checked after the engine is known to exist.
    where = paths.database(path, read_only=read_only)
    return engine_class(where, read_only=read_only, progress=progress)


class EvidenceStore:
    """A scoped evidence memory in one SQLite database.

    ``path`` is a file (created with the schema if absent, reopened with its data
    intact otherwise) or ``":memory:"``: a plain file name (str, bytes or
    os.PathLike), never empty, never a ``file:`` URI, and if it exists a regular
    file (pyevidence/storage/paths.py). ``engine`` is ``"python"``, ``"native"`` or
    ``"auto"`` (native when built, else python with an EngineFallbackWarning, once
    per process); ``store.engine`` tells which one runs. ``limits`` caps the size
    of texts it accepts (see Limits). With ``read_only=True`` an existing store is
    opened as it is: retrieve, query and backup work, put, put_many and forget raise
    StoreError. With an ``embedder`` every put also stores the body's vector, for
    VectorScorer. ``progress``, if given, is called as ``progress(done, total)`` while
    the token index is built from the stored rows: when opening upgrades an older file
    (docs/token-index.md) and by ``reindex()``. A store may be shared between threads: calls on one store are
    serialised by a lock. Use it as a context manager or call ``close()``; a store
    collected unclosed closes its connection then, with a ResourceWarning, as
    sqlite3 does. A store does not cross a fork: in a forked child every call on it
    raises StoreError, and so does opening its file there (pyevidence/forks.py).
    """

    def __init__(
        self,
        path: StorePath,
        *,
        engine: str = "auto",
        limits: Limits = DEFAULT_LIMITS,
        read_only: bool = False,
        embedder: Embedder | None = None,
        progress: Progress | None = None,
    ) -> None:
        self._closed = True  # until the engine is open: nothing for __del__ to close
        self._inherited_from: int | None = None  # set in a forked child (forks.py): every call refused
        shown, target = paths.checked_name(path)
        if not isinstance(limits, Limits):
            raise ValidationError("limits", f"must be a pyevidence.Limits, got {type(limits).__name__}")
        validation.flag("read_only", read_only)
        if read_only and target == paths.MEMORY:
            raise ValidationError("read_only", "an in-memory database cannot be opened read-only")
        if embedder is not None and not isinstance(embedder, Embedder):
            raise ValidationError(
                "embedder", f"must be a pyevidence.Embedder or None, got {type(embedder).__name__}"
            )
        validation.callback("progress", progress, "(done, total)")
        on_file = target != paths.MEMORY and engine != "cluster" and not paths.is_cluster_url(path)
        if on_file:
            forks.refuse_held(shown, target)
        self._limits = limits
        self._progress = progress
        self._read_only = read_only
        self._embedder = embedder
        self._shown = shown
        self._lock = threading.Lock()
        self._lock_holder: int | None = None  # the thread holding _lock, to name a re-entry
        self._remote_requests = Requests(self._lock)  # a remote ranking's: forget waits for them
        self._pid = os.getpid()
        self._target = target if on_file else None
        self._file: forks.FileId | None = None
        forks.track(self)  # before the connection opens: a fork from now on leaves it here
        try:
            self._engine = _open_engine(path, engine, read_only, progress)
        except BaseException:
            forks.untrack(self)
            raise
        if self._target is not None:
            self._file = forks.file_id(self._target)
        self._closed = False
        self._erasure_pending = False  # a forget's text may still be in the WAL

    @property
    def read_only(self) -> bool:
        """Whether this store was opened read-only: retrieve works, writes are refused."""
        return self._read_only

    @property
    def engine(self) -> str:
        """The name of the engine this store runs on: "python", "native" or "cluster"."""
        return str(self._engine.name)

    def put(
        self,
        *,
        tenant: str,
        record_id: str,
        revision: str,
        kind: str,
        body: str,
        source: str,
        expires_at: int,
        embedding: Sequence[float] | None = None,
    ) -> None:
        """Store a new version of the record (tenant, record_id), atomically; it
        becomes the current one, and the earlier versions stay in its history.

        ``kind`` is "working", "incident" or "runbook"; every string must be
        non-empty (whitespace-only counts as empty); ``expires_at`` is an integer
        in 0..2**63-1, in the caller's logical time. Raises ValidationError naming
        the field, with nothing written, when any rule is broken.

        With the store's ``embedder`` the version's vector is stored with it, in the
        same transaction: ``embedding`` if given (made by the embedder's model), else
        the embedder's vector of ``body``. Without one, the record has no vector (a
        vector of an earlier version never outlives it).
        """
        self._usable()
        record = validation.record(
            tenant=tenant,
            record_id=record_id,
            revision=revision,
            kind=kind,
            body=body,
            source=source,
            expires_at=expires_at,
            limits=self._limits,
        )
        self._writable("put")
        vector = self._vector_of(record, embedding, "embedding")
        with self._engine_locked() as engine:
            engine.put(record, vector)

    def put_many(
        self,
        records: Iterable[Record | Mapping[str, Any]],
        *,
        embeddings: Sequence[Sequence[float] | None] | None = None,
    ) -> int:
        """Store a new version of many records in one transaction: all of them or none.

        Each record is a ``Record`` or a mapping of put()'s keyword arguments. Every
        record is validated first; a bad one raises ValidationError naming its index
        and field (``records[3].kind``) and nothing is written. Within one call, a
        later record with the same (tenant, record_id) is the next version after the
        earlier one, as separate puts would. Returns the number of records written.
        With the store's ``embedder``, vectors are stored as put() does; ``embeddings``
        (one per record, None: let the embedder compute it) passes them in.
        """
        self._usable()
        checked = validation.records(records, self._limits)
        self._writable("put_many")
        given = embedding_list(embeddings, len(checked))
        vectors = [
            self._vector_of(r, e, f"embeddings[{i}]")
            for i, (r, e) in enumerate(zip(checked, given, strict=True))
        ]
        with self._engine_locked() as engine:
            engine.put_many(checked, vectors if self._embedder else None)
        return len(checked)

    def retrieve(
        self,
        *,
        tenant: str,
        revision: str,
        query: str,
        now: int,
        limit: int = 5,
        scorer: Scorer | SetRanker | InStoreRanker | None = None,
        method: str | None = None,
    ) -> Retrieval:
        """The records of ``tenant`` at ``revision`` with ``expires_at > now`` that
        score above zero for ``query``, best first, ties by record id, at most
        ``limit`` (1..10).

        Eligibility is decided first, in SQL; only eligible records reach the
        scorer (default: TokenScorer, lexical overlap). An empty result means no
        evidence was found, not that no problem exists. A RemoteScorer, VectorScorer
        or HybridScorer ranks by its own rule (docs/ranking.md); a remote
        one can fail, and then ``status`` says "unavailable" (no hits: not ranked)
        or "degraded" (its fallback ranked).

        ``method`` chooses how the default scorer finds its hits: "index" (the
        default, None) reads the token index's postings of the query's tokens; "scan"
        scores every eligible record. Both return the same hits, scores, order and
        eligible_count. A custom ``scorer`` takes no method (ValidationError).
        """
        self._usable()
        tenant, revision, now = validation.scope(
            tenant=tenant, revision=revision, now=now, limits=self._limits
        )
        query = validation.query(query, self._limits)
        limit = validation.limit(limit)
        method = validation.method(method, scorer=scorer)
        if scorer is not None and not isinstance(scorer, (Scorer, SetRanker, InStoreRanker)):
            raise ValidationError(
                "scorer",
                "must have a score(query, body) or a rank_candidates(query, candidates, limit) method",
            )
        if isinstance(scorer, InStoreRanker):
            prepared = scorer.prepare(query)  # the query's embedding, made outside the lock
            with self._engine_locked() as engine:
                finish = scorer.rank_in(engine, (tenant, revision, now), query, prepared, limit)
            return finish()  # the Python engine's distances are computed here, outside the lock
        with self._engine_locked() as engine:
            if scorer is None and hasattr(engine, "rank_by_tokens"):
                hits, eligible = engine.rank_by_tokens(tenant, revision, now, query, limit, method=method)
                return Retrieval(hits=hits, eligible_count=eligible)
            candidates = engine.candidates(tenant, revision, now)
        # Scoring happens outside the lock: a slow scorer must not stall other threads.
        if isinstance(scorer, SetRanker):
            gate = current_gate.set(StoreGate(lambda: self._still_current(tenant), self._remote_requests))
            try:
                ranked = scorer.rank_candidates(query, candidates, limit)
            finally:
                current_gate.reset(gate)
            return _checked_retrieval(ranked, len(candidates), limit)
        scorer = scorer or TokenScorer()
        hits = rank(query, candidates, scorer, limit)
        return Retrieval(hits=hits, eligible_count=len(candidates), ranked_by=scorer_name(scorer))

    def query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult:
        """Run one read-only SQL statement on the native engine's connection, where
        token_overlap(), evidence_tokens() and evidence_eligible() exist, with
        positional parameters (None, int, float, str or bytes).

        For Pythons whose sqlite3 cannot load extensions. A statement that could
        write is refused (use put, put_many and forget), and so is any function,
        pragma or table not on the read-only allow-lists (csrc/evidence_store.c), with a
        StoreError naming it: ``function fts3_tokenizer() is not allowed in read-only
        SQL; ...``. Comments and semicolons after the statement are fine; a second
        statement is refused. Needs the native engine.
        """
        self._usable()
        sql = validation.text("sql", sql, allow_empty=True)
        values = validation.sql_params(params)
        with self._engine_locked() as engine:
            if not hasattr(engine, "run"):
                raise EngineUnavailableError(
                    "store.query() runs SQL where pyevidence's functions exist, which needs "
                    "engine='native'; this store runs on the python engine"
                )
            columns, rows = engine.run(sql, values, read_only=True)
        return QueryResult(columns=columns, rows=tuple(rows))

    def forget(self, *, tenant: str, record_id: str) -> bool:
        """Forget record ``record_id`` of ``tenant`` only: its current row goes, and the
        content of every stored version of it is erased; the history keeps their hashes
        and a tombstone, so verify still holds. True when there was a record to forget."""
        self._usable()
        tenant, record_id = validation.record_key(tenant=tenant, record_id=record_id, limits=self._limits)
        self._writable("forget")
        with self._engine_locked(erasing=True) as engine:
            forgot = bool(engine.forget(tenant, record_id))
            if forgot or self._erasure_pending:
                self._erase_from_journal(engine)
            return forgot

    def finish_erasure(self, *, timeout: float = 5.0) -> bool:
        """True when no forget of this store still has its erased text on disk. A forget
        whose checkpoint another connection's read transaction kept from running
        (python-api.md, "What forget keeps") is tried again here, at once and then every
        0.2 s until ``timeout`` seconds (0 to 3600) have passed. No other connection's writer
        waits for it; this store's other threads do, as for any of its calls."""
        self._usable()
        if type(timeout) not in (int, float) or not 0 <= timeout <= _MAX_ERASURE_WAIT:
            reason = f"must be a number of seconds from 0 to 3600, got {shown(timeout)}"
            raise ValidationError("timeout", reason)
        with self._engine_locked() as engine:
            deadline = time.monotonic() + timeout
            pause = 0.0
            while self._erasure_pending:
                self._erase_from_journal(engine, pauses=(pause,))
                pause = min(0.2, deadline - time.monotonic())
                if pause <= 0:
                    break
            return not self._erasure_pending

    def _erase_from_journal(self, engine: Any, pauses: tuple[float, ...] = _ERASURE_PAUSES) -> None:
        """After a forget committed: the erased text out of the WAL as well
        (schema.ERASURE_CHECKPOINT_SQL), tried after each of ``pauses`` (seconds) without
        waiting on a lock, so that a short read of another connection ends meanwhile and no
        other writer is held up. When a reader still keeps the WAL, the next forget and close()
        try again. The cluster's engine has no WAL of its own."""
        checkpoint = getattr(engine, "checkpoint_erasure", None)
        if checkpoint is None:
            return
        for pause in pauses:
            time.sleep(pause)
            if checkpoint():
                self._erasure_pending = False
                return
        self._erasure_pending = True

    def _write_checked(
        self, operation: str, tenant: str, record_id: str, write: Callable[[Any, tuple[Version, ...]], T]
    ) -> tuple[T, tuple[Version, ...]]:
        """``write(engine, history)`` with the record's history read in the same write
        transaction (so no other writer comes between the check and the write); returns
        what it returned and the history after it. An exception from it changes nothing."""
        self._writable(operation)
        erasing = operation == "forget"
        with self._engine_locked(erasing=erasing) as engine:
            with _write_transaction(engine, operation):
                done = write(engine, versions.history(engine, tenant, record_id))
                after = versions.history(engine, tenant, record_id)
            if erasing and (done or self._erasure_pending):
                self._erase_from_journal(engine)
            return done, after

    def history(self, *, tenant: str, record_id: str) -> tuple[Version, ...]:
        """Every version of record ``record_id`` of ``tenant``, oldest first: one per
        put, plus a tombstone per forget (forgotten versions keep their hashes only).
        Empty when the tenant never stored that record."""
        self._usable()
        tenant, record_id = validation.record_key(tenant=tenant, record_id=record_id, limits=self._limits)
        with self._engine_locked() as engine:
            return versions.history(engine, tenant, record_id)

    def get_version(self, *, tenant: str, record_id: str, version: str) -> VersionLookup:
        """Resolves a citation: the version ``version`` (as ``Hit.version`` gave it) of
        record ``record_id`` of ``tenant``. ``status`` is "found" with exactly the cited
        body and fields, "forgotten" (the record was forgotten since: hashes only), or
        "unknown" (this tenant never stored that version of that record)."""
        self._usable()
        tenant, record_id = validation.record_key(tenant=tenant, record_id=record_id, limits=self._limits)
        seq, digest = validation.version(version)
        with self._engine_locked() as engine:
            return versions.get_version(engine, tenant, record_id, seq, digest)

    def verify(self, *, tenant: str) -> Verification:
        """Recomputes the hash chain of ``tenant``'s versions and checks the current
        records against it, in one snapshot. ``ok`` is False and ``broken`` names the
        first broken link when a version was edited, removed or erased outside forget."""
        self._usable()
        tenant = validation.tenant(tenant, self._limits)
        with self._engine_locked() as engine, engine.snapshot():
            return versions.verify(engine, tenant)

    def tenants(self) -> tuple[str, ...]:
        """Every tenant this store holds records of (forgotten ones included, and any with
        only a current or forgotten row left by damage to the history), in code point order,
        read in one snapshot: for an operator's check of the whole store (``pyevidence verify
        --all-tenants``). Reads the history's keys: on a large store, about as long as a scan
        of it."""
        self._usable()
        with self._engine_locked() as engine, engine.snapshot():
            return tuple(row[0] for row in engine.select(versions.TENANTS_SQL))

    def reindex(self) -> IndexRebuild:
        """Rebuild the token index from the current rows, in one write transaction
        (docs/token-index.md): the fix for a failed ``check_index()``. Other writers wait
        for it; readers keep reading the old index until it commits. The store's
        ``progress`` function, if any, is told how far it has got."""
        self._usable()
        self._writable("reindex")
        with self._engine_locked() as engine:
            return engine.reindex(self._progress)  # type: ignore[no-any-return]

    def check_index(self) -> IndexCheck:
        """Compare the token index with the current rows, in one snapshot: ``ok`` when it
        answers every query as a rebuild would; otherwise ``problems`` names what
        differs, and ``reindex()`` repairs it. Reads every current row: slow on a large
        store, and meant for checks, not for every open."""
        self._usable()
        with self._engine_locked() as engine, engine.snapshot():
            return index_check.check(engine.select)

    def backup(self, dest: StorePath) -> None:
        """Copy the whole database to a new file ``dest`` as one consistent snapshot,
        while other connections keep writing (SQLite's online backup API).

        ``dest`` follows the path rule of ``path`` (a plain file name, no ``file:``
        URI) and must not exist: it is created exclusively (O_EXCL), so a backup never
        overwrites a file, not even one that appears while it runs; ValidationError if
        it exists. If the copy fails, the new file is removed again."""
        self._usable()
        with self._engine_locked() as engine, paths.new_file(dest) as target:
            engine.backup(target)

    def scoped(self, *, tenant: str) -> ScopedStore:
        """A handle bound to ``tenant`` whose methods take no tenant argument at all.

        Make it where the caller's authenticated identity is known, and give only
        the handle to code that acts on model output (see pyevidence.tool).
        """
        self._usable()
        return ScopedStore(self, tenant)

    def close(self) -> None:
        """Closes the connection. In a forked child, on a store the parent opened, it only marks
        the store closed here and returns: the connection is the parent's, and is never touched
        (pyevidence/forks.py); a ``with`` block the fork left open unwinds without an error."""
        if self._inherited_from is not None:  # before the lock, which a thread gone may hold
            self._closed = True
            return
        if self._lock_holder == threading.get_ident():
            raise StoreError("this EvidenceStore cannot be closed from a progress callback of its own")
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._erasure_pending:  # a reader kept a forget's text in the WAL
                    self._erase_from_journal(self._engine, pauses=(0.0,))
                self._engine.close()
                forks.untrack(self)

    def __del__(self, _warn: Any = warnings.warn) -> None:
        # As sqlite3 does for a connection: release what an unclosed store holds, and say so.
        # Never a store inherited by a fork (forks.py keeps those alive; this is a second guard).
        if not getattr(self, "_closed", True) and getattr(self, "_inherited_from", None) is None:
            self._closed = True
            _warn(f"unclosed EvidenceStore on {self._shown!r}; call close()", ResourceWarning, source=self)
            self._engine.close()

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy.copy, copy.deepcopy and pickle all come here. A copy would share the open
        # connection and close it when collected, under the original.
        raise TypeError(
            "an EvidenceStore cannot be copied or pickled: it holds an open database connection;"
            " open another EvidenceStore on the same path instead"
        )

    def __enter__(self) -> EvidenceStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder | None:
        """The embedder that makes each put's vector, or None."""
        return self._embedder

    def _vector_of(self, record: Record, embedding: object, field: str) -> Vector | None:
        """The vector to store with ``record``: checked, computed before any write."""
        if self._embedder is None:
            if embedding is not None:
                raise ValidationError(
                    field, "needs the store's embedder= to name the model that made it; nothing was written"
                )
            return None
        if embedding is None:
            return self._embedder.vector(record.body, field)
        return vector(self._embedder.model, embedding, field)

    def _usable(self) -> None:
        """Refuses at once, before the lock is taken, every call on a store this process
        inherited by a fork (pyevidence/forks.py): one attribute test."""
        if self._inherited_from is not None:
            raise forks.inherited(self._shown, self._inherited_from)

    def _writable(self, operation: str) -> None:
        if self._read_only:
            raise StoreError(f"{operation} refused: this store was opened read-only (read_only=True)")

    @contextmanager
    def _engine_locked(self, *, erasing: bool = False) -> Iterator[Any]:
        """The engine, with the store's lock held; a closed store is refused. ``erasing``
        (forget) first waits for the requests a remote ranking has in flight, with the lock
        released meanwhile, so that none of them carries text forget erases
        (ranking/send_gate.py)."""
        self._usable()  # a store inherited by a fork: refused before the lock
        if self._lock_holder == threading.get_ident():
            # A progress callback (or other code called while the lock is held) using the
            # store would wait for itself for ever.
            raise StoreError(
                "this EvidenceStore is busy in this same thread (called from a progress callback?); "
                "use the store after the call that called back returns, or open another EvidenceStore"
            )
        with self._lock, self._remote_requests.erasing() if erasing else nullcontext():
            if self._closed:  # checked after any wait: close() may have run meanwhile
                raise StoreError("this EvidenceStore is closed")
            self._lock_holder = threading.get_ident()
            try:
                end_interrupted = getattr(self._engine, "end_interrupted", None)
                if end_interrupted is not None:  # what an interrupt of an earlier call left
                    end_interrupted()
                watch_ctrl_c = getattr(self._engine, "watch_ctrl_c", None)
                if watch_ctrl_c is None:
                    yield self._engine
                    return
                watch_ctrl_c()  # Ctrl-C stops a long C call as it runs (the native engine)
                try:
                    yield self._engine
                finally:
                    self._engine.unwatch_ctrl_c()
            finally:
                self._lock_holder = None

    @contextmanager
    def _still_current(self, tenant: str) -> Iterator[StillCurrent]:
        """With the lock held: which candidates of a batch are still their record's current
        version (one that was forgotten or replaced since retrieve read it is not)."""
        with self._engine_locked() as engine:

            def still_current(batch: Sequence[Candidate]) -> list[Candidate]:
                if self._closed:  # the gate may have waited for a forget, the lock released
                    raise StoreError("this EvidenceStore is closed")
                now = versions.current_versions(engine, tenant, [c.record_id for c in batch])
                return [c for c in batch if now.get(c.record_id) == c.version]

            yield still_current


# A store handle bound to one tenant: the deployment boundary for agents. The tenant
# must come from the caller's authenticated identity, never from text a model produced.
# A ScopedStore is made once, where the identity is known, and handed to the code that
# acts on model output: none of its methods takes a tenant, so no argument can reach
# another tenant's records.
class ScopedStore:
    """put / put_many / retrieve / forget / history / get_version / verify of one
    tenant's records. Make it with
    ``EvidenceStore.scoped(tenant=...)``."""

    def __init__(self, store: EvidenceStore, tenant: str) -> None:
        self._store = store
        self._tenant = validation.text("tenant", tenant)

    @property
    def tenant(self) -> str:
        return self._tenant

    def put(
        self,
        *,
        record_id: str,
        revision: str,
        kind: str,
        body: str,
        source: str,
        expires_at: int,
        embedding: Sequence[float] | None = None,
    ) -> None:
        self._store.put(
            embedding=embedding,
            tenant=self._tenant,
            record_id=record_id,
            revision=revision,
            kind=kind,
            body=body,
            source=source,
            expires_at=expires_at,
        )

    def put_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        embeddings: Sequence[Sequence[float] | None] | None = None,
    ) -> int:
        """Like EvidenceStore.put_many, with records that carry no tenant at all."""
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
            raise ValidationError("records", "must be an iterable of records (mappings)")
        bound = []
        for index, item in enumerate(records):
            # A Record carries its own tenant, so only plain mappings are taken here.
            if not isinstance(item, Mapping):
                raise ValidationError(
                    f"records[{index}]", "must be a mapping of put()'s fields, without tenant"
                )
            if "tenant" in item:
                raise ValidationError(f"records[{index}]", "a scoped store takes no tenant field")
            bound.append({**item, "tenant": self._tenant})
        return self._store.put_many(bound, embeddings=embeddings)

    def retrieve(
        self,
        *,
        revision: str,
        query: str,
        now: int,
        limit: int = 5,
        scorer: Scorer | SetRanker | InStoreRanker | None = None,
        method: str | None = None,
    ) -> Retrieval:
        return self._store.retrieve(
            tenant=self._tenant,
            revision=revision,
            query=query,
            now=now,
            limit=limit,
            scorer=scorer,
            method=method,
        )

    def forget(self, *, record_id: str) -> bool:
        return self._store.forget(tenant=self._tenant, record_id=record_id)

    def put_in_revision(
        self, *, record_id: str, revision: str, kind: str, body: str, source: str, expires_at: int
    ) -> Version:
        """put() for a caller bound to ``revision`` (the agent tools): refused with
        ValidationError (field "record_id"), nothing written, when the record's current
        version belongs to another revision. The check and the put are one transaction.
        Returns the version stored."""
        self._store._usable()
        record = self._store_record(record_id, revision, kind, body, source, expires_at)
        vector = self._store._vector_of(record, None, "embedding")

        def put(engine: Any, history: tuple[Version, ...]) -> None:
            latest = history[-1] if history else None
            if latest is not None and latest.operation == "put" and latest.revision != record.revision:
                raise _taken(record.record_id)
            engine.put(record, vector)

        return self._store._write_checked("put", self._tenant, record.record_id, put)[1][-1]

    def forget_in_revision(self, *, record_id: str, revision: str) -> bool:
        """forget() for a caller bound to ``revision`` (the agent tools): refused with
        ValidationError (field "record_id"), nothing erased, when any version of the
        record that still has its content belongs to another revision, since forget
        erases them all. The check and the forget are one transaction."""
        self._store._usable()
        tenant, record_id = validation.record_key(
            tenant=self._tenant, record_id=record_id, limits=self._store._limits
        )
        revision = validation.text("revision", revision)

        def forget(engine: Any, history: tuple[Version, ...]) -> bool:
            if any(v.revision is not None and v.revision != revision for v in history):
                raise _taken(record_id)
            return bool(engine.forget(tenant, record_id))

        return self._store._write_checked("forget", tenant, record_id, forget)[0]

    def _store_record(
        self, record_id: str, revision: str, kind: str, body: str, source: str, expires_at: int
    ) -> Record:
        return validation.record(
            tenant=self._tenant,
            record_id=record_id,
            revision=revision,
            kind=kind,
            body=body,
            source=source,
            expires_at=expires_at,
            limits=self._store._limits,
        )

    def history(self, *, record_id: str) -> tuple[Version, ...]:
        return self._store.history(tenant=self._tenant, record_id=record_id)

    def get_version(self, *, record_id: str, version: str) -> VersionLookup:
        return self._store.get_version(tenant=self._tenant, record_id=record_id, version=version)

    def verify(self) -> Verification:
        return self._store.verify(tenant=self._tenant)


def _taken(record_id: str) -> ValidationError:
    # Says only that the id is in use outside the bound revision: not which revision, nor
    # anything stored there. Another tenant's ids are never seen (the scope is per tenant).
    return ValidationError(
        "record_id",
        f"{record_id!r} has versions in another revision here; choose another record_id "
        "(nothing was changed)",
    )


@contextmanager
def _write_transaction(engine: Any, operation: str) -> Iterator[None]:
    """The engine's write transaction; an engine without one (the cluster's, whose writes
    are statement lists it may replay on a new leader) runs the block as it comes."""
    begin = getattr(engine, "write_transaction", None)
    if begin is None:
        yield
        return
    with begin(operation):
        yield


def _checked_retrieval(result: object, eligible: int, limit: int) -> Retrieval:
    """A set ranker's answer, held to the contract retrieve() promises its callers."""
    if not isinstance(result, Retrieval) or result.eligible_count != eligible or len(result.hits) > limit:
        raise ScorerError(
            "rank_candidates() must return a Retrieval of the candidates it was given, "
            f"with at most {limit} hits"
        )
    return result
