"""Opening a database: connection settings, schema creation and recognition.

The table layout itself lives in schema.sql; this module only decides whether a
file is a pyevidence database this release can use, and creates the schema in
an empty one. Both engines go through ``ensure`` so they accept and refuse the
same files.
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from importlib import resources
from typing import Any

from ..core import validation
from ..core.errors import NoSchema, SchemaError, StoreError, UpgradeNeeded
from . import sql_functions, sqlite_file
from .index import rebuild

SCHEMA_VERSION = 13

# Connection settings, applied by prepare() on every connection of both engines.
# The busy timeout makes a writer wait for a lock instead of failing at once.
# WAL lets readers run while a writer commits; it is set only after the file is
# recognised, because switching a journal mode rewrites the file header.
# synchronous=NORMAL is WAL's usual setting: a commit survives a crash of the
# process or of the application, but the last commits before a power loss or an
# OS crash may be lost (never the database's integrity); see docs/guarantees.md.
# The page cache and memory-mapped reads are sized for a scan over the eligible
# rows: 64 MiB of cache, and the file mapped as far as this SQLite allows (2 GiB in
# a default 64-bit build, which caps the value asked for): a scan of a million
# rows then reads its pages from the mapping, without a read() call each (8.2 s
# with 256 MiB mapped, 4.3 s with 2 GiB, docs/performance.md).
# temp_store=MEMORY keeps statement journals in memory: each upsert of a batch
# saves the pages it changes there, and SQLite moves such a journal to a
# temporary file once it outgrows 64 KiB, after which every statement writes
# there. Loading 125,000 records in batches of 10,000 wrote 3.5 GB through the
# kernel for a 136 MB file, and 0.8 GB with the journals in memory
# (docs/performance.md, "Statement journals and the postings sort"). A
# statement's journal holds the pages that one statement changed: our writers'
# statements change a few each. Upgrades run before these settings, so a
# migration's large statements (DROP TABLE of a history) still spill to disk.
# secure_delete overwrites freed space with zeros, so forgotten text does not
# linger in the file's free pages (docs/python-api.md, "Versions and citations").
# trusted_schema=ON lets schema.sql's triggers call evidence_sha256() on a SQLite
# built to distrust schemas by default (the stdlib cannot mark a Python function
# innocuous); ensure() refuses any file whose schema is not byte for byte ours.
# journal_size_limit: SQLite never shrinks the -wal file by itself. A large
# transaction (an import of a million records, a put_many of 100,000), or writes
# while a long reader keeps a checkpoint from reaching the WAL's end, leave it at its
# largest (hundreds of MB) for as long as a connection has the store open, which for
# pyevidence mcp or serve is forever. With the limit, the first commit after a
# checkpoint that reached the end (the WAL then starts again from the front) cuts the
# file to 64 MiB: room for an ordinary batch's WAL, so it is not cut and regrown on
# every batch. Read from JOURNAL_SIZE_LIMIT_BYTES as each connection opens
# (_after_check), so a test can lower it (tests/test_wal_size.py).
BUSY_TIMEOUT_MS = 5000
JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
_BEFORE_CHECK = (f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};", "PRAGMA trusted_schema = ON;")
_AFTER_CHECK: tuple[str, ...] = (
    "PRAGMA journal_mode = WAL;",
    "PRAGMA synchronous = NORMAL;",
    "PRAGMA cache_size = -65536;",
    "PRAGMA mmap_size = 1099511627776;",
    "PRAGMA secure_delete = ON;",
    "PRAGMA temp_store = MEMORY;",
)


def _after_check() -> tuple[str, ...]:
    """The settings prepare() applies once the file is recognised: _AFTER_CHECK and the
    WAL's size limit, as JOURNAL_SIZE_LIMIT_BYTES stands now."""
    return (*_AFTER_CHECK, f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES};")


# The eligibility predicate as the Python engine runs it. The C relation
# evidence_eligible (csrc/evidence_eligible.c) runs the same predicate; the
# cross-engine tests prove them equal. Candidates come in record_id order on
# both engines, so a custom scorer sees the same calls in the same order. The
# rows are read as one range of evidence_current, the (tenant, revision) of its
# key, and sorted: "+record_id" keeps SQLite from reading the tenant's records of
# every revision through the index by record instead, to spare the sort.
ELIGIBLE_SQL = (
    "SELECT record_id, revision, kind, body, source, expires_at, version, content_hash FROM evidence"
    " WHERE tenant = ?1 AND revision = ?2 AND expires_at > ?3 ORDER BY +record_id"
)

