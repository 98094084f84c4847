"""How untrusted text is shown: every body, source and record id is someone else's text.

Escaping is Jinja2's autoescape; this module does what escaping does not: it makes
invisible characters visible (a right-to-left override could make a citation read as
another one), marks the query's tokens with the one token rule (core.tokens), and
decides which sources may become links (http and https only).
"""

from __future__ import annotations

import re

from ...core.tokens import token_set, token_spans

# Shown as their \uXXXX escape (\UXXXXXXXX above U+FFFF), so that a citation reads as the
# characters it holds: the C0 and C1 controls except tab and newline; every format character
# (Unicode category Cf, as of Unicode 15.1: bidi controls and marks, zero-width characters, the
# soft hyphen, the Egyptian and shorthand format controls, tag characters); and the characters
# that draw nothing though they are not Cf: the combining grapheme joiner, the Hangul fillers,
# two Khmer vowels, the Mongolian free variation selectors and variation selectors. A fixed list,
# so every Python shows the same text; tests/test_web.py checks it holds every Cf character of
# the Python that runs it.
_INVISIBLE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef"
    "]"
)
_WEB_LINK = re.compile(r"https?://[^\s]+", re.IGNORECASE)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every invisible or direction-changing character written as \\uXXXX."""
    return _INVISIBLE.sub(_escaped, text)


def link_target(source: str) -> str | None:
    """The source as a link target when it is an http(s) URL with nothing hidden in it, else None."""
    if _WEB_LINK.fullmatch(source) is None or _INVISIBLE.search(source) is not None:
        return None
    return source


def marked(body: str, query: str) -> list[tuple[str, bool]]:
    """``body`` cut into (text, is a query token) pieces, by the token rule of core.tokens."""
    wanted = token_set(query)
    pieces: list[tuple[str, bool]] = []
    done = 0
    for start, end, token in token_spans(body):
        if token not in wanted or start < done:
            continue
        if start > done:
            pieces.append((body[done:start], False))
        pieces.append((body[start:end], True))
        done = end
    if done < len(body):
        pieces.append((body[done:], False))
    return pieces
