"""Opening a database: connection settings, schema creation and recognition.

The table layout itself lives in schema.sql; this module only decides whether a
file is a pyevidence database this release can use, and creates the schema in
an empty one. Both engines go through ``ensure`` so they accept and refuse the
same files.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

from .errors import SchemaError

SCHEMA_VERSION = 1

# Connection settings, applied by prepare() on every connection of both engines.
# The busy timeout makes a writer wait for a lock instead of failing at once.
# WAL lets readers run while a writer commits; it is set only after the file is
# recognised, because switching a journal mode rewrites the file header.
# synchronous=NORMAL is WAL's usual setting: a commit survives a crash of the
# process or of the application, but the last commits before a power loss or an
# OS crash may be lost (never the database's integrity); see README "Guarantees".
# The page cache and memory-mapped reads are sized for a scan over the eligible
# rows: 64 MiB of cache and up to 256 MiB mapped per connection.
BUSY_TIMEOUT_MS = 5000
_BEFORE_CHECK = (f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};",)
_AFTER_CHECK = (
    "PRAGMA journal_mode = WAL;",
    "PRAGMA synchronous = NORMAL;",
    "PRAGMA cache_size = -65536;",
    "PRAGMA mmap_size = 268435456;",
)

# The eligibility predicate as the Python engine runs it. The C relation
# evidence_eligible (csrc/evidence_eligible.c) runs the same predicate; the
# cross-engine tests prove them equal. Candidates come in record_id order on
# both engines, so a custom scorer sees the same calls in the same order.
ELIGIBLE_SQL = (
    "SELECT record_id, revision, kind, body, source, expires_at FROM evidence"
    " WHERE tenant = ?1 AND revision = ?2 AND expires_at > ?3 ORDER BY record_id"
)

Query = Callable[[str], Sequence[Sequence[Any]]]
Script = Callable[[str], None]


@cache
def schema_sql() -> str:
    """The text of schema.sql, shipped inside the package."""
    return resources.files(__package__).joinpath("schema.sql").read_text(encoding="utf-8")


def prepare(query: Query, script: Script, where: str, *, read_only: bool = False) -> None:
    """Make a fresh connection ready: settings, then the schema check (see ensure).
    A read-only connection changes nothing: no schema creation, no journal mode."""
    for pragma in _BEFORE_CHECK:
        query(pragma)
    if read_only and _version(query) == 0:
        raise SchemaError(f"{where} has no pyevidence schema, and a read-only store cannot create one")
    ensure(query, script, where)
    for pragma in _AFTER_CHECK:
        if not (read_only and "journal_mode" in pragma):
            query(pragma)


def ensure(query: Query, script: Script, where: str) -> None:
    """Create the schema in an empty database, or check an existing one.

    ``query`` runs one read statement and returns its rows; ``script`` runs SQL
    text (several statements). ``where`` names the database in error messages.
    Raises SchemaError for anything that is not a pyevidence database of a
    version this release understands, without writing to it.
    """
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
    version = _version(query)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{where} has pyevidence schema version {version}, newer than this release "
            f"understands ({SCHEMA_VERSION}); upgrade pyevidence to open it"
        )
    missing = expected_objects() - set(_objects(query))
    if version < SCHEMA_VERSION or missing:
        raise SchemaError(
            f"{where} is not a pyevidence database: schema version {version} "
            f"(expected {SCHEMA_VERSION}), missing or altered: "
            + (", ".join(sorted(name for _, name, _ in missing)) or "nothing")
        )


def _version(query: Query) -> int:
    return int(query("PRAGMA user_version")[0][0])


_OBJECTS_SQL = "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"


def _objects(query: Query) -> list[tuple[str, str, str]]:
    return [(str(t), str(n), str(s)) for t, n, s in query(_OBJECTS_SQL)]


@cache
def expected_objects() -> frozenset[tuple[str, str, str]]:
    """The (type, name, sql) rows schema.sql creates, read back from a scratch database,
    so the check compares against what SQLite itself recorded, byte for byte."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(schema_sql())
        return frozenset(_objects(lambda sql: scratch.execute(sql).fetchall()))
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
