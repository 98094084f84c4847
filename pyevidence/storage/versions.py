"""Record versions: history, citation lookup and verification of the hash chain.

The versions themselves are written by the triggers of schema.sql, on both
engines alike; this module reads them through the engine's ``select`` and
recomputes the hashes with pyevidence.core.hashing, so verifying a store written by
the native engine also checks the C hash against Python's hashlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import sha256 as _sha256
from typing import Any, Protocol

from ..core.errors import StoreError
from ..core.hashing import FIRST_PREVIOUS, sha256_fields
from ..core.records import ChainBreak, Verification, Version, VersionLookup

CONTENT_TAG = "pyevidence content 2"
FORGET_TAG = "pyevidence forget 2"
CHAIN_TAG = "pyevidence chain 2"

# The hashes as the hex that evidence_sha256() gives (the table stores their bytes).
_COLUMNS = (
    "record_id, seq, operation, lower(hex(content_hash)), chain_seq, lower(hex(chain_hash)),"
    " revision, kind, body, source, expires_at"
)


# A record's versions are a list linked backwards (schema version 11): from its latest,
# which its current row names, else its evidence_forgotten row, through each version's
# previous. _walk(stop) follows it while the version reached is above seq ``stop``.
def _walk(stop: str) -> str:
    return (
        "WITH RECURSIVE walk (chain_seq) AS ("
        "SELECT coalesce((SELECT chain_seq FROM evidence_current WHERE tenant = ?1 AND record_id = ?2),"
        " (SELECT chain_seq FROM evidence_forgotten WHERE tenant = ?1 AND record_id = ?2))"
        " UNION ALL SELECT v.previous FROM walk"
        " JOIN evidence_versions AS v ON v.tenant = ?1 AND v.chain_seq = walk.chain_seq"
        f" WHERE v.previous IS NOT NULL AND v.seq > {stop})"
        f" SELECT {_COLUMNS} FROM evidence_versions"
        " WHERE tenant = ?1 AND chain_seq IN walk AND record_id = ?2"
    )


HISTORY_SQL = _walk("0") + " ORDER BY seq"
VERSION_SQL = _walk("?3") + " AND seq = ?3"
CHAIN_SQL = f"SELECT {_COLUMNS} FROM evidence_versions WHERE tenant = ?1 ORDER BY chain_seq"
# The chain a page at a time: the versions after chain position ?2, at most ?3 of them (an
# export reads a tenant of any size this way without holding it in memory).
CHAIN_PAGE_SQL = (
    f"SELECT {_COLUMNS} FROM evidence_versions"
    " WHERE tenant = ?1 AND chain_seq > ?2 ORDER BY chain_seq LIMIT ?3"
)
# CHAIN_SQL with each version's previous last, for verify().
LINKED_CHAIN_SQL = f"SELECT {_COLUMNS}, previous FROM evidence_versions WHERE tenant = ?1 ORDER BY chain_seq"
# Every tenant the store holds rows of, in code point order: with versions (a forgotten
# record's tombstone is one), and also with only a current or forgotten row left (a history
# damaged outside pyevidence), so that a check of every tenant sees those too.
TENANTS_SQL = (
    "SELECT tenant FROM evidence_versions UNION SELECT tenant FROM evidence_current"
    " UNION SELECT tenant FROM evidence_forgotten ORDER BY tenant"
)
FORGOTTEN_SQL = "SELECT record_id, chain_seq FROM evidence_forgotten WHERE tenant = ?1 ORDER BY record_id"
CURRENT_SQL = (
    "SELECT record_id, version, content_hash, revision, kind, body, source, expires_at"
    " FROM evidence WHERE tenant = ?1 ORDER BY record_id"
)
# A column of the current version of each named record of a tenant: its seq, for the check a
# remote ranking makes before each request (pyevidence/ranking/send_gate.py); its content hash,
# for an import that skips unchanged records (pyevidence/bulk.py).
_CURRENT_VERSION_IDS = 500  # ids a statement: well under any SQLite's limit of variables


def _current_column_sql(column: str, n_ids: int) -> str:
    # The ids are looked up one by one, by the index on (tenant, record_id): CROSS JOIN keeps
    # them the outer loop. With "record_id IN (...)" instead, SQLite (with no ANALYZE statistics)
    # guesses a tenant holds a few rows and reads all of them for every statement: at 100,000
    # records, 10 ms a statement rather than 2.
    ids = ", ".join(f"(?{i})" for i in range(2, n_ids + 2))
    return (
        f"WITH ids (record_id) AS (VALUES {ids}) SELECT e.record_id, e.{column}"
        " FROM ids CROSS JOIN evidence AS e WHERE e.tenant = ?1 AND e.record_id = ids.record_id"
    )


class Reader(Protocol):
    def select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


def content_hash(
    tenant: str, record_id: str, revision: str, kind: str, body: str, source: str, expires_at: int
) -> str:
    return sha256_fields(CONTENT_TAG, tenant, record_id, revision, kind, body, source, expires_at)


def forget_hash(tenant: str, record_id: str, seq: int) -> str:
    return sha256_fields(FORGET_TAG, tenant, record_id, seq)


def chain_hash(previous: str, chain_seq: int, record_id: str, seq: int, operation: str, content: str) -> str:
    return sha256_fields(CHAIN_TAG, previous, chain_seq, record_id, seq, operation, content)


_CONTENT_HEAD = f"t{len(CONTENT_TAG)}:{CONTENT_TAG}"
_CHAIN_HEAD = f"t{len(CHAIN_TAG)}:{CHAIN_TAG}"


def put_hashes(
    previous: str,
    chain_seq: int,
    seq: int,
    tenant: str,
    record_id: str,
    revision: str,
    kind: str,
    body: str,
    source: str,
    expires_at: int,
) -> tuple[bytes, bytes]:
    """The content hash and the chain hash of a put's version, as the 32 bytes each that
    content_hash() and chain_hash() give in hex: the Python writer's path. For the usual
    version, plain ASCII str and int fields, it writes sha256_fields' encoding in one
    string (about 2 µs less a version than sha256_fields' loop over the fields); for any
    other it calls them. tests/test_versions.py proves the two paths equal."""
    if (
        type(tenant) is str
        and type(record_id) is str
        and type(revision) is str
        and type(kind) is str
        and type(body) is str
        and type(source) is str
        and type(expires_at) is int
        and type(chain_seq) is int
        and type(seq) is int
        and type(previous) is str
        and (tenant + record_id + revision + kind + body + source + previous).isascii()
    ):
        expires, number, at = int.__repr__(expires_at), int.__repr__(seq), int.__repr__(chain_seq)
        content = _sha256(
            f"{_CONTENT_HEAD}t{len(tenant)}:{tenant}t{len(record_id)}:{record_id}t{len(revision)}:{revision}"
            f"t{len(kind)}:{kind}t{len(body)}:{body}t{len(source)}:{source}i{len(expires)}:{expires}".encode()
        ).digest()
        chain = _sha256(
            f"{_CHAIN_HEAD}t{len(previous)}:{previous}i{len(at)}:{at}t{len(record_id)}:{record_id}"
            f"i{len(number)}:{number}t3:putt64:{content.hex()}".encode()
        ).digest()
        return content, chain
    content_hex = content_hash(tenant, record_id, revision, kind, body, source, expires_at)
    chain_hex = chain_hash(previous, chain_seq, record_id, seq, "put", content_hex)
    return bytes.fromhex(content_hex), bytes.fromhex(chain_hex)


def history(reader: Reader, tenant: str, record_id: str) -> tuple[Version, ...]:
    return tuple(Version(*row) for row in reader.select(HISTORY_SQL, (tenant, record_id)))


def current_versions(reader: Reader, tenant: str, record_ids: Sequence[str]) -> dict[str, int]:
    """record_id -> the seq of its current version, for those of ``record_ids`` that have one."""
    return _current_column(reader, "version", tenant, record_ids)


def current_content_hashes(reader: Reader, tenant: str, record_ids: Sequence[str]) -> dict[str, str]:
    """record_id -> its current version's content hash (hex, as content_hash() gives it), for
    those of ``record_ids`` that have one: a forgotten record has none. One statement per 500
    ids; read them in one snapshot for a consistent answer."""
    return _current_column(reader, "content_hash", tenant, record_ids)


def _current_column(reader: Reader, column: str, tenant: str, record_ids: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for start in range(0, len(record_ids), _CURRENT_VERSION_IDS):
        chunk = record_ids[start : start + _CURRENT_VERSION_IDS]
        found.update(reader.select(_current_column_sql(column, len(chunk)), (tenant, *chunk)))
    return found


def get_version(reader: Reader, tenant: str, record_id: str, seq: int, digest: str) -> VersionLookup:
    """ "found" only for a version whose stored content still hashes to the cited digest;
    a version altered outside pyevidence raises StoreError rather than vouch for it."""
    rows = reader.select(VERSION_SQL, (tenant, record_id, seq))
    if not rows or rows[0][3] != digest:
        return VersionLookup(status="unknown", version=None)
    version = Version(*rows[0])
    if version.operation == "put" and _content_problem(tenant, version) is not None:
        raise StoreError(
            f"version {version.version} of record {record_id!r} no longer holds what was stored "
            f"({_content_problem(tenant, version)}): the history was changed outside pyevidence; "
            "verify() names the first broken link"
        )
    return VersionLookup(status="forgotten" if version.forgotten else "found", version=version)


def _content(version: Version) -> tuple[str | int | None, ...]:
    return (version.revision, version.kind, version.body, version.source, version.expires_at)


def _content_problem(tenant: str, version: Version) -> str | None:
    """Why a put's stored content is not what its content hash says, or None. The
    content is hashed exactly as stored: NULL is not 0 and not the text "None". A
    forgotten put has no content left (all NULL); one with only some of it is broken."""
    content = _content(version)
    if all(value is None for value in content):
        return None
    if any(value is None for value in content):
        return "part of its content is missing, which only forget may erase, and all of it"
    if version.content_hash != sha256_fields(CONTENT_TAG, tenant, version.record_id, *content):
        return "the stored content does not match its content hash"
    return None


def verify(reader: Reader, tenant: str) -> Verification:
    """Recomputes the tenant's chain and checks the current rows against it.
    The caller runs this inside one read snapshot."""
    rows = reader.select(LINKED_CHAIN_SQL, (tenant,))
    chain = [Version(*row[:-1]) for row in rows]
    breaks = _chain_breaks(tenant, chain, [row[-1] for row in rows])
    current = reader.select(CURRENT_SQL, (tenant,))
    latest = {version.record_id: version for version in chain}  # chain order: the last one wins
    if not breaks:
        breaks = _current_breaks(latest, current)
    if not breaks:
        breaks = _forgotten_breaks(latest, reader.select(FORGOTTEN_SQL, (tenant,)))
    return Verification(
        tenant=tenant,
        ok=not breaks,
        versions_checked=len(chain),
        current_checked=len(current),
        broken=breaks[0] if breaks else None,
    )


def _chain_breaks(tenant: str, chain: list[Version], links: list[int | None]) -> list[ChainBreak]:
    """The chain's broken links; ``links`` holds each version's previous."""
    breaks: list[tuple[int, ChainBreak]] = []

    def broke(version: Version, reason: str) -> None:
        breaks.append((version.chain_seq, ChainBreak(version.chain_seq, version.record_id, reason)))

    previous = FIRST_PREVIOUS
    last_seq: dict[str, int] = {}
    last_link: dict[str, int] = {}  # each record's latest chain_seq so far
    erased: dict[str, list[Version]] = {}  # forgotten puts still waiting for their tombstone
    kept: dict[str, list[Version]] = {}  # puts with content, which a tombstone must have erased
    for expected_seq, (version, link) in enumerate(zip(chain, links, strict=True), start=1):
        if version.chain_seq != expected_seq:
            broke(version, f"chain position {expected_seq} is missing: versions were removed")
            break  # every later link is off by the gap; the first break is the one to report
        if version.seq != last_seq.get(version.record_id, 0) + 1:
            broke(version, f"version {version.seq} follows version {last_seq.get(version.record_id, 0)}")
        elif link != last_link.get(version.record_id):
            broke(
                version,
                f"it names chain position {link} as the record's version before it, "
                f"which is {last_link.get(version.record_id)}",
            )
        last_seq[version.record_id] = version.seq
        last_link[version.record_id] = version.chain_seq
        if version.operation == "forget":
            if version.content_hash != forget_hash(tenant, version.record_id, version.seq):
                broke(version, "the tombstone's hash does not match it")
            erased.pop(version.record_id, None)
            for survivor in kept.pop(version.record_id, []):
                broke(survivor, "the record was forgotten, but this version kept its content")
        elif _content(version) == (None,) * 5:
            erased.setdefault(version.record_id, []).append(version)
        else:
            kept.setdefault(version.record_id, []).append(version)
        if version.operation == "put" and (problem := _content_problem(tenant, version)) is not None:
            broke(version, problem)
        elif version.operation == "forget" and _content(version) != (None,) * 5:
            broke(version, "a tombstone holds content")
        if version.chain_hash != chain_hash(
            previous,
            version.chain_seq,
            version.record_id,
            version.seq,
            version.operation,
            version.content_hash,
        ):
            broke(version, "the chain hash does not match the previous link and this version")
        previous = version.chain_hash
    for pending in erased.values():
        for version in pending:
            broke(version, "the content was erased, but the record was never forgotten")
    return [found for _, found in sorted(breaks, key=lambda pair: pair[0])]


def _current_breaks(latest: dict[str, Version], current: list[tuple[Any, ...]]) -> list[ChainBreak]:
    """The current rows against each record's latest version."""
    breaks = []
    seen = set()
    for record_id, seq, digest, revision, kind, body, source, expires_at in current:
        seen.add(record_id)
        found = latest.get(record_id)
        if found is None or found.operation != "put" or found.seq != seq:
            breaks.append(ChainBreak(None, record_id, "the current row is not the record's latest version"))
        elif (digest, revision, kind, body, source, expires_at) != (
            found.content_hash,
            found.revision,
            found.kind,
            found.body,
            found.source,
            found.expires_at,
        ):
            breaks.append(ChainBreak(found.chain_seq, record_id, "the current row differs from its version"))
    for record_id, version in sorted(latest.items()):
        if version.operation == "put" and record_id not in seen:
            breaks.append(ChainBreak(version.chain_seq, record_id, "the record's current row is missing"))
    return breaks


def _forgotten_breaks(latest: dict[str, Version], forgotten: list[tuple[Any, ...]]) -> list[ChainBreak]:
    """evidence_forgotten against each record's latest version: one row for each record whose
    latest version is a tombstone, naming that tombstone, and no other."""
    named = dict(forgotten)
    breaks = []
    for record_id, version in sorted(latest.items()):
        if version.operation == "forget" and named.get(record_id) != version.chain_seq:
            breaks.append(
                ChainBreak(version.chain_seq, record_id, "the forgotten record's latest version is not named")
            )
    for record_id, chain_seq in sorted(named.items()):
        found = latest.get(record_id)
        if found is None or found.operation != "forget" or found.chain_seq != chain_seq:
            breaks.append(
                ChainBreak(
                    chain_seq,
                    record_id,
                    "evidence_forgotten names a version that is not the record's tombstone",
                )
            )
    return breaks
