"""The servers' clock: what ``now`` is for `pyevidence mcp` and `pyevidence serve`.

``--clock wall`` (the default) reads this machine's clock in whole epoch seconds at
each call; ``--clock logical --now N`` fixes a logical time the operator chose. A
record is evidence while its expires_at is greater than now.
"""

from __future__ import annotations

import argparse
import time

from ..core import validation
from ..core.errors import ValidationError
from . import number_args

CLOCKS = ("wall", "logical")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="wall",
        help="now: wall = this machine's clock in epoch seconds (default); logical = --now N",
    )
    parser.add_argument(
        "--now", type=number_args.whole_number, metavar="N", help="the logical time, with --clock logical"
    )


class Clock:
    """The operator's choice of clock, checked once; ``now()`` is read at each request."""

    def __init__(self, clock: str, now: int | None) -> None:
        if clock not in CLOCKS:
            raise ValidationError("clock", f"must be one of {', '.join(CLOCKS)}; got {clock!r}")
        if (clock == "logical") != (now is not None):
            raise ValidationError("now", "is given with --clock logical, and only then")
        if now is not None:
            validation.integer("now", now, minimum=validation.INT64_MIN, maximum=validation.INT64_MAX)
        self._fixed_now = now

    def now(self) -> int:
        return self._fixed_now if self._fixed_now is not None else int(time.time())
