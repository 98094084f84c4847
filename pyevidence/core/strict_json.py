"""JSON from outside, read strictly: the one parser for every JSON text pyevidence does
not trust, a ranking service's reply (ranking/remote_reply.py) and each line of a JSONL
import (bulk.py).

Python's json.loads lets through what an untrusted sender can use to mislead or to make
the reader work hard. Refused here, each with a reason that names it:
- a key repeated in one object: which value counts depends on the parser;
- NaN, Infinity and -Infinity: not JSON (RFC 8259);
- a number literal over MAX_NUMBER_CHARS characters: no finite double needs that many,
  and int() of a huge literal is slow (Python stops at 4,300 digits, not sooner);
- nesting deeper than ``max_depth``: a fixed bound, so the answer does not depend on the
  caller's stack;
- anything json.loads refuses: said in words of pyevidence's own, at a position it
  works out itself, since Python's json words the same error differently from one version
  to the next and even points at another character (3.13 names a trailing comma where 3.11
  names the bracket after it), and pyevidence's output is the same bytes on every Python.

A reason quotes the text's pieces through shown(), so a hostile text cannot make a
reason of megabytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# The longest number literal accepted: a float needs about 25 characters.
MAX_NUMBER_CHARS = 100
# The deepest nesting accepted unless the caller says otherwise.
MAX_DEPTH = 64
_LONG_NUMBER = re.compile(f"[-+.0-9eE]{{{MAX_NUMBER_CHARS + 1}}}")


@dataclass(frozen=True)
class Syntax:
    """Where a text stops being JSON and why: ``reason`` in pyevidence's own words, at the
    character ``pos`` (from 0), on ``line`` and ``column`` (from 1), the same on every Python."""

    reason: str
    pos: int
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.reason} at line {self.line}, column {self.column}"


class JsonRefused(ValueError):
    """Why a JSON text was refused, phrased to follow its subject: "the reply " + str(exc).
    ``syntax`` says where the text is not JSON at all, for a caller that shows the position
    its own way (a line's column); None for a refusal of valid JSON (a repeated key, NaN)."""

    def __init__(self, problem: str, syntax: Syntax | None = None) -> None:
        super().__init__(problem)
        self.syntax = syntax


def shown(value: object, form: Any = repr, limit: int = 80) -> str:
    """``value`` as a reason shows it: repr (or str) cut to ``limit`` characters. An
    integer too long to show is described by its size (Python refuses to turn one of over
    4,300 digits into text), and a value whose repr fails by its type: the message about
    a bad value must not fail itself."""
    if isinstance(value, int) and value.bit_length() > _SHOWN_INT_BITS:
        digits = int(value.bit_length() * 0.30103) + 1  # log10(2): the count, give or take one
        return f"{'a negative' if value < 0 else 'an'} integer of about {digits:,} digits"
    try:
        text = str(form(value))
    except Exception:
        return f"a {type(value).__name__} that cannot be shown"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_SHOWN_INT_BITS = 1024  # about 308 digits: more would be cut anyway


def loads(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``text``, or JsonRefused saying what is wrong with it."""
    too_deep = f"nests deeper than {max_depth} levels"
    # Each number is checked (a Python call per number) only if the text has a run of
    # number characters long enough to hold a literal over the limit, which is rare.
    lengths_checked = (
        {"parse_int": _number(int), "parse_float": _number(float)} if _LONG_NUMBER.search(text) else {}
    )
    try:
        document = json.loads(
            text, object_pairs_hook=_object, parse_constant=_refuse_constant, **lengths_checked
        )
    except JsonRefused:
        raise
    except RecursionError:
        raise JsonRefused(too_deep) from None
    except json.JSONDecodeError as exc:
        syntax = _syntax(text, exc)
        raise JsonRefused(f"is not valid JSON: {syntax}", syntax) from None
    except ValueError as exc:  # NaN and Infinity
        raise JsonRefused(f"is not valid JSON: {exc}") from None
    # Nesting needs at least as many brackets as levels: most texts are not walked.
    if text.count("[") + text.count("{") > max_depth and _nests_deeper(document, max_depth):
        raise JsonRefused(too_deep)
    return document


# The start of each of json's messages (3.11 to 3.13, its C and its Python parser), in
# pyevidence's words: json's own change between versions.
_REASONS = {
    "Expecting value": "expected a value",
    "Expecting property name enclosed in double quotes": "expected a key in double quotes",
    "Expecting ':' delimiter": "expected ':' after a key",
    "Expecting ',' delimiter": "expected ',' or the end of the array or object",
    "Unterminated string starting at": "a string starting here is not closed",
    "Invalid control character": "a string holds a control character; escape it",
    "Invalid \\escape": "a string holds an escape that JSON does not have",
    "Invalid \\uXXXX escape": "a string holds a \\u escape without four hex digits",
    "Extra data": "more text follows the JSON value",
}
_TRAILING_COMMA = "a trailing comma before '{}'"
_CLOSING = {"Expecting value": "]", "Expecting property name enclosed in double quotes": "}"}
_JSON_SPACE = " \t\n\r"


def _syntax(text: str, error: json.JSONDecodeError) -> Syntax:
    """json's error, in words and at a position that do not depend on Python's version."""
    pos = error.pos
    message = error.msg
    if message.startswith("Illegal trailing comma before end of "):  # 3.13: at the comma
        closing = "}" if message.endswith("object") else "]"
        reason = _TRAILING_COMMA.format(closing)
    elif text[pos : pos + 1] == _CLOSING.get(message) and text[:pos].rstrip(_JSON_SPACE).endswith(","):
        reason = _TRAILING_COMMA.format(text[pos])  # before 3.13: at the bracket after the comma
        pos = len(text[:pos].rstrip(_JSON_SPACE)) - 1
    else:
        found = (reason for start, reason in _REASONS.items() if message.startswith(start))
        reason = next(found, "the text stops being JSON here")
    line = text.count("\n", 0, pos) + 1
    return Syntax(reason, pos, line, pos - text.rfind("\n", 0, pos))


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _number(kind: type[int] | type[float]) -> Any:
    def parse(literal: str) -> int | float:
        if len(literal) > MAX_NUMBER_CHARS:
            raise JsonRefused(
                f"holds a number of {len(literal):,} characters; at most {MAX_NUMBER_CHARS} are accepted"
            )
        return kind(literal)

    return parse


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different."""
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonRefused(f"repeats the key {shown(key)} in one object")
            seen.add(key)
    return document


def _nests_deeper(document: Any, limit: int) -> bool:
    """Whether containers nest more than ``limit`` deep: one level at a time, so a
    long flat array costs one pass, not one Python call per element."""
    level = [document] if type(document) in (dict, list) else []
    for _ in range(limit):
        level = [
            child
            for value in level
            for child in (value.values() if type(value) is dict else value)
            if type(child) in (dict, list)
        ]
    return bool(level)
