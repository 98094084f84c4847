"""The values pyevidence stores and returns."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

KINDS = ("working", "incident", "runbook")


@dataclass(frozen=True)
class Record:
    """One stored record, as validated by put(). The engines bind the fields in this
    order: it is the column order of their INSERT statements."""

    tenant: str
    record_id: str
    revision: str
    kind: str
    body: str
    source: str
    expires_at: int


@dataclass(frozen=True)
class Candidate:
    """An eligible record handed to a scorer: already inside the caller's scope.
    ``version`` is its current version's sequence number, ``content_hash`` that
    version's hash (see Hit.version)."""

    record_id: str
    revision: str
    kind: str
    body: str
    source: str
    expires_at: int
    version: int
    content_hash: str


@dataclass(frozen=True)
class Hit:
    """A record that may answer the question, with the citation to show for it.

    ``citation`` is the record's ``source`` string: a synthetic identifier such as
    ``runbook://queue/v1`` chosen by whoever stored the record, not a URL pyevidence
    resolves. ``version`` names the exact stored version this hit was read from,
    ``"<seq>-<content hash>"``; ``cite()`` gives ``"<citation>@<version>"``, which
    ``store.get_version`` resolves later to exactly this body and these fields.
    """

    record_id: str
    revision: str
    kind: str
    score: int | float
    citation: str
    body: str
    expires_at: int
    version: str

    def cite(self) -> str:
        """The reproducible citation: ``source@version``."""
        return f"{self.citation}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "revision": self.revision,
            "kind": self.kind,
            "score": self.score,
            "citation": self.citation,
            "version": self.version,
            "body": self.body,
            "expires_at": self.expires_at,
        }


def version_id(seq: int, content_hash: str) -> str:
    """The version identifier of Hit.version and get_version: ``"<seq>-<content hash>"``."""
    return f"{seq}-{content_hash}"


# A version identifier as version_id renders it: "<seq>-<64 hex digits>".
VERSION_PATTERN = re.compile(r"([1-9][0-9]{0,18})-([0-9a-f]{64})")


def parse_version(version: str) -> tuple[int, str] | None:
    """(seq, content hash) of a version identifier, or None if it is not one."""
    match = VERSION_PATTERN.fullmatch(version)
    if match is None or int(match.group(1)) > 2**63 - 1:
        return None
    return int(match.group(1)), match.group(2)


@dataclass(frozen=True)
class Version:
    """One entry of a record's history (store.history, store.get_version).

    ``operation`` is "put" (a stored version) or "forget" (the tombstone a forget
    left). A forgotten put keeps only its identity and hashes: ``revision``,
    ``kind``, ``body``, ``source`` and ``expires_at`` are None, ``forgotten`` is True.
    ``chain_seq`` and ``chain_hash`` are its place in the tenant's hash chain.
    """

    record_id: str
    seq: int
    operation: str
    content_hash: str
    chain_seq: int
    chain_hash: str
    revision: str | None
    kind: str | None
    body: str | None
    source: str | None
    expires_at: int | None

    @property
    def version(self) -> str:
        return version_id(self.seq, self.content_hash)

    @property
    def forgotten(self) -> bool:
        """True for a put whose content a forget erased, and for the tombstone itself."""
        return self.body is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "version": self.version,
            "seq": self.seq,
            "operation": self.operation,
            "forgotten": self.forgotten,
            "content_hash": self.content_hash,
            "chain_seq": self.chain_seq,
            "chain_hash": self.chain_hash,
            "revision": self.revision,
            "kind": self.kind,
            "source": self.source,
            "body": self.body,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True)
class VersionLookup:
    """What store.get_version found for a cited version.

    ``status`` is "found" (``version`` holds exactly the cited body and fields),
    "forgotten" (the record was forgotten: ``version`` holds the hashes only) or
    "unknown" (no such version of that record in this tenant; ``version`` is None).
    """

    status: str
    version: Version | None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "version": self.version.to_dict() if self.version else None}


@dataclass(frozen=True)
class ChainBreak:
    """The first place store.verify found the tenant's history not to hold together."""

    chain_seq: int | None
    record_id: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"chain_seq": self.chain_seq, "record_id": self.record_id, "reason": self.reason}


@dataclass(frozen=True)
class Verification:
    """The result of store.verify(tenant=...): ``ok`` when every version's hashes,
    the chain and the current rows check out; otherwise ``broken`` is the first
    break, in chain order (breaks of the current table come after the chain's)."""

    tenant: str
    ok: bool
    versions_checked: int
    current_checked: int
    broken: ChainBreak | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "ok": self.ok,
            "versions_checked": self.versions_checked,
            "current_checked": self.current_checked,
            "broken": self.broken.to_dict() if self.broken else None,
        }