# put and forget, as both engines run them (the C copy is STMT_PUT and STMT_FORGET
# in csrc/evidence_store.c); the triggers of schema.sql do the rest.
PUT_SQL = (
    "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
)
_PUT_HEAD, _PUT_ROW = PUT_SQL.split(" VALUES ")
PUT_COLUMNS = _PUT_ROW.count("?")


def put_rows_sql(rows: int) -> str:
    """PUT_SQL for several records in one statement (for a client that pays a round trip per
    statement): the view's trigger runs for each row in turn, as for PUT_SQL once per record."""
    row = "(" + ", ".join("?" * PUT_COLUMNS) + ")"
    return f"{_PUT_HEAD} VALUES {', '.join([row] * rows)}"


# The current pointer itself, not the view evidence: SQLite's changes() does not count rows
# deleted through a view's trigger, and forget() reports whether it found the record.
FORGET_SQL = "DELETE FROM evidence_current WHERE tenant = ?1 AND record_id = ?2"

# Run by both file engines after a forget commits. The WAL still holds the erased text: the
# pages as they were before the forget, and older frames that a checkpoint leaves past the
# log's new end when it starts the log again from the front. This copies every frame into the
# file (where secure_delete has zeroed the text) and cuts the WAL to zero bytes. SQLite can
# only do it when no other connection is reading the WAL, and it would wait for such readers
# holding the write lock, so that every other writer waited too, and failed after its own busy
# timeout. So it runs without a busy timeout (ERASURE_NO_WAIT_SQL, then BUSY_TIMEOUT_SQL back):
# when a reader is there, it answers 1 in its first column at once, and the store tries again
# (EvidenceStore._erase_from_journal; docs/python-api.md, "What forget keeps").
ERASURE_CHECKPOINT_SQL = "PRAGMA wal_checkpoint(TRUNCATE)"
ERASURE_NO_WAIT_SQL = "PRAGMA busy_timeout = 0"
BUSY_TIMEOUT_SQL = f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}"

# put_many as both engines write it: the rows PUT_SQL's trigger would write, without
# the trigger (the batch writer: csrc/evidence_batch.c, and engines/python_engine.py). Each
# version is appended with its number and hashes computed by the writer, then the
# current row of each record points at its last version of the batch; the guard
# triggers of schema.sql still check that row against the version.
# tests/test_write_path.py keeps the C copies equal to these. Plain ? placeholders, each
# used once in order: the Python engine binds tuples (numbered ones want a mapping
# from Python 3.12 on), C binds by index.
# The chain head's hash as the hex that the next link hashes; the writers append the
# hashes as the 32 bytes they stand for (schema.sql, schema version 8).
CHAIN_HEAD_SQL = (
    "SELECT chain_seq, lower(hex(chain_hash)) FROM evidence_versions WHERE tenant = ?"
    " ORDER BY chain_seq DESC LIMIT 1"
)
# A record's latest version (schema version 11): the one its current row points at, else
# its evidence_forgotten row's tombstone; no row: it has none. Its seq, its chain_seq (the
# new version's previous) and whether it is a tombstone (the record is then revived).
# Binds tenant, tenant, record_id, tenant, record_id. The Python engine asks for many
# records at once, over IN lists (PythonEngine._latest_versions).
LATEST_VERSION_SQL = (
    "SELECT v.seq, v.chain_seq, v.operation = 'forget' FROM evidence_versions AS v"
    " WHERE v.tenant = ? AND v.chain_seq = coalesce("
    "(SELECT chain_seq FROM evidence_current WHERE tenant = ? AND record_id = ?),"
    " (SELECT chain_seq FROM evidence_forgotten WHERE tenant = ? AND record_id = ?))"
)
VERSION_APPEND_SQL = (
    "INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, previous, operation, revision, kind,"
    " body, source, expires_at, content_hash, chain_hash)"
    " VALUES (?, ?, ?, ?, ?, 'put', ?, ?, ?, ?, ?, ?, ?)"
)
# A forgotten record put again: its evidence_forgotten row goes, after its version is appended.
FORGOTTEN_DROP_SQL = "DELETE FROM evidence_forgotten WHERE tenant = ? AND record_id = ?"
CURRENT_UPSERT_SQL = (
    "INSERT INTO evidence_current (tenant, revision, expires_at, record_id, doc, chain_seq)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (tenant, record_id) DO UPDATE SET revision = excluded.revision,"
    " expires_at = excluded.expires_at, doc = excluded.doc, chain_seq = excluded.chain_seq"
)
# A batch written with the triggers off drops each replaced record's vector itself
# (evidence_vectors_follow_puts in schema.sql).
VECTOR_DROP_SQL = "DELETE FROM evidence_vectors WHERE tenant = ? AND record_id = ?"

