"""Scorers and the ranking order.

A scorer is any object with ``score(query, body) -> int | float``. It only ever
receives candidates that already passed the eligibility rules (tenant, revision,
expiry), so a scorer, local or remote, never sees out-of-scope text.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from ..core import tokens
from ..core.errors import ScorerError
from ..core.records import Candidate, Hit, Retrieval, version_id
from ..core.strict_json import shown


@runtime_checkable
class Scorer(Protocol):
    def score(self, query: str, body: str) -> int | float: ...


@runtime_checkable
class SetRanker(Protocol):
    """A scorer that ranks the whole eligible set at once (RemoteScorer): it gets every
    eligible candidate, in record id order, and returns the Retrieval itself."""

    def rank_candidates(self, query: str, candidates: Sequence[Candidate], limit: int) -> Retrieval: ...


class TokenScorer:
    """Counts the distinct tokens a query and a body share (see pyevidence.core.tokens).

    Lexical only: it does not understand meaning, synonyms or word forms.
    """

    name = "token_overlap"

    def __init__(self) -> None:
        # The last query and its token set: a retrieve scores every candidate
        # against one query, so it is tokenised once, not once per row. One
        # tuple, swapped whole, so threads sharing a scorer never mix two queries.
        self._last: tuple[str, frozenset[str]] = ("", frozenset())

    def score(self, query: str, body: str) -> int:
        last = self._last
        if last[0] != query:
            last = (query, tokens.token_set(query))
            self._last = last
        return len(last[1] & tokens.token_set(body))


def _checked(score: object, record_id: str) -> int | float:
    """A plain int or a finite float; anything else is the scorer's bug, reported.

    A score must also fit in a float, as every ranking compares scores as numbers:
    an int or a fraction beyond float's range (``10**400``, ``Fraction(10**400, 3)``)
    is refused, as NaN and the infinities are."""
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise ScorerError(
            f"scorer returned {type(score).__name__} for record {record_id!r}; "
            "a score must be a real number (int or float)"
        )
    try:
        value = float(score)
        exact = int(score) if isinstance(score, numbers.Integral) else value
    except (ArithmeticError, ValueError, TypeError) as exc:  # OverflowError: beyond float's range
        raise ScorerError(
            f"scorer returned {_shown_score(score)} for record {record_id!r}, which does not fit in a "
            f"float ({type(exc).__name__}: {shown(exc, str)}); scores must be finite"
        ) from None
    if not math.isfinite(value):
        raise ScorerError(f"scorer returned {value!r} for record {record_id!r}; scores must be finite")
    return exact


def _shown_score(score: object) -> str:
    """The score as a reason shows it: its repr cut short, or its type if even that fails
    (the repr of an int over 4,300 digits raises ValueError)."""
    try:
        return shown(score)
    except Exception:  # a repr that fails must not hide the scorer's error
        return f"a {type(score).__name__}"


def rank(query: str, candidates: Iterable[Candidate], scorer: Scorer, limit: int) -> tuple[Hit, ...]:
    """The ranking order of score() scorers: positive scores only, highest first,
    ties by record id (see order)."""
    scored = []
    for candidate in candidates:
        score = _checked(scorer.score(query, candidate.body), candidate.record_id)
        if score > 0:
            scored.append((score, candidate))
    return order(scored, limit)


def order(scored: Iterable[tuple[int | float, Candidate]], limit: int) -> tuple[Hit, ...]:
    """The ranking order, in one place: highest score first, ties by record id
    ascending (code point order, the same as SQLite's BINARY collation on UTF-8),
    at most ``limit`` hits."""
    ranked = sorted(scored, key=lambda pair: (-pair[0], pair[1].record_id))
    return tuple(hit_from(candidate, score) for score, candidate in ranked[:limit])


def scorer_name(scorer: object) -> str:
    """What Retrieval.ranked_by says for ``scorer``: its ``name``, else its class name."""
    name = getattr(scorer, "name", None)
    return name if isinstance(name, str) and name else type(scorer).__name__


def hit_from(candidate: Candidate, score: int | float) -> Hit:
    return Hit(
        record_id=candidate.record_id,
        revision=candidate.revision,
        kind=candidate.kind,
        score=score,
        citation=candidate.source,
        body=candidate.body,
        expires_at=candidate.expires_at,
        version=version_id(candidate.version, candidate.content_hash),
    )
