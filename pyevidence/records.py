"""The values pyevidence stores and returns."""

from __future__ import annotations

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
    """An eligible record handed to a scorer: already inside the caller's scope."""

    record_id: str
    revision: str
    kind: str
    body: str
    source: str
    expires_at: int


@dataclass(frozen=True)
class Hit:
    """A record that may answer the question, with the citation to show for it.

    ``citation`` is the record's ``source`` string: a synthetic identifier such as
    ``runbook://queue/v1`` chosen by whoever stored the record, not a URL pyevidence
    resolves.
    """

    record_id: str
    revision: str
    kind: str
    score: int | float
    citation: str
    body: str
    expires_at: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "revision": self.revision,
            "kind": self.kind,
            "score": self.score,
            "citation": self.citation,
            "body": self.body,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True)
class Retrieval(Sequence[Hit]):
    """The ranked hits of one retrieve() call, best first.

    ``eligible_count`` is how many records were in scope (tenant, revision, not
    expired) before scoring, so a caller can tell "nothing in scope" (0) from
    "nothing matched" (> 0 with no hits). An empty Retrieval means *no evidence
    found*: it is not evidence that no problem exists.
    """

    hits: tuple[Hit, ...]
    eligible_count: int

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
            "eligible_count": self.eligible_count,
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
