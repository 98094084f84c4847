"""The cluster engine: one EvidenceStore on a replicated dqlite cluster.

    EvidenceStore("dqlite://10.0.0.1:9001,10.0.0.2:9001,10.0.0.3:9001/evidence")

Every node runs ``pyevidence node`` (csrc/node/evidence_node.c), which gives each
SQLite connection of the node pyevidence's functions. This engine talks to the
cluster's leader through dqlite-dbapi (the ``cluster`` extra, Python >= 3.13),
creates the database with schema.sql through the cluster (schema.prepare, as the
file engines do), and runs exactly the SQL the file engines run: the same
triggers write the versions and hash them, and the ranking statement runs on the
leader, inside SQLite, with token_overlap() over evidence_eligible, as the
native engine's STMT_RANK does (csrc/evidence_store.c).

Leader changes. dqlite runs every statement on the leader; when it dies or steps
down, a call fails and this engine finds the new leader through the addresses of
the URL, then:
- a read is run again on the new leader (inside a snapshot, the reads made so far
  are run again too, and the snapshot goes on only if they read the same rows:
  every read of it then comes from one state of the database);
- a write runs as BEGIN IMMEDIATE, its statements, COMMIT. It is run again when it
  certainly did not commit: it failed before COMMIT was sent, or the COMMIT was
  refused with "not leader" (dqlite refuses it before replicating anything);
- otherwise (the connection broke during COMMIT, or the leader lost its leadership
  while replicating it) nobody can know, and a StoreError says the write may or may
  not have happened.
"""

from __future__ import annotations

import importlib
import re
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple
from typing import Any, TypeVar

from ...core import validation
from ...core.errors import EngineUnavailableError, StoreError, ValidationError, from_sqlite
from ...core.records import Candidate, Hit, IndexRebuild, Record
from ...core.vectors import Vector, Vectors
from ...ranking.scoring import hit_from
from ...ranking.vector_scoring import Scored, python_rank_by_vector
from .. import schema
from ..index import rebuild
from ..paths import is_cluster_url
from .python_engine import _statements, scored_by_distance

T = TypeVar("T")

# How long one call keeps looking for a leader before it gives up, and how long
# one request may take (dqlite-dbapi's per-phase timeout).
RETRY_SECONDS = 15.0
REQUEST_TIMEOUT_SECONDS = 5.0

# dqlite's result codes for "this node does not lead" (refused before anything
# was replicated) and "leadership lost while replicating" (the outcome unknown);
# the legacy values are those of dqlite servers before 1.x's renumbering.
_NOT_LEADER = frozenset({10250, 8202})
_LEADERSHIP_LOST = frozenset({10506, 8458})

# A put_many sends its records several to a statement, each statement a round trip. dqlite 1.11
# takes at most 255 parameters in one (its EXEC counts them in one byte; it refuses the wider
# count dqlite-wire sends past that): 36 records. And the leader runs a statement on the thread
# that sends its heartbeats, so one statement must stay short: 36 records of 1 MB each (about 4 s
# of tokenizing and indexing) cost the leader its leadership on loopback at --latency-ms 50, one
# record a statement did not. 64 KiB of text a statement keeps it to milliseconds.
_MAX_PARAMETERS = 255
_RECORDS_PER_STATEMENT = _MAX_PARAMETERS // schema.PUT_COLUMNS
_TEXT_PER_STATEMENT = 64 * 1024


def _statement_chunks(records: list[Record]) -> Iterator[list[Record]]:
    """records in order, cut into runs of at most _RECORDS_PER_STATEMENT records and, unless
    one record alone is longer, _TEXT_PER_STATEMENT characters of body."""
    chunk: list[Record] = []
    text = 0
    for record in records:
        if chunk and (len(chunk) == _RECORDS_PER_STATEMENT or text + len(record.body) > _TEXT_PER_STATEMENT):
            yield chunk
            chunk, text = [], 0
        chunk.append(record)
        text += len(record.body)
    if chunk:
        yield chunk


