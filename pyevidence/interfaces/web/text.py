"""How untrusted text is shown: every body, source and record id is someone else's text.

Escaping is Jinja2's autoescape; this module does what escaping does not: it makes
invisible characters visible (core.visible: a right-to-left override could make a citation
read as another one), marks the query's tokens with the one token rule (core.tokens), and
decides which sources may become links (http and https only).
"""

from __future__ import annotations

import re

from ...core.tokens import token_set, token_spans
from ...core.visible import INVISIBLE
from ...core.visible import visible as visible  # the templates' filter (app.py)

_WEB_LINK = re.compile(r"https?://[^\s]+", re.IGNORECASE)


def link_target(source: str) -> str | None:
    """The source as a link target when it is an http(s) URL with nothing hidden in it, else None."""
    if _WEB_LINK.fullmatch(source) is None or INVISIBLE.search(source) is not None:
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
