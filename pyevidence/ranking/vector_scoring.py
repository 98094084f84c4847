"""VectorScorer and HybridScorer: ranking by stored embeddings, over the eligible set only.

Both run inside retrieve() on the store's engine: eligibility first (the same
relation as every retrieve), then distance over the eligible rows that have a
vector of the scorer's model. There is no nearest-neighbour index searched
before filtering, so a scope whose nearest neighbours are mostly other tenants'
still gets its full ``limit`` of hits.

The ranking rule, in one place for the Python engine (here) and in SQL for the
native engine (schema.VECTOR_RANK_SQL), which the tests prove equal: cosine
distance ascending, ties by record id; a hit needs similarity (1 - distance)
above ``min_similarity`` (and at most 2); ``Hit.score`` is that similarity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import ValidationError
from ..core.records import Candidate, Hit, Retrieval
from ..core.vectors import Embedder, Vector
from .scoring import TokenScorer, hit_from, order

RRF_K = 60  # the constant of reciprocal-rank fusion (Cormack et al., 2009)


@dataclass(frozen=True)
class Scored:
    """An eligible candidate with its cosine distance to the query. ``distance`` is None
    when it has no vector of the query's model and dims (``has_vector`` False), or when
    the distance is NaN, which only a vector written by raw SQL can give (SQLite turns
    a NaN result into NULL)."""

    candidate: Candidate
    distance: float | None
    has_vector: bool


def _similarity_floor(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= value < 1.0:
        raise ValidationError("min_similarity", f"must be a number in -1.0 <= x < 1.0, got {value!r}")
    return float(value)


def _vector_ranked(rows: Sequence[Scored], min_similarity: float) -> list[Scored]:
    """The rows that rank, best first (distance ascending, ties by record id)."""
    # A distance below -1 (similarity above 2) is impossible for real vectors: only a
    # degenerate vector written by raw SQL (a float32 norm that underflows) gives one.
    ranked = [
        r for r in rows if r.distance is not None and 1.0 - r.distance > min_similarity and r.distance >= -1.0
    ]
    ranked.sort(key=lambda r: (r.distance, r.candidate.record_id))
    return ranked


def vector_order(rows: Sequence[Scored], min_similarity: float) -> list[tuple[float, Candidate]]:
    """(similarity, candidate) of the rows that rank, best first: the rule in Python."""
    return [(1.0 - r.distance, r.candidate) for r in _vector_ranked(rows, min_similarity)]  # type: ignore[operator]


def competition_ranks(ranking: Sequence[tuple[object, str]]) -> dict[str, int]:
    """{record id: rank} of a ranking given best first as (key, record id) pairs, ranks
    counted from 1 in standard competition ranking (1, 1, 3): records whose keys are
    equal share the best rank among them, so the record id, which only orders equal
    keys, never changes a rank."""
    ranks: dict[str, int] = {}
    rank, previous_key = 0, None
    for position, (key, record_id) in enumerate(ranking, start=1):
        if position == 1 or key != previous_key:
            rank, previous_key = position, key
        ranks[record_id] = rank
    return ranks


class VectorScorer:
    """Ranks eligible records by the cosine similarity of their stored vector (made by
    ``embedder``'s model) to the query's vector, which ``embedder`` computes.

    Records without a vector of that model are not ranked; Retrieval.unranked_count
    says how many. The native engine computes the distance with sqlite-vec (the vectors
    extra); the Python engine computes it in Python.
    """

    def __init__(self, embedder: Embedder, *, min_similarity: float = 0.0) -> None:
        if not isinstance(embedder, Embedder):
            raise ValidationError("embedder", f"must be a pyevidence.Embedder, got {type(embedder).__name__}")
        self.embedder = embedder
        self.min_similarity = _similarity_floor(min_similarity)
        self.name = f"vector:{embedder.model}"

    def prepare(self, query: str) -> Vector:
        return self.embedder.vector(query, field="query embedding")

    def rank_in(
        self, engine: Any, scope: tuple[str, str, int], query: str, prepared: Vector, limit: int
    ) -> Callable[[], Retrieval]:
        """Reads what the ranking needs from ``engine`` (under the store's lock); the
        function returned finishes it, after the lock is released."""
        del query
        ranked = engine.rank_by_vector(*scope, prepared, self.min_similarity, limit)

        def finish() -> Retrieval:
            hits, eligible, unranked = ranked()
            return Retrieval(hits=hits, eligible_count=eligible, ranked_by=self.name, unranked_count=unranked)

        return finish


class HybridScorer:
    """Reciprocal-rank fusion of the lexical ranking (TokenScorer: records sharing a
    token with the query) and the vector ranking (VectorScorer's rule) of the same
    eligible set, read in one snapshot.

    A record's fused score is the sum over the two rankings it appears in of
    weight / (60 + rank), ranks counted from 1; highest first, ties by record id.
    Records equal in one ranking share its rank (competition_ranks: 1, 1, 3), so the
    record id only breaks ties of the fused score, never changes one.
    It needs no score calibration between the two, and it is deterministic: ranks
    are integers, so the same rankings give the same fused scores on every engine.

    Retrieval.unranked_count counts the eligible records it could not rank for want
    of a vector of its model: those without one that the lexical ranking does not
    place either (with lexical_weight 0, all without one; with vector_weight 0, none).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        lexical_weight: float = 1.0,
        vector_weight: float = 1.0,
        min_similarity: float = 0.0,
    ) -> None:
        self.vectors = VectorScorer(embedder, min_similarity=min_similarity)
        for field, weight in (("lexical_weight", lexical_weight), ("vector_weight", vector_weight)):
            number = isinstance(weight, (int, float)) and not isinstance(weight, bool)
            if not number or not math.isfinite(weight) or weight < 0:
                raise ValidationError(field, f"must be a finite number >= 0, got {weight!r}")
        if lexical_weight == 0 and vector_weight == 0:  # no record could ever score above 0
            raise ValidationError(
                "vector_weight",
                "lexical_weight and vector_weight are both 0: at least one must be > 0, "
                "or no record could ever be ranked",
            )
        self.lexical_weight = float(lexical_weight)
        self.vector_weight = float(vector_weight)
        self.name = f"hybrid:token_overlap+vector:{embedder.model}"

    def prepare(self, query: str) -> Vector:
        return self.vectors.prepare(query)

    def rank_in(
        self, engine: Any, scope: tuple[str, str, int], query: str, prepared: Vector, limit: int
    ) -> Callable[[], Retrieval]:
        """As VectorScorer.rank_in: the rows now, the fusion after the lock is released."""
        read = engine.vector_candidates(*scope, prepared)
        return lambda: self._fuse(read(), query, limit)

    def _fuse(self, rows: Sequence[Scored], query: str, limit: int) -> Retrieval:
        tokens = TokenScorer()
        lexical = [(tokens.score(query, r.candidate.body), r.candidate) for r in rows]
        lexical_ranked = order([(s, c) for s, c in lexical if s > 0], len(rows))
        vector_ranked = _vector_ranked(rows, self.vectors.min_similarity)
        fused: dict[str, float] = {}
        by_id: dict[str, Candidate] = {r.candidate.record_id: r.candidate for r in rows}
        lexical_ranks = competition_ranks([(h.score, h.record_id) for h in lexical_ranked])
        vector_ranks = competition_ranks([(r.distance, r.candidate.record_id) for r in vector_ranked])
        for weight, ranks in ((self.lexical_weight, lexical_ranks), (self.vector_weight, vector_ranks)):
            for record_id, rank in ranks.items():
                fused[record_id] = fused.get(record_id, 0.0) + weight / (RRF_K + rank)
        scored = [(score, by_id[rid]) for rid, score in fused.items() if score > 0]
        # Unranked: the records it could not rank for want of a vector of its model, those
        # without one that the lexical ranking does not place either. None when the vector
        # ranking has no weight: a vector would not have ranked them.
        lexical_places = lexical_ranks if self.lexical_weight > 0 else {}
        unranked = (
            sum(1 for r in rows if not r.has_vector and r.candidate.record_id not in lexical_places)
            if self.vector_weight > 0
            else 0
        )
        hits: tuple[Hit, ...] = order(scored, limit)
        return Retrieval(hits=hits, eligible_count=len(rows), ranked_by=self.name, unranked_count=unranked)


InStoreRanker = VectorScorer | HybridScorer


def python_rank_by_vector(
    rows: Sequence[Scored], min_similarity: float, limit: int
) -> tuple[tuple[Hit, ...], int, int]:
    """The Python engine's rank_by_vector: (hits, eligible count, unranked count)."""
    ranked = vector_order(rows, min_similarity)[:limit]
    hits = tuple(hit_from(candidate, similarity) for similarity, candidate in ranked)
    return hits, len(rows), sum(1 for r in rows if not r.has_vector)
