"""The canonical token rule (pyevidence.core.tokens), pinned by example."""

from __future__ import annotations

import itertools
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyevidence.core.tokens import token_overlap, token_spans, tokens


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


@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("İIi\u212aaZ9 -Σσ")))
def test_token_spans_are_the_tokens_where_they_stand(text: str) -> None:
    """The web page marks a hit's matched tokens with token_spans: the same tokens as the rule,
    each span lowering to its token (İ's span is the İ that gave the i)."""
    spans = token_spans(text)
    assert [token for _, _, token in spans] == tokens(text)
    for start, end, token in spans:
        assert token in text[start:end].lower()
        assert 0 <= start < end <= len(text)
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans))


def test_token_spans_by_example() -> None:
    assert token_spans("\u0130stanbul QUEUE") == [(0, 1, "i"), (1, 8, "stanbul"), (9, 14, "queue")]


def _regex_tokens(text: str) -> list[str]:
    """The rule as its docstring states it: runs of [a-z0-9] in the lowered text."""
    return re.findall(r"[a-z0-9]+", text.lower())


def test_tokens_follow_the_rule_for_every_code_point() -> None:
    """tokens() works on bytes, not on a regex: every code point, lone surrogates included,
    between and beside token characters, splits or joins exactly as the rule says."""
    for code in range(sys.maxunicode + 1):
        text = f"a{chr(code)}b {chr(code)}Z9{chr(code)}"
        assert tokens(text) == _regex_tokens(text), hex(code)


@given(st.text(alphabet=st.characters(exclude_categories=()) | st.sampled_from("İIi\u212aaZ9 -Σσ\x00")))
def test_tokens_follow_the_rule_on_any_text(text: str) -> None:
    assert tokens(text) == _regex_tokens(text)
