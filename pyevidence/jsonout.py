"""The one JSON encoding pyevidence prints: stable key order, ASCII only, newline-terminated,
so the same result is the same bytes on every machine and engine."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=True) + "\n"
