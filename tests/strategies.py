"""Hypothesis strategies for text that stresses the token rule."""

from __future__ import annotations

from hypothesis import strategies as st

# Words and characters chosen to collide: shared tokens in several cases, the
# two non-ASCII code points whose lowercase holds ASCII letters (U+0130, U+212A),
# other case-changing letters, combining marks, NUL and separators.
WORDS = ["queue", "QUEUE", "Queue", "lag", "disk", "503", "k8s", "ok", "i", "k", "stanbul"]
SPECIAL = [
    "\u0130",
    "\u212a",
    "\u212b",
    "\u0131",
    "\u00df",
    "\u1e9e",
    "\u03a3",
    "\u0307",
    "\x00",
    "é",
    "ǅ",
    "ﬃ",
    "𐐀",
    " ",
    "-",
    "_",
    ".",
    "\n",
    "\t",
    "\u00a0",
]

rich_text = st.lists(
    st.sampled_from(WORDS) | st.sampled_from(SPECIAL) | st.text(max_size=3), max_size=12
).map("".join)

any_text = st.text() | rich_text
