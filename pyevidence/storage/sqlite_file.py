"""The header of a SQLite database file, read without SQLite.

SQLite's file format puts 100 bytes of header at the start of the file: the magic string,
the page size, the journal mode's read and write versions (bytes 18 and 19: 2 for WAL),
PRAGMA user_version at bytes 60..63 (big-endian), and more. Reading them directly answers
"what is this file?" without opening a connection, taking a lock or creating -wal and -shm
files beside it. Commits still in a WAL are not seen in the main file's header.
"""

from __future__ import annotations

import os
import stat

MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100


def header(path: str | os.PathLike[str]) -> bytes | None:
    """The first bytes (up to 100) of the regular file at ``path`` if they start with
    SQLite's magic string; None for anything else, or a file that cannot be read. It
    never blocks: a FIFO or a device is not opened."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            data = os.read(fd, HEADER_BYTES)
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    return data if data.startswith(MAGIC) else None
