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

# tokens() finds the same runs as _TOKEN without a regex, about a third faster on the
# bodies every put indexes: in the UTF-8 of the lowered text every byte that is not an
# ASCII letter or digit becomes a space (the bytes of a non-ASCII character are all
# 0x80 or above, so they separate tokens as the character does), then split().
# tests/test_token_rule.py proves it equal to token_spans(), which uses _TOKEN.
_TOKEN_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_SEPARATE = bytes(byte if byte in _TOKEN_BYTES else 0x20 for byte in range(256))


def tokens(text: str) -> list[str]:
    """Every token of ``text`` in order, repeats included."""
    # surrogatepass: a lone surrogate (possible in a query) separates tokens too
    return text.lower().encode("utf-8", "surrogatepass").translate(_SEPARATE).decode("ascii").split()


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
