"""The progress of a long build on the command line, on stderr: stdout carries JSON only.

On a terminal, one bar redrawn in place; otherwise (a log, a pipe) a single line once
the build is done, so that logs do not fill with carriage returns.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30
REDRAW_SECONDS = 0.1


class IndexProgress:
    """A progress(done, total) function for EvidenceStore: reports the token index's build."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = self._stream.isatty()
        self._started: float | None = None
        self._drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._started is None:
            self._started = now
        finished = done >= total
        if self._terminal and (finished or now - self._drawn >= REDRAW_SECONDS):
            self._drawn = now
            filled = BAR_WIDTH * done // total if total else BAR_WIDTH
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            end = "\n" if finished else ""
            self._stream.write(f"\rbuilding the token index [{bar}] {done:,}/{total:,} records{end}")
            self._stream.flush()
        elif finished and not self._terminal:
            seconds = now - self._started
            records = f"{total:,} record" + ("" if total == 1 else "s")
            self._stream.write(f"pyevidence: built the token index of {records} in {seconds:.1f} s\n")
            self._stream.flush()
        if finished:
            self._started = None  # a later build (reindex after an upgrade) reports again
