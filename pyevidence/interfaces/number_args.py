"""Whole numbers on the command line: one rule for every option that takes one, the rule CSV
import applies to expires_at (validation.whole_number_text). int() would also take "1_000"
and other scripts' digits (full-width "12"), which a CSV cell may not hold."""

from __future__ import annotations

import argparse

from ..core import validation


def whole_number(text: str) -> int:
    """An argparse type: the number, or a usage error naming the text."""
    value = validation.whole_number_text(text)
    if value is None:
        raise argparse.ArgumentTypeError(validation.not_a_whole_number(text))
    return value
