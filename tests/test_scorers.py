"""The scorer seam: custom scorers see only eligible candidates; bad scores are errors."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from helpers import record

from pyevidence import EvidenceStore, ScorerError, TokenScorer


class Recording:
    """Scores by body length and records every body it was shown."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def score(self, query: str, body: str) -> float:
        self.seen.append((query, body))
        return float(len(body))


def test_custom_scorer_sees_only_eligible_bodies(store: EvidenceStore) -> None:
    store.put(**record(record_id="in", body="eligible body"))
    store.put(**record(record_id="other-tenant", tenant="team-b", body="team-b secret"))
    store.put(**record(record_id="other-rev", revision="v2", body="v2 text"))
    store.put(**record(record_id="expired", body="expired text", expires_at=5))
    scorer = Recording()
    result = store.retrieve(tenant="team-a", revision="v1", query="anything", now=5, scorer=scorer)
    assert scorer.seen == [("anything", "eligible body")]
    assert [(h.record_id, h.score) for h in result] == [("in", 13.0)]


def test_custom_scorer_uses_the_same_ranking_rules(store: EvidenceStore) -> None:
    scores = {"a": 1.5, "b": 2, "c": 1.5, "d": 0, "e": -3.0}
    for rid in scores:
        store.put(**record(record_id=rid, body=rid))

    class Table:
        def score(self, query: str, body: str) -> float:
            return scores[body]

    result = store.retrieve(tenant="team-a", revision="v1", query="", now=0, scorer=Table())
    assert [(h.record_id, h.score) for h in result] == [("b", 2), ("a", 1.5), ("c", 1.5)]
    assert result.eligible_count == 5


def test_token_scorer_passed_explicitly_matches_default(store: EvidenceStore) -> None:
    store.put(**record(record_id="x", body="queue lag"))
    store.put(**record(record_id="y", body="queue"))
    default = store.retrieve(tenant="team-a", revision="v1", query="queue lag", now=0)
    explicit = store.retrieve(tenant="team-a", revision="v1", query="queue lag", now=0, scorer=TokenScorer())
    assert default == explicit


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "3", None, True, [1], 1j])
def test_non_finite_or_non_numeric_scores_are_errors(store: EvidenceStore, bad: Any) -> None:
    store.put(**record())

    class Bad:
        def score(self, query: str, body: str) -> Any:
            return bad

    with pytest.raises(ScorerError, match="record 'r1'"):
        store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=Bad())


class HugeRepr(int):
    """An int whose repr fails, as an int of over 4,300 digits does."""

    def __repr__(self) -> str:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")


@pytest.mark.parametrize(
    "bad",
    [Fraction(10**400, 3), -Fraction(10**400), 10**400, HugeRepr(10**400)],
    ids=["fraction", "negative fraction", "int", "int whose repr fails"],
)
def test_scores_beyond_floats_range_are_scorer_errors(store: EvidenceStore, bad: Any) -> None:
    """A real number that cannot become a finite float is the scorer's bug, reported as
    ScorerError naming the record, never a raw OverflowError."""
    store.put(**record())

    class Huge:
        def score(self, query: str, body: str) -> Any:
            return bad

    with pytest.raises(ScorerError, match=r"for record 'r1', which does not fit in a float") as caught:
        store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=Huge())
    assert len(str(caught.value)) < 300  # the reason shows the score cut short, not 400 digits


def test_other_real_numbers_are_accepted_as_plain_numbers(store: EvidenceStore) -> None:
    store.put(**record())

    class Frac:
        def score(self, query: str, body: str) -> Fraction:
            return Fraction(1, 4)

    (hit,) = store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=Frac())
    assert hit.score == 0.25 and type(hit.score) is float


def test_the_result_names_the_scorer_that_ranked_it(store: EvidenceStore) -> None:
    store.put(**record())
    default = store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)
    assert (default.status, default.ranked_by, default.reason, default.cost) == (
        "ok",
        "token_overlap",
        None,
        None,
    )

    class Named:
        name = "body-length"

        def score(self, query: str, body: str) -> int:
            return len(body)

    assert (
        store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=Named()).ranked_by
        == "body-length"
    )
    assert (
        store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=Recording()).ranked_by
        == "Recording"
    )


def test_a_set_ranker_must_answer_for_the_candidates_it_was_given(store: EvidenceStore) -> None:
    from pyevidence import Retrieval

    store.put(**record())

    class Liar:
        def rank_candidates(self, query: str, candidates: Any, limit: int) -> Retrieval:
            return Retrieval(hits=(), eligible_count=len(candidates) + 1)

    with pytest.raises(ScorerError, match="rank_candidates"):
        store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=Liar())
    with pytest.raises(Exception, match="score\\(query, body\\) or a rank_candidates"):
        store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=object())  # type: ignore[arg-type]