# The ranking statement of csrc/evidence_store.c (STMT_RANK), with the eligible
# count in the same statement, so in the same snapshot: the native engine reads
# it from evidence_eligible's scan statistics, which a client of the cluster
# cannot see. One row with NULL hit columns when nothing scores above zero.
RANK_SQL = (
    "SELECT c.n, h.record_id, h.revision, h.kind, h.body, h.source, h.expires_at, h.version,"
    " h.content_hash, h.score"
    " FROM (SELECT count(*) AS n FROM evidence_eligible(?1, ?2, ?3)) AS c"
    " LEFT JOIN (SELECT e.record_id, e.revision, e.kind, e.body, e.source, e.expires_at, e.version,"
    "   e.content_hash, top.score"
    "   FROM (SELECT record_id, score FROM ("
    "     SELECT record_id, token_overlap(?4, body) AS score"
    "     FROM evidence_eligible(?1, ?2, ?3) LIMIT -1 OFFSET 0)"
    "    WHERE score > 0 ORDER BY score DESC, record_id LIMIT ?5) AS top"
    "   JOIN evidence AS e ON e.tenant = ?1 AND e.record_id = top.record_id) AS h ON 1"
    " ORDER BY h.score DESC, h.record_id"
)
# The same hits and count through the token index: evidence_search ranks, and
# evidence_eligible_count reads the count from the index too, so that a retrieve
# costs what it costs the native engine, not a read of every eligible row.
# The hits join evidence inside their own subquery, as RANK_SQL's do (the view on the
# right of a LEFT JOIN would be materialized whole), and CROSS JOIN keeps the search
# outside: the planner would otherwise walk the tenant's rows and search for each.
SEARCH_SQL = (
    "SELECT c.n, h.record_id, h.revision, h.kind, h.body, h.source, h.expires_at, h.version,"
    " h.content_hash, h.score"
    " FROM (SELECT evidence_eligible_count(?1, ?2, ?3) AS n) AS c"
    " LEFT JOIN (SELECT e.record_id, e.revision, e.kind, e.body, e.source, e.expires_at, e.version,"
    "   e.content_hash, s.score"
    "   FROM evidence_search(?1, ?2, ?3, ?4, ?5) AS s"
    "   CROSS JOIN evidence AS e ON e.tenant = ?1 AND e.record_id = s.record_id) AS h ON 1"
    " ORDER BY h.score DESC, h.record_id"
)
CANDIDATES_SQL = (
    "SELECT record_id, revision, kind, body, source, expires_at, version, content_hash"
    " FROM evidence_eligible(?1, ?2, ?3) ORDER BY record_id"
)

_ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})")
# Settings of schema.prepare() that are dqlite's own on a cluster, and left to it:
# durability is the Raft log's (its VFS refuses fsync, so synchronous stays OFF, and a
# checkpoint under synchronous=NORMAL fails with a disk I/O error), the journal is
# always WAL, and its in-memory VFS maps nothing. Its WAL is kept in memory by that VFS
# and emptied by dqlite's own checkpoints, and the VFS answers SQLITE_PROTOCOL to a cut
# of the WAL to any size but zero, which is what journal_size_limit asks of it.
_DQLITE_OWNS = re.compile(
    r"\s*PRAGMA\s+(synchronous|journal_mode|mmap_size|journal_size_limit)\s*=", re.IGNORECASE
)
_NUMBERED = re.compile(r"\?([0-9]+)")
_HEADER_PRAGMA = re.compile(r"\s*PRAGMA\s+user_version\s*=", re.IGNORECASE)
_NO_ROWS_PRAGMA = re.compile(r"\s*PRAGMA\s+\w+\s*=", re.IGNORECASE)
_DATABASE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _positional(sql: str, params: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
    """pyevidence's statements number their parameters (?1, ?2, ...) and reuse them;
    dqlite-dbapi counts plain ? marks. The same statement with one ? per use. (No
    statement of pyevidence's has a ? inside a literal.)"""
    used = [int(n) for n in _NUMBERED.findall(sql)]
    return _NUMBERED.sub("?", sql), tuple(params[n - 1] for n in used) if used else tuple(params)


NUL_REFUSED = (
    "holds a NUL character, which a cluster cannot store (dqlite's text ends at a NUL; a file store "
    "keeps it); remove it"
)


def fields_with_nul(record: Record) -> list[str]:
    """The fields of ``record`` that a cluster cannot store: those holding a NUL character."""
    return [field for field in validation.TEXT_FIELDS if "\0" in getattr(record, field)]


def _refuse_nul(records: list[Record], operation: str) -> None:
    """dqlite's wire protocol ends text at a NUL character, and its driver refuses such text with
    advice about BLOB columns; a file store keeps it. Said as bad input, with nothing written."""
    for index, record in enumerate(records):
        for field in fields_with_nul(record):
            where = field if operation == "put" else f"records[{index}].{field}"
            raise ValidationError(where, f"{NUL_REFUSED} (nothing was written)")


def _without_nul(params: Sequence[Any]) -> tuple[Any, ...]:
    """The parameters of a read or a forget, each text that holds a NUL made ''. pyevidence's
    statements compare them with stored names (tenant, record_id, revision, model), which on a
    cluster never hold one (_refuse_nul), nor are ever empty: no row matches either way, where
    the driver would refuse the text."""
    return tuple("" if isinstance(value, str) and "\0" in value else value for value in params)


def parse_url(url: str) -> tuple[list[str], str]:
    """The node addresses and the database name of a dqlite:// URL."""
    parsed = urllib.parse.urlsplit(url)
    addresses = parsed.netloc.split(",")
    database = parsed.path.lstrip("/")
    usage = "dqlite://HOST:PORT[,HOST:PORT...]/DATABASE, e.g. dqlite://127.0.0.1:9001,127.0.0.1:9002/evidence"
    for address in addresses:
        match = _ADDRESS.fullmatch(address)
        if match is None or not 0 < int(match.group(2)) < 65536:
            raise ValidationError("path", f"{address!r} is not a HOST:PORT address in {url!r}; use {usage}")
    if not _DATABASE.fullmatch(database) or parsed.query or parsed.fragment:
        raise ValidationError(
            "path", f"{url!r} names no database (letters, digits, '_', '.', '-'); use {usage}"
        )
    return addresses, database


def _driver() -> Any:
    """dqlite-dbapi, or EngineUnavailableError saying how to get it."""
    if sys.version_info < (3, 13):
        raise EngineUnavailableError(
            "the cluster engine needs Python 3.13 or later (its client, dqlite-dbapi, does); this is "
            f"Python {sys.version_info.major}.{sys.version_info.minor}: run it under Python >= 3.13 "
            "with the cluster extra (in the pyevidence checkout: pip install '.[cluster]')"
        )
    try:
        import dqlitedbapi
    except ImportError:
        raise EngineUnavailableError(
            "the cluster engine needs dqlite-dbapi, which is not installed: in the pyevidence checkout, "
            "pip install '.[cluster]'"
        ) from None
    return dqlitedbapi


class _LeaderGone(Exception):
    """A request failed because the leader moved or could not be reached."""

    def __init__(self, reason: str, *, in_doubt: bool = False, leadership_lost: bool = False) -> None:
        super().__init__(reason)
        self.in_doubt = in_doubt  # a COMMIT may have been replicated
        self.leadership_lost = leadership_lost  # dqlite said so: another node was elected meanwhile


def _why_in_doubt(exc: _LeaderGone) -> str:
    if exc.leadership_lost:
        # Seen when a node stays busy with one large write past the election timeout.
        return (
            f"the cluster's leader lost its leadership while it replicated this write ({exc}). "
            "Check with history() or retrieve before writing it again. If the write was large, "
            'start the nodes with a larger --latency-ms (docs/cluster.md, "Large writes")'
        )
    return (
        f"the cluster's leader changed, or the connection to it broke, while it was being committed "
        f"({exc}). Check with history() or retrieve before writing it again"
    )


class ClusterEngine:
    name = "cluster"

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self._addresses, self._database = parse_url(url)
        self._where = url
        self._dbapi = _driver()
        self._client_error = importlib.import_module("dqliteclient").DqliteError
        self._read_only = read_only
        self._conn: Any = None
        # Inside snapshot(): the reads made so far, (sql, params, rows), to check on a new leader.
        self._snapshot: list[tuple[str, Sequence[Any], list[tuple[Any, ...]]]] | None = None
        self._call(f"opening {url}", lambda: None, writes=True)  # nothing is written either

    # -- the connection to the leader -------------------------------------------------

    def _connect(self) -> None:
        """Connects to the leader through the first address that answers, and makes the
        connection ready as both file engines do (schema.prepare: settings, then the
        schema, created here if the database is new)."""
        reasons = []
        for address in self._addresses:
            conn = self._dbapi.connect(
                address, database=self._database, timeout=REQUEST_TIMEOUT_SECONDS, check_same_thread=False
            )
            try:
                self._conn = conn
                schema.prepare(self._query, self._script, self._where, read_only=self._read_only)
                return
            except _LeaderGone as exc:
                reasons.append(f"{address}: {exc}")
                self._drop()
            except BaseException:
                self._drop()  # not a pyevidence database, say: no connection is left open
                raise
        raise _LeaderGone("; ".join(reasons))

    def _drop(self) -> None:
        """Forgets the connection without waiting for it: its leader may be gone."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.force_close_transport()
                conn.close()
            except Exception:
                pass  # a broken connection is what is being dropped

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Runs one statement on the leader; a failure of the cluster is _LeaderGone,
        an SQL error a StoreError, as the file engines raise it."""
        if self._conn is None:
            raise _LeaderGone("not connected")
        try:
            if _HEADER_PRAGMA.match(sql):
                return self._exec_header_pragma(sql)
            cursor = self._conn.cursor()
            cursor.execute(*_positional(sql, params))
            return cursor
        except (self._dbapi.Error, self._client_error) as exc:
            if _NO_ROWS_PRAGMA.match(sql) and getattr(exc, "raw_message", None) == "not an error":
                # dqlite runs a PRAGMA as a query, and a PRAGMA that sets a value returns no
                # rows, which dqlite 1.11 reports as this failure after running it.
                return None
            raise self._classified(exc) from None

    def _exec_header_pragma(self, sql: str) -> None:
        """Runs PRAGMA user_version = N (schema.sql's last statement) as dqlite's EXEC.
        dqlite-dbapi sends every PRAGMA as a query, and dqlite 1.11 does not keep a
        write to the database header made by a query; dqlite-dbapi has no public way to
        send an EXEC, so this uses its session (pinned: dqlite-dbapi 0.8.0)."""

        async def exec_sql(connection: Any) -> None:
            async with connection._operation() as client:
                await client.execute(sql)

        self._conn._run(exec_sql(self._conn._async))

    def _classified(self, exc: Exception) -> Exception:
        code = getattr(exc, "code", None)
        message = getattr(exc, "raw_message", None) or str(exc)
        if isinstance(exc, self._dbapi.AmbiguousCommitError) or code in _LEADERSHIP_LOST:
            return _LeaderGone(message, in_doubt=True, leadership_lost=code in _LEADERSHIP_LOST)
        if code in _NOT_LEADER:
            return _LeaderGone(message)
        if isinstance(exc, (self._dbapi.ProgrammingError, self._dbapi.DataError)):
            return StoreError(message)  # refused by the client before it was sent
        if code is None:
            # No SQLite result code: the connection failed, the request may have arrived.
            return _LeaderGone(message, in_doubt=True)
        return from_sqlite(code, message, waited=False)  # dqlite's locks are not waited for here

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        if _DQLITE_OWNS.match(sql):
            return []
        cursor = self._execute(sql)
        return [tuple(row) for row in cursor.fetchall()] if cursor and cursor.description else []

    def _script(self, sql: str) -> None:
        for statement in _statements(sql):
            self._execute(statement)

    def _call(
        self,
        doing: str,
        run: Callable[[], T],
        *,
        reconnect: Callable[[], None] | None = None,
        writes: bool = False,
    ) -> T:
        """Runs ``run`` on the leader, finding a new one (and running ``reconnect``
        after connecting) as long as the failures are safe to repeat: ``run`` raises
        _LeaderGone only for those."""
        deadline = time.monotonic() + RETRY_SECONDS
        pause = 0.05
        while True:
            try:
                if self._conn is None:
                    self._connect()
                    if reconnect is not None:
                        reconnect()
                return run()
            except _LeaderGone as exc:
                self._drop()
                if time.monotonic() + pause > deadline:
                    written = "; nothing was written" if writes else ""
                    raise StoreError(
                        f"{doing} failed: no leader of the cluster {self._where} answered within "
                        f"{RETRY_SECONDS:g} s (last: {exc}){written}. Check that a majority of the "
                        "nodes runs"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.5)

    # -- writes ---------------------------------------------------------------------------

    def _write(self, doing: str, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        """Runs the statements in one transaction on the leader; returns their row counts."""

        def attempt() -> list[int]:
            try:  # BEGIN inside: an interrupt just after it still ends the transaction
                self._execute("BEGIN IMMEDIATE")
                counts = [self._execute(sql, params).rowcount for sql, params in statements]
            except StoreError:
                self._rollback()
                raise
            except _LeaderGone as exc:
                raise _LeaderGone(str(exc)) from None  # before COMMIT: nothing was committed
            except BaseException:  # an interrupt: the leader rolls back a connection that closes
                self._drop()
                raise
            try:
                self._execute("COMMIT")
            except _LeaderGone as exc:
                if exc.in_doubt:
                    self._drop()  # the next call starts on a fresh connection
                    raise StoreError(
                        f"{doing} may or may not have been written: {_why_in_doubt(exc)}"
                    ) from None
                raise
            except StoreError:
                self._rollback()
                raise
            except BaseException:  # interrupted while committing: in doubt, as a lost reply is
                self._drop()
                raise
            return counts

        return self._call(doing, attempt, writes=True)

    def _rollback(self) -> None:
        try:
            self._execute("ROLLBACK")
        except (_LeaderGone, StoreError):
            self._drop()  # the leader drops the transaction with the connection

    def put(self, record: Record, vector: Vector | None = None) -> None:
        self.put_many([record], None if vector is None else [vector], operation="put")

    def put_many(
        self, records: list[Record], vectors: Vectors = None, *, operation: str = "put_many"
    ) -> None:
        _refuse_nul(records, operation)
        statements: list[tuple[str, Sequence[Any]]] = []
        if vectors is None or all(vector is None for vector in vectors):
            for chunk in _statement_chunks(records):
                values = [value for record in chunk for value in astuple(record)]
                statements.append((schema.put_rows_sql(len(chunk)), values))
        else:  # a vector follows its own record's put, before a later put of the same record
            for record, vector in zip(records, vectors, strict=True):
                statements.append((schema.PUT_SQL, astuple(record)))
                if vector is not None:
                    vector_row = (record.tenant, record.record_id, vector.model, vector.dims, vector.blob)
                    statements.append((schema.VECTOR_PUT_SQL, vector_row))
        self._write(operation, statements)

    def forget(self, tenant: str, record_id: str) -> bool:
        return self._write("forget", [(schema.FORGET_SQL, _without_nul((tenant, record_id)))])[0] > 0

    def reindex(self, progress: rebuild.Progress | None = None) -> IndexRebuild:
        """Rebuilds the token index in one write on the leader: the schema's own SQL, as
        one statement list (a write here cannot report between its statements)."""
        started = time.monotonic()
        self._write("reindex", [(statement, ()) for statement in _statements(rebuild.BUILD_SCRIPT)])
        built = rebuild.summary(self.select, time.monotonic() - started)
        if progress is not None:
            progress(built.records, built.records)
        return built

    # -- reads ----------------------------------------------------------------------------

    def _read(self, doing: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        params = _without_nul(params)

        def attempt() -> list[tuple[Any, ...]]:
            return [tuple(row) for row in self._execute(sql, params).fetchall()]

        if self._snapshot is None:
            return self._call(doing, attempt)
        rows = self._call(doing, attempt, reconnect=lambda: self._resume_snapshot(doing))
        self._snapshot.append((sql, params, rows))
        return rows

    def _resume_snapshot(self, doing: str) -> None:
        """On a new leader, inside snapshot(): a new read transaction that must read what
        the old one read, else the caller's reads would mix two states."""
        self._execute("BEGIN")
        for sql, params, rows in self._snapshot or []:
            if [tuple(row) for row in self._execute(sql, params).fetchall()] != rows:
                self._rollback()
                raise StoreError(
                    f"{doing} failed: the cluster's leader changed during it and the data changed too; "
                    "call it again"
                )

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Runs one read statement of pyevidence's own (pyevidence/storage/versions.py)."""
        return self._read("reading the history", sql, params)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside the block see one consistent state of the database."""
        try:  # BEGIN inside: an interrupt just after it still ends the read
            self._call("reading the history", lambda: self._execute("BEGIN"))
            self._snapshot = []
            yield
        finally:
            self._snapshot = None
            try:
                self._execute("COMMIT")
            except (_LeaderGone, StoreError):
                self._drop()  # a read transaction has nothing to keep
            except BaseException:  # an interrupt: the connection goes with its transaction
                self._drop()
                raise

    def candidates(self, tenant: str, revision: str, now: int) -> list[Candidate]:
        return [Candidate(*row) for row in self._read("retrieve", CANDIDATES_SQL, (tenant, revision, now))]

    def rank_by_tokens(
        self, tenant: str, revision: str, now: int, query: str, limit: int, *, method: str = "index"
    ) -> tuple[tuple[Hit, ...], int]:
        """The token ranking in one statement on the leader: through the token index (its
        triggers keep it in step on the nodes), or with method="scan" by scoring every
        eligible row; the hits are the same (docs/cluster.md)."""
        sql = RANK_SQL if method == "scan" else SEARCH_SQL
        # dqlite's text ends at a NUL; in a query a NUL only separates words, as a space does.
        rows = self._read("retrieve", sql, (tenant, revision, now, query.replace("\0", " "), limit))
        hits = tuple(hit_from(Candidate(*row[1:9]), row[9]) for row in rows if row[1] is not None)
        return hits, int(rows[0][0])

    def vector_candidates(
        self, tenant: str, revision: str, now: int, query: Vector
    ) -> Callable[[], list[Scored]]:
        """As the Python engine: the eligible rows with their vectors now, the cosine
        distances in Python afterwards (the nodes have no sqlite-vec)."""
        rows = self._read(
            "retrieve", schema.VECTOR_ROWS_SQL, (tenant, revision, now, query.model, query.dims)
        )

        return lambda: scored_by_distance(rows, query)

    def rank_by_vector(
        self, tenant: str, revision: str, now: int, query: Vector, min_similarity: float, limit: int
    ) -> Callable[[], tuple[tuple[Hit, ...], int, int]]:
        read = self.vector_candidates(tenant, revision, now, query)
        return lambda: python_rank_by_vector(read(), min_similarity, limit)

    def run(
        self, sql: str, params: Sequence[Any], *, read_only: bool
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        del sql, params, read_only
        raise EngineUnavailableError(
            "store.query() runs SQL behind the native engine's read-only gate, which a cluster does "
            "not have; use retrieve, history and get_version, or query a backup with engine='native'"
        )

    def backup(self, dest: str) -> None:
        del dest
        raise EngineUnavailableError(
            "backup() copies a file store; a cluster keeps a copy on every node. Stop one node and "
            "copy its data directory instead (see docs/cluster.md)"
        )

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
                self._conn = None
            except Exception:
                self._drop()


def open_cluster(path: object, engine: str, read_only: bool) -> ClusterEngine:
    """EvidenceStore's hook: a dqlite:// URL opens the cluster engine, with engine
    "auto" or "cluster"; any other engine, or engine="cluster" with a file, is refused."""
    if not is_cluster_url(path):
        raise ValidationError(
            "engine", f"'cluster' needs a dqlite://HOST:PORT,.../DATABASE URL as the path, got {path!r}"
        )
    if engine not in ("auto", "cluster"):
        raise ValidationError(
            "engine", f"a dqlite:// URL runs on engine 'cluster' (or 'auto'), not {engine!r}"
        )
    assert isinstance(path, str)
    return ClusterEngine(path, read_only=read_only)