# Vectors (pyevidence/ranking/vector_scoring.py). A put with a vector runs PUT_SQL and then
# VECTOR_PUT_SQL in one transaction: the vector is tied to the version just stored.
VECTOR_PUT_SQL = (
    "INSERT INTO evidence_vectors (tenant, record_id, version, model, dims, embedding)"
    " SELECT tenant, record_id, version, ?3, ?4, ?5 FROM evidence WHERE tenant = ?1 AND record_id = ?2"
)
_VECTOR_JOIN = (
    " AS v ON v.tenant = ?1 AND v.record_id = e.record_id AND v.version = e.version"
    " AND v.model = ?4 AND v.dims = ?5"
)
_CANDIDATE_COLUMNS = (
    "e.record_id, e.revision, e.kind, e.body, e.source, e.expires_at, e.version, e.content_hash"
)
# The Python engine: every eligible row, with its vector of the model or NULL.
VECTOR_ROWS_SQL = (
    f"SELECT {_CANDIDATE_COLUMNS}, v.embedding FROM evidence AS e LEFT JOIN evidence_vectors{_VECTOR_JOIN}"
    " WHERE e.tenant = ?1 AND e.revision = ?2 AND e.expires_at > ?3 ORDER BY e.record_id"
)
# The native engine, inside SQLite with sqlite-vec: the same rows with the distance
# instead of the vector, and the vector ranking rule of vector_scoring.vector_order
# in SQL. The eligible rows come first (CROSS JOIN keeps the planner from starting
# at the vectors); OFFSET 0 keeps the distance from being computed twice; only
# (record_id, distance) go through the top-k sort, and the join then reads the
# few winning rows whole, in the same statement and so the same snapshot.
VECTOR_CANDIDATES_SQL = (
    f"SELECT {_CANDIDATE_COLUMNS},"
    " CASE WHEN v.embedding IS NULL THEN NULL ELSE vec_distance_cosine(v.embedding, ?6) END,"
    " v.embedding IS NOT NULL"
    f" FROM evidence_eligible(?1, ?2, ?3) AS e LEFT JOIN evidence_vectors{_VECTOR_JOIN} ORDER BY e.record_id"
)
VECTOR_RANK_SQL = (
    f"SELECT {_CANDIDATE_COLUMNS}, 1.0 - top.distance"
    " FROM (SELECT record_id, distance FROM ("
    "   SELECT e.record_id, vec_distance_cosine(v.embedding, ?6) AS distance"
    "   FROM evidence_eligible(?1, ?2, ?3) AS e CROSS JOIN evidence_vectors AS v"
    "   WHERE v.tenant = ?1 AND v.record_id = e.record_id AND v.version = e.version"
    "     AND v.model = ?4 AND v.dims = ?5 LIMIT -1 OFFSET 0)"
    "  WHERE 1.0 - distance > ?7 AND distance >= -1.0 ORDER BY distance, record_id LIMIT ?8) AS top"
    " JOIN evidence AS e ON e.tenant = ?1 AND e.record_id = top.record_id"
    " ORDER BY top.distance, top.record_id"
)
VECTOR_COUNT_SQL = (
    "SELECT count(*), count(*) - count(v.record_id)"
    f" FROM evidence_eligible(?1, ?2, ?3) AS e LEFT JOIN evidence_vectors{_VECTOR_JOIN}"
)

Query = Callable[[str], Sequence[Sequence[Any]]]
Script = Callable[[str], None]
# Builds the token index from evidence's rows, inside the open transaction (an engine's
# build_index; see _migrate).
BuildIndex = Callable[[], object]


