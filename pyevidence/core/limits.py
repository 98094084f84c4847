"""Payload limits: how large the texts a store accepts may be.

Sizes are counted in UTF-8 bytes, what SQLite stores. Over a limit, a call
raises ValidationError naming the field and the limit, and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .errors import ValidationError


@dataclass(frozen=True)
class Limits:
    """Per-store payload limits; pass ``EvidenceStore(path, limits=Limits(...))``.

    - ``max_body_bytes``: a record's body (default 1 MiB);
    - ``max_field_bytes``: each identifying field: tenant, record_id, revision, source
      (default 1 KiB);
    - ``max_query_bytes``: a retrieve query (default 16 KiB);
    - ``max_query_tokens``: the tokens of a retrieve query, repeats included (default 256).
    """

    max_body_bytes: int = 1 << 20
    max_field_bytes: int = 1 << 10
    max_query_bytes: int = 16 << 10
    max_query_tokens: int = 256

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"limits.{f.name}", f"must be a positive integer, got {value!r}")


DEFAULT_LIMITS = Limits()
# For reading back what a store holds, whatever limits it was written with: a check of a
# backup, or of every tenant (a tenant or text the default limits refuse must still verify).
ANY_SIZE = Limits(max_body_bytes=1 << 40, max_field_bytes=1 << 40)
