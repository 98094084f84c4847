"""The one JSON encoding pyevidence prints: stable key order, ASCII only, newline-terminated,
so the same result is the same bytes on every machine and engine.

Strict JSON only: a float that is infinite or NaN (SQL can compute ``1e999``) has no
JSON spelling, so it is refused with a ValueError that says where it is, never printed
as the ``Infinity`` that strict parsers reject."""

from __future__ import annotations

import json
import math
from typing import Any


def dumps(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False)
    except ValueError:
        found = _non_finite(value, "")
        if found is None:
            raise
        where, number = found
        raise ValueError(
            f"cannot write {where or 'the value'} = {number!r} as JSON: JSON has no Infinity or NaN"
        ) from None
    return text + "\n"


def _non_finite(value: Any, where: str) -> tuple[str, float] | None:
    """The path (``rows[0][1]``) and value of the first non-finite float, in output order."""
    if isinstance(value, float) and not math.isfinite(value):
        return where, value
    if isinstance(value, dict):
        items: Any = ((f"{where}.{k}" if where else str(k), value[k]) for k in sorted(value, key=str))
    elif isinstance(value, (list, tuple)):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for path, item in items:
        found = _non_finite(item, path)
        if found is not None:
            return found
    return None