@cache
def schema_sql() -> str:
    """The text of schema.sql, shipped inside the package."""
    return resources.files(__package__).joinpath("schema.sql").read_text(encoding="utf-8")


@cache
def _package_text(name: str) -> str:
    return resources.files(__package__).joinpath("migrations", name).read_text(encoding="utf-8")


def prepare(
    query: Query,
    script: Script,
    where: str,
    *,
    read_only: bool = False,
    build_index: BuildIndex | None = None,
) -> None:
    """Make a fresh connection ready: settings, then the schema check (see ensure).
    A read-only connection changes nothing: no schema creation, no journal mode.
    ``build_index`` builds the token index when an upgrade creates it (see _migrate)."""
    for pragma in _BEFORE_CHECK:
        query(pragma)
    if read_only and _version(query) == 0:
        _refuse_foreign(query, where)  # another application's database is not ours to create in
        raise NoSchema(f"{where} has no pyevidence schema, and a read-only store cannot create one")
    if read_only and needs_migration(query):
        raise UpgradeNeeded(where, _version(query), SCHEMA_VERSION)
    ensure(query, script, where, build_index=build_index)
    for pragma in _after_check():
        if not (read_only and "journal_mode" in pragma):
            query(pragma)


def ensure(query: Query, script: Script, where: str, *, build_index: BuildIndex | None = None) -> None:
    """Create the schema in an empty database, or check an existing one.

    ``query`` runs one read statement and returns its rows; ``script`` runs SQL
    text (several statements). ``where`` names the database in error messages.
    Raises SchemaError for anything that is not a pyevidence database of a
    version this release understands, without writing to it.
    """
    encoding = str(query("PRAGMA encoding")[0][0])
    if encoding != "UTF-8":
        # schema.sql's UTF-8 check reads a text's stored bytes; pyevidence writes UTF-8 files only.
        raise SchemaError(
            f"{where} stores its text as {encoding}, and pyevidence stores text as UTF-8 only; "
            "open a new file instead"
        )
    if _version(query) == 0:
        # Re-check under the write lock: another process may be creating it too.
        script("BEGIN IMMEDIATE;")
        try:
            if _version(query) == 0:
                _refuse_foreign(query, where)
                script(schema_sql())
        except BaseException:
            script("ROLLBACK;")
            raise
        script("COMMIT;")
    if needs_migration(query):
        _migrate(query, script, where, build_index)
    version = _version(query)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{where} has pyevidence schema version {version}, newer than this release "
            f"understands ({SCHEMA_VERSION}); upgrade pyevidence to open it"
        )
    found = _objects(query)
    missing = expected_objects() - set(found)
    if version < SCHEMA_VERSION or missing:
        raise SchemaError(
            f"{where} is not a pyevidence database: schema version {version} "
            f"(expected {SCHEMA_VERSION}), missing or altered: "
            + (", ".join(sorted(name for _, name, _, _ in missing)) or "nothing")
        )
    _refuse_extra(found, expected_objects(), where)


def _refuse_extra(found: list[SchemaObject], expected: frozenset[SchemaObject], where: str) -> None:
    """Refuses a file holding any schema object that schema.sql does not create: an added
    trigger runs inside every put and forget (it could copy each forgotten body into a
    table of its own), a view can shadow a name pyevidence queries, a virtual table runs
    code of its module. Only SQLite's own bookkeeping tables are let through."""
    counts = Counter(found)  # a row listed twice is no row of ours either
    extra = sorted(
        obj for obj, n in counts.items() if n > 1 or (obj not in expected and obj not in _BOOKKEEPING)
    )
    if not extra:
        return
    named = ", ".join(
        f"{kind} {name}" + (f" (on {table})" if table != name else "") for kind, name, table, _ in extra
    )
    drops = " ".join(
        f"DROP {kind.upper()} IF EXISTS {_quoted(name)};"
        for kind, name, _, _ in extra
        if not name.lower().startswith("sqlite_")  # SQLite's own go with their table
    )
    raise SchemaError(
        f"{where} holds schema objects that pyevidence's schema does not define: {named}. "
        "pyevidence opens only a file whose every table, index, view and trigger it knows, "
        "since an added trigger or view runs inside its reads and writes; "
        + (f"if you added them yourself, remove them ({drops}) and open it again, " if drops else "")
        + "or restore the store from a backup"
    )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# Earlier schema versions this release upgrades in place: version -> (the
