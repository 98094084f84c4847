"""Untrusted text made visible: every body, source and record id is someone else's text.

A right-to-left override, a zero-width space or a control character can make one citation read
as another, or hide text in plain sight. The web page (interfaces/web/text.py) and the MCP
server's text rendering (interfaces/mcp_server.py) both show such characters by this one rule.
"""

from __future__ import annotations

import re

# Shown as their \uXXXX escape (\UXXXXXXXX above U+FFFF), so that a citation reads as the
# characters it holds: the C0 and C1 controls except tab and newline; every format character
# (Unicode category Cf, as of Unicode 15.1: bidi controls and marks, zero-width characters, the
# soft hyphen, the Egyptian and shorthand format controls, tag characters); and the characters
# that draw nothing though they are not Cf: the combining grapheme joiner, the Hangul fillers,
# two Khmer vowels, the Mongolian free variation selectors and variation selectors. A fixed list,
# so every Python shows the same text; tests/test_web.py checks it holds every Cf character of
# the Python that runs it.
INVISIBLE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef"
    "]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every invisible or direction-changing character written as \\uXXXX."""
    return INVISIBLE.sub(_escaped, text)


def one_line(text: str) -> str:
    """``visible(text)`` with its line breaks written as escapes too (\\n, \\u2028, \\u2029), for
    output that gives each item one line: a body holding a line break must not add a line that
    reads as another hit. A backslash of the text is doubled first, so that a body holding the
    characters \\n or \\u202e reads otherwise than one holding a line break or the override."""
    return visible(text.replace("\\", "\\\\")).translate(_LINE_BREAKS)


_LINE_BREAKS = str.maketrans({"\n": "\\n", "\u2028": "\\u2028", "\u2029": "\\u2029"})
