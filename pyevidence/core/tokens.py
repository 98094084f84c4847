"""The token rule: the one definition of what a token is.

A token is a maximal run of ASCII letters and digits in the text after Python's
full Unicode lowercasing. The C function ``token_overlap`` (csrc/evidence_tokens.c)
implements the same rule; tests/test_extension.py proves them equal (every code
point, and random text and bytes).

This is lexical matching, nothing more: "latency" does not match "response time",
"restart" does not match "restarted", and non-ASCII letters never form tokens.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Every token of ``text`` in order, repeats included."""
    return _TOKEN.findall(text.lower())


def token_set(text: str) -> frozenset[str]:
    """The distinct tokens of ``text``."""
    return frozenset(tokens(text))


def token_overlap(query: str, body: str) -> int:
    """How many distinct tokens ``query`` and ``body`` share."""
    return len(token_set(query) & token_set(body))


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """Where each token of ``text`` lies in ``text`` itself: (start, end, token), in order.

    The tokens are exactly ``tokens(text)`` (a test proves it); the spans let a page
    mark them in the original text. Lowercasing can lengthen a character (``İ``
    becomes ``i`` and a combining dot), so then each lowered character remembers
    the index of the character it came from.
    """
    lowered = text.lower()
    if len(lowered) == len(text):  # every character lowered to exactly one
        return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(lowered)]
    origin: list[int] = []
    for index, char in enumerate(text):
        origin.extend([index] * len(char.lower()))
    return [(origin[m.start()], origin[m.end() - 1] + 1, m.group()) for m in _TOKEN.finditer(lowered)]
