"""The canonical token rule (pyevidence.core.tokens), pinned by example."""

from __future__ import annotations

import pytest

from pyevidence.core.tokens import token_overlap, tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("Queue-Consumer lag!", ["queue", "consumer", "lag"]),
        ("HTTP 503s at 10:42", ["http", "503s", "at", "10", "42"]),
        ("snake_case and dot.ted", ["snake", "case", "and", "dot", "ted"]),
        ("café naïve", ["caf", "na", "ve"]),  # non-ASCII letters separate tokens
        ("\u0130stanbul", ["i", "stanbul"]),  # İ lowercases to i + U+0307 (a separator)
        ("5\u212a run", ["5k", "run"]),  # KELVIN SIGN lowercases to ASCII k
        ("a\x00b", ["a", "b"]),  # NUL separates, it does not end the text
        ("１２３ ｑｕｅｕｅ", []),  # fullwidth digits and letters are not ASCII
    ],
)
def test_tokens(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_overlap_counts_distinct_shared_tokens() -> None:
    assert token_overlap("queue queue lag", "QUEUE lag lag lag other") == 2
    assert token_overlap("latency", "response time") == 0  # no synonyms
    assert token_overlap("restart", "restarted") == 0  # no stemming
