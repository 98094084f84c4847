"""How untrusted text is shown: every body, source and record id is someone else's text.

Escaping is Jinja2's autoescape; this module does what escaping does not: it makes
invisible characters visible (core.visible: a right-to-left override could make a citation
read as another one), marks the query's tokens with the one token rule (core.tokens), and
decides which sources may become links (http and https only).
"""

from __future__ import annotations

import re

from ...core import visible as shown
from ...core.tokens import token_set, token_spans
from ...core.visible import INVISIBLE

_WEB_LINK = re.compile(r"https?://[^\s]+", re.IGNORECASE)
# A run of backslashes before what would read as an escape: the characters of one (\u202e,
# \U000e0041) or an invisible character, which becomes one.
_AN_ESCAPE = re.compile(r"u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|" + INVISIBLE.pattern)
_BEFORE_AN_ESCAPE = re.compile(r"\\+(?=" + _AN_ESCAPE.pattern + ")")


def visible(text: str) -> str:
    """The templates' filter (app.py): core.visible's escapes, so that nothing is invisible, and
    each run of backslashes before an escape doubled, so that text holding the characters
    \u202e (an even run) never reads as a right-to-left override (an odd one). Every other
    backslash, a Windows path's or a regular expression's, is shown as it is."""
    return shown.visible(_BEFORE_AN_ESCAPE.sub(lambda run: run.group() * 2, text))


def link_target(source: str) -> str | None:
    """The source as a link target when it is an http(s) URL with nothing hidden in it, else None."""
    if _WEB_LINK.fullmatch(source) is None or INVISIBLE.search(source) is not None:
        return None
    return source


def marked(body: str, query: str) -> list[tuple[str, bool]]:
    """``body`` cut into (text, is a query token) pieces, by the token rule of core.tokens; a
    piece's backslashes before a token that reads as an escape are doubled (_before)."""
    wanted = token_set(query)
    pieces: list[tuple[str, bool]] = []
    done = 0
    for start, end, token in token_spans(body):
        if token not in wanted or start < done:
            continue
        if start > done:
            pieces.append((_before(body, done, start), False))
        pieces.append((body[start:end], True))
        done = end
    if done < len(body):
        pieces.append((body[done:], False))
    return pieces


def _before(body: str, start: int, end: int) -> str:
    """``body[start:end]``, a piece that a marked token follows, with a run of backslashes at its
    end doubled when the token reads as an escape (u202e): visible() sees one piece at a time."""
    piece = body[start:end]
    if piece.endswith("\\") and _AN_ESCAPE.match(body, end):
        run = len(piece) - len(piece.rstrip("\\"))
        return piece + "\\" * run
    return piece
