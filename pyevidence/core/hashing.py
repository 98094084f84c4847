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
    # The encoding is built as text and encoded once: cheaper than a bytes object per
    # field, and the same bytes, since a text field's length is counted in UTF-8 bytes.
    parts: list[str] = []
    append = parts.append
    for field in fields:
        if type(field) is str and field.isascii():  # most fields: their length in bytes is len()
            append(f"t{len(field)}:{field}")
        elif isinstance(field, str):
            text = str.__str__(field)  # a subclass's own __str__ or __format__ does not count
            append(f"t{len(text.encode('utf-8'))}:{text}")
        elif isinstance(field, int) and not isinstance(field, bool):
            digits = int.__repr__(field)
            append(f"i{len(digits)}:{digits}")
        elif field is None:
            append("n0:")
        else:
            raise TypeError(
                f"evidence_sha256(): a field is a {type(field).__name__}; "
                "it takes only text, integers and NULL"
            )
    return hashlib.sha256("".join(parts).encode("utf-8")).hexdigest()
