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