@dataclass(frozen=True)
class IndexRebuild:
    """What store.reindex() built: the token index's scopes ((tenant, revision) pairs),
    its records (one document each) and its postings rows, and the seconds it took."""

    scopes: int
    records: int
    postings_rows: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "scopes": self.scopes,
            "records": self.records,
            "postings_rows": self.postings_rows,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class IndexProblem:
    """One way the token index differs from what a rebuild would make. ``kind`` is a
    stable name (docs/token-index.md lists them); ``tenant`` and ``revision`` name the
    scope when there is one; ``detail`` says what was found, in words."""

    kind: str
    tenant: str | None
    revision: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tenant": self.tenant, "revision": self.revision, "detail": self.detail}


@dataclass(frozen=True)
class IndexCheck:
    """The result of store.check_index(): ``ok`` when the token index holds exactly what
    a rebuild from the current rows would (document numbers aside); otherwise
    ``problems`` lists the first of them (``problems_found`` counts them all), and
    ``fix`` says how to repair it."""

    ok: bool
    scopes_checked: int
    records_checked: int
    problems_found: int
    problems: tuple[IndexProblem, ...]

    @property
    def fix(self) -> str | None:
        return None if self.ok else "pyevidence reindex --db FILE (or store.reindex()) rebuilds the index"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "scopes_checked": self.scopes_checked,
            "records_checked": self.records_checked,
            "problems_found": self.problems_found,
            "problems": [p.to_dict() for p in self.problems],
            "fix": self.fix,
        }


@dataclass(frozen=True)
class ScorerCost:
    """What a remote scorer spent: on one retrieve (``Retrieval.cost``) or in total
    (``RemoteScorer.totals``). ``requests`` counts HTTP requests sent, retries
    included; ``retries`` how many of them were repeats; ``candidates_sent`` and
    ``bytes_sent`` (request bodies) add up every request sent; ``bytes_received``
    the response bodies read; ``elapsed_seconds`` the wall-clock time spent."""

    requests: int = 0
    retries: int = 0
    candidates_sent: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    elapsed_seconds: float = 0.0

    def __add__(self, other: ScorerCost) -> ScorerCost:
        return ScorerCost(
            requests=self.requests + other.requests,
            retries=self.retries + other.retries,
            candidates_sent=self.candidates_sent + other.candidates_sent,
            bytes_sent=self.bytes_sent + other.bytes_sent,
            bytes_received=self.bytes_received + other.bytes_received,
            elapsed_seconds=self.elapsed_seconds + other.elapsed_seconds,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "candidates_sent": self.candidates_sent,
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "elapsed_seconds": self.elapsed_seconds,
        }


# Retrieval.status values.
OK, DEGRADED, UNAVAILABLE = "ok", "degraded", "unavailable"


@dataclass(frozen=True)
class Retrieval(Sequence[Hit]):
    """The ranked hits of one retrieve() call, best first.

    ``eligible_count`` is how many records were in scope (tenant, revision, not
    expired) before scoring, so a caller can tell "nothing in scope" (0) from
    "nothing matched" (> 0 with no hits). An empty Retrieval means *no evidence
    found*: it is not evidence that no problem exists.

    ``status`` says whether the scorer asked for did the ranking: "ok"; "degraded"
    (it failed and the fallback scorer configured on it ranked instead); or
    "unavailable" (it failed, there is no fallback, and there are no hits: the
    records were *not ranked*, which is not "no evidence"). ``ranked_by`` names the
    scorer that ranked the hits, ``reason`` says why a scorer failed (else None).
    ``unranked_count`` counts eligible records the scorer could not rank (for a
    VectorScorer: no stored vector of its model; for a HybridScorer: no such vector
    and no token shared with the query either). ``cost`` is what a remote scorer
    spent on this call (else None).
    """

    hits: tuple[Hit, ...]
    eligible_count: int
    status: str = OK
    ranked_by: str = "token_overlap"
    reason: str | None = None
    unranked_count: int = 0
    cost: ScorerCost | None = None

    @overload
    def __getitem__(self, index: int) -> Hit: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Hit]: ...
    def __getitem__(self, index: int | slice) -> Hit | Sequence[Hit]:
        return self.hits[index]

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ranked_by": self.ranked_by,
            "reason": self.reason,
            "eligible_count": self.eligible_count,
            "unranked_count": self.unranked_count,
            "cost": self.cost.to_dict() if self.cost else None,
            "hits": [hit.to_dict() for hit in self.hits],
        }


@dataclass(frozen=True)
class QueryResult(Sequence[tuple[Any, ...]]):
    """The rows of store.query(), with the statement's column names."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Any, ...]]: ...
    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | Sequence[tuple[Any, ...]]:
        return self.rows[index]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)