# schema that version created, frozen; the script that upgrades it to the next).
MIGRATIONS = {
    1: ("schema_v1.sql", "v1_to_v2.sql"),
    2: ("schema_v2.sql", "v2_to_v3.sql"),
    3: ("schema_v3.sql", "v3_to_v4.sql"),
    4: ("schema_v4.sql", "v4_to_v5.sql"),
    5: ("schema_v5.sql", "v5_to_v6.sql"),
    6: ("schema_v6.sql", "v6_to_v7.sql"),
    7: ("schema_v7.sql", "v7_to_v8.sql"),
    8: ("schema_v8.sql", "v8_to_v9.sql"),
    9: ("schema_v9.sql", "v9_to_v10.sql"),
    10: ("schema_v10.sql", "v10_to_v11.sql"),
    11: ("schema_v11.sql", "v11_to_v12.sql"),
    12: ("schema_v12.sql", "v12_to_v13.sql"),
}
# The upgrades that create the token index (version 4 to 5): after them the index is
# built from the rows, in the same transaction, before anything is committed.
_CREATES_THE_INDEX = frozenset({4})
# The upgrades that edit a table's CREATE text in sqlite_schema (version 5 to 6,
# its CHECKs): after them schema_version goes up by one.
_EDITS_TABLE_TEXT = frozenset({5})
_INCLUDE_SCHEMA = "-- @include schema.sql\n"


def version_in_header(path: str | os.PathLike[str]) -> int | None:
    """The schema version (PRAGMA user_version) that a database file's header records,
    read without SQLite; None when the path is not a regular file holding a SQLite
    database. Commits still in a WAL are not seen: this is for telling a user what
    opening the file will do, never for deciding it."""
    found = sqlite_file.header(path)
    if found is None or len(found) < 64:
        return None
    return int.from_bytes(found[60:64], "big", signed=True)


def upgrade_ahead(path: str | os.PathLike[str]) -> int | None:
    """The schema version of the file at path when opening it writable will upgrade it
    (see _migrate), else None."""
    version = version_in_header(path)
    return version if version in MIGRATIONS else None


def needs_migration(query: Query) -> bool:
    """Whether the database is of an earlier schema version this release upgrades on open."""
    return _version(query) in MIGRATIONS


def _migrate(query: Query, script: Script, where: str, build_index: BuildIndex | None) -> None:
    """Upgrades an earlier schema version in place, in one transaction: a failure leaves
    the file as it was. Only a file holding exactly the schema that version created is
    upgraded; anything else is refused untouched. When a step creates the token index,
    ``build_index`` builds it once all steps have run (this release's schema is then in
    place), still inside the transaction, so that no file is ever at version 5 without
    its index; without one, the schema's own SQL builds it in one statement."""
    script("BEGIN IMMEDIATE;")
    try:
        builds, first = False, _version(query)
        while (version := _version(query)) in MIGRATIONS:
            frozen, upgrade = MIGRATIONS[version]
            found = _objects(query)
            if set(found) != _objects_of(_package_text(frozen)):
                raise SchemaError(
                    f"{where} says it is pyevidence schema version {version} but its tables differ "
                    "from what that version created; it is not upgraded, restore it from a backup"
                )
            _refuse_extra(found, _objects_of(_package_text(frozen)), where)
            _refuse_text_not_utf8(query, where, version)
            # "@include schema.sql" is the schema of the version this step upgrades to:
            # frozen if a later step follows, else this release's schema.sql.
            following = MIGRATIONS.get(version + 1)
            target = _package_text(following[0]) if following else schema_sql()
            with _upgrade_errors(where, version):
                script(_package_text(upgrade).replace(_INCLUDE_SCHEMA, target))
                if version in _EDITS_TABLE_TEXT:
                    # the documented end of an edit through writable_schema: every
                    # connection, this one included, then reads the schema anew
                    bumped = int(query("PRAGMA schema_version")[0][0]) + 1
                    script(f"PRAGMA schema_version = {bumped};")
            builds = builds or version in _CREATES_THE_INDEX
        if builds:
            with _upgrade_errors(where, first, building=True):
                if build_index is None:
                    script(rebuild.BUILD_SCRIPT)
                else:
                    build_index()
    except BaseException:
        script("ROLLBACK;")
        raise
    script("COMMIT;")


