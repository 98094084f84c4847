"""A deterministic synthetic corpus for the benchmark.

Bodies of 60 words (about 400 bytes) drawn from a Zipf-like vocabulary of
20,000 pseudo-words, in the eligible scope (team-a, revision v1, expiring after
NOW), plus distractor rows that the eligibility rules must drop: other tenants,
another revision and expired rows, 20% of the table. Two query sets of 3-6
words: "rare" words (few rows match) and words drawn like the bodies ("common",
most rows match). The same seed gives the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from ..core.records import Record

VOCABULARY_SIZE = 20_000
WORDS_PER_BODY = 60
DISTRACTOR_SHARE = 0.2
TENANT, REVISION, NOW = "team-a", "v1", 1_000
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "th", "sh", "ch", "x"]


@dataclass(frozen=True)
class Corpus:
    seed: int
    vocabulary: tuple[str, ...]
    cum_weights: tuple[float, ...]

    @classmethod
    def make(cls, seed: int = 7) -> Corpus:
        rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < VOCABULARY_SIZE:
            words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
        vocabulary = sorted(words)
        rng.shuffle(vocabulary)  # rank order: word 0 is the most frequent
        weights = [1.0 / (rank + 1) for rank in range(VOCABULARY_SIZE)]
        return cls(seed, tuple(vocabulary), tuple(accumulate(weights)))

    def _body(self, rng: random.Random) -> str:
        words = rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=WORDS_PER_BODY)
        # Some capitals and punctuation, so case folding and separators do real work.
        for i in range(0, WORDS_PER_BODY, 7):
            words[i] = words[i].capitalize()
        return " ".join(words).replace(" ", ", ", 3) + "."

    def records(self, eligible: int) -> Iterator[Record]:
        """``eligible`` in-scope records plus the distractors, in a shuffled order."""
        rng = random.Random(f"{self.seed}-{eligible}")
        distractors = round(eligible * DISTRACTOR_SHARE / (1 - DISTRACTOR_SHARE))
        kinds = ["eligible"] * eligible + ["tenant", "revision", "expired"] * (distractors // 3)
        kinds += ["tenant"] * (distractors - 3 * (distractors // 3))
        rng.shuffle(kinds)
        for n, kind in enumerate(kinds):
            yield Record(
                tenant=f"team-{'bcd'[n % 3]}" if kind == "tenant" else TENANT,
                record_id=f"rec-{rng.getrandbits(40):010x}-{n}",
                revision="v0" if kind == "revision" else REVISION,
                kind=("runbook", "incident", "working")[n % 3],
                body=self._body(rng),
                source=f"bench://{n}",
                expires_at=rng.randint(0, NOW) if kind == "expired" else rng.randint(NOW + 1, 10 * NOW),
            )

    def queries(self, which: str, count: int) -> list[str]:
        """``count`` queries of 3-6 words: "rare" (ranks 5,000 and up) or "common" (Zipf)."""
        rng = random.Random(f"{self.seed}-{which}")
        out = []
        for _ in range(count):
            k = rng.randint(3, 6)
            if which == "rare":
                words = rng.sample(self.vocabulary[5_000:], k)
            elif which == "common":
                words = rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=k)
            else:
                raise ValueError(f"unknown query set {which!r}; use 'rare' or 'common'")
            out.append(" ".join(words))
        return out
