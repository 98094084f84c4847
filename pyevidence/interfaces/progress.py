"""The progress of a long build on the command line, on stderr: stdout carries JSON only.

On a terminal, one bar redrawn in place; otherwise (a log, a pipe) a single line once
the build is done, so that logs do not fill with carriage returns.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from ..storage import schema

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


def announce_upgrade(path: str | os.PathLike[str], stream: TextIO | None = None) -> None:
    """Before a writable open: says on stderr that opening will upgrade the file, which
    can take a while with nothing else to show (the token index, if an upgrade builds it,
    has its own bar)."""
    version = schema.upgrade_ahead(path)
    if version is None:
        return
    out = stream if stream is not None else sys.stderr
    out.write(
        f"pyevidence: upgrading {os.fspath(path)} from schema version {version} to {schema.SCHEMA_VERSION}, "
        "in one transaction: half a minute or more per million records; if it is interrupted, "
        "the file stays as it was\n"
    )
    out.flush()