# Versions before 4 did not check that stored text is UTF-8, so raw SQL could store other bytes
# (CAST(x'ff' AS TEXT)) in these tables. Every later version refuses such text: carried over, it
# would be a record that put() cannot write, and that each engine reads differently.
_TEXT_UNCHECKED_IN = {
    1: ("evidence",),
    2: ("evidence_versions", "evidence"),
    3: ("evidence_versions", "evidence"),
}


def _refuse_text_not_utf8(query: Query, where: str, version: int) -> None:
    for table in _TEXT_UNCHECKED_IN.get(version, ()):
        for column in validation.TEXT_FIELDS:
            found = query(
                f"SELECT CAST(tenant AS BLOB), CAST(record_id AS BLOB) FROM {table}"
                f" WHERE NOT evidence_utf8_valid(CAST({column} AS BLOB)) LIMIT 1"
            )
            if found:
                tenant, record_id = (bytes(value).decode("utf-8", "backslashreplace") for value in found[0])
                raise SchemaError(
                    f"{where} could not be upgraded from pyevidence schema version {version}, and is left "
                    f"as it was: the {column} of record {record_id!r} of tenant {tenant!r} (table {table}) "
                    "is stored text that is not valid UTF-8, which raw SQL wrote and no later version "
                    "stores; correct or delete that record with the release that wrote it, then open "
                    "the store again"
                )


@contextmanager
def _upgrade_errors(where: str, version: int, *, building: bool = False) -> Iterator[None]:
    """A failure of an upgrade step, as a SchemaError saying the file is left as it was (or
    the KeyboardInterrupt a SQL function of the Python engine met: sql_functions)."""
    sql_functions.clear_interrupt()
    try:
        yield
    except (StoreError, sqlite3.Error) as exc:  # the native engine raises the one, stdlib the other
        relayed = sql_functions.take_interrupt()
        if relayed is not None:
            raise relayed from None
        if isinstance(exc, SchemaError):
            raise
        steps = (
            f"from pyevidence schema version {version} to {SCHEMA_VERSION} (building the token index)"
            if building
            else f"from pyevidence schema version {version} to {version + 1}"
        )
        raise SchemaError(f"{where} could not be upgraded {steps}, and is left as it was: {exc}") from None


def _version(query: Query) -> int:
    return int(query("PRAGMA user_version")[0][0])


# Every row of sqlite_schema, SQLite's own included (a file can carry a trigger named
# sqlite_..., which SQLite runs like any other): (type, name, tbl_name, sql).
_OBJECTS_SQL = "SELECT type, name, tbl_name, sql FROM sqlite_schema"
SchemaObject = tuple[str, str, str, "str | None"]

# Tables SQLite creates for itself, holding no code: the statistics of ANALYZE and
# PRAGMA optimize, which steer only the query planner's choices, and sqlite_sequence,
# which only AUTOINCREMENT reads (no pyevidence table has it) and which SQLite never
# lets anyone drop.
_BOOKKEEPING = frozenset(
    ("table", name, name, sql)
    for name, sql in (
        ("sqlite_stat1", "CREATE TABLE sqlite_stat1(tbl,idx,stat)"),
        ("sqlite_stat4", "CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)"),
        ("sqlite_sequence", "CREATE TABLE sqlite_sequence(name,seq)"),
    )
)


def _objects(query: Query) -> list[SchemaObject]:
    return [(str(t), str(n), str(tn), None if s is None else str(s)) for t, n, tn, s in query(_OBJECTS_SQL)]


def expected_objects() -> frozenset[SchemaObject]:
    """The (type, name, tbl_name, sql) rows schema.sql creates (its automatic indexes
    included), read back from a scratch database, so the check compares against what
    SQLite itself recorded, byte for byte."""
    return _objects_of(schema_sql())


@cache
def _objects_of(sql: str) -> frozenset[SchemaObject]:
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(sql)  # creating triggers does not call evidence_sha256
        return frozenset(_objects(lambda text: scratch.execute(text).fetchall()))
    finally:
        scratch.close()


def _refuse_foreign(query: Query, where: str) -> None:
    names = [row[0] for row in query("SELECT name FROM sqlite_schema ORDER BY name")]
    if names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise SchemaError(
            f"{where} is not a pyevidence database: it already holds {shown} "
            "and no pyevidence schema version; open a new file instead"
        )
