"""evidence_sha256: the hash behind record versions, in Python.

The same function as csrc/evidence_hash.c (see the encoding there and in docs/python-api.md,
"Versions and citations"); the Python engine registers this one on its
connection, so the triggers of schema.sql compute identical hashes on both
engines. tests/test_versions.py proves the two implementations equal.
"""

from __future__ import annotations

import hashlib

FIRST_PREVIOUS = ""  # the "previous chain hash" of a tenant's first version


def sha256_fields(*fields: str | int | None) -> str:
    """SHA-256 (64 lowercase hex digits) of the fields in the length-prefixed encoding:
    text ``t<n>:<n UTF-8 bytes>``, integer ``i<n>:<decimal>``, NULL ``n0:``."""
    parts: list[bytes] = []  # one update of the whole encoding: cheaper than an update per field
    for field in fields:
        if isinstance(field, str):  # text first: most fields are
            data = field.encode("utf-8")
            parts += (b"t%d:" % len(data), data)
        elif isinstance(field, int) and not isinstance(field, bool):
            data = str(field).encode("ascii")
            parts += (b"i%d:" % len(data), data)
        elif field is None:
            parts.append(b"n0:")
        else:
            raise TypeError(
                f"evidence_sha256(): a field is a {type(field).__name__}; "
                "it takes only text, integers and NULL"
            )
    return hashlib.sha256(b"".join(parts)).hexdigest()
