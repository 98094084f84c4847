"""Reading and checking a ranking service's reply: framing, size, JSON, then the scores.

RemoteScorer does not trust the service it calls. Before a reply's scores are used
the reply is checked here, and anything wrong raises Unavailable, whose message is
the reason the Retrieval shows ("unavailable", or "degraded" with a fallback):

    body = read_body(response, max_response_bytes, counted)   # framing and size
    scores = parse_scores(body, ids_sent)   # {record id: finite number}

read_body refuses a reply whose end is ambiguous (Content-Length with
Transfer-Encoding, differing or non-numeric Content-Length), one over the size
limit (announced or received) and one cut short. parse_scores reads the body as
JSON (RFC 8259: UTF-8, no byte order mark, no NUL bytes), refusing what Python's
parser would let through (repeated keys, NaN and Infinity, number literals over
MAX_NUMBER_CHARS, nesting deeper than MAX_REPLY_DEPTH), then requires exactly one
finite score per candidate sent. Every piece of the reply a reason quotes is cut
short by shown(), so a hostile reply cannot make a reason of megabytes.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Callable
from typing import Any

from ..core.errors import ScorerError
from .scoring import _checked

# A reply nested deeper than this is refused: the contract's reply is 3 levels
# deep, and a fixed bound gives the same answer whatever the caller's stack.
MAX_REPLY_DEPTH = 64
# The longest number literal a reply may hold: a float needs about 25 characters;
# a longer literal is either no finite double or a way to make int() work hard.
MAX_NUMBER_CHARS = 100
_LONG_NUMBER = re.compile(f"[-+.0-9eE]{{{MAX_NUMBER_CHARS + 1}}}")
# A Content-Length value.
_DIGITS = re.compile(r"[0-9]+")


class Unavailable(Exception):
    """The service failed for this retrieve; the message says how (Retrieval.reason)."""


def read_body(
    response: http.client.HTTPResponse, max_response_bytes: int, counted: Callable[[int], None]
) -> bytes:
    """The body of a reply, refused if it is framed ambiguously, too large or cut short.
    ``counted`` is told the size of every chunk as it arrives, so the cost counts
    what the service sent even when the reply is then refused."""
    lengths = response.msg.get_all("Content-Length") or []
    if lengths and response.msg.get("Transfer-Encoding") is not None:
        raise Unavailable("the reply has both Content-Length and Transfer-Encoding: its end is ambiguous")
    if len({v.strip() for v in lengths}) > 1 or not all(_DIGITS.fullmatch(v.strip()) for v in lengths):
        raise Unavailable(f"the reply's Content-Length is not valid: {shown(', '.join(lengths), str)!r}")
    if response.length is not None and response.length > max_response_bytes:
        limit = max_response_bytes
        raise Unavailable(f"the reply announces {response.length} bytes, over max_response_bytes={limit}")
    chunks, received = [], 0
    while chunk := response.read1(65536):
        received += len(chunk)
        counted(len(chunk))
        if received > max_response_bytes:
            raise Unavailable(f"the reply is over max_response_bytes={max_response_bytes}")
        chunks.append(chunk)
    if response.length:  # the service closed before sending what it announced
        raise Unavailable(f"the reply ended {response.length} bytes short of its Content-Length")
    return b"".join(chunks)


class _Refused(ValueError):
    """A reply the JSON parser's hooks refused; the message is the whole reason."""


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _number(kind: type[int] | type[float]) -> Any:
    def parse(literal: str) -> int | float:
        if len(literal) > MAX_NUMBER_CHARS:
            raise _Refused(
                f"the reply holds a number of {len(literal):,} characters; "
                f"at most {MAX_NUMBER_CHARS} are accepted"
            )
        return kind(literal)

    return parse


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different: with a repeated key, which value
    counts depends on the parser, so the reply is ambiguous."""
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"the reply repeats the key {shown(key)} in one object")
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


def _document(reply: bytes) -> Any:
    """The reply as JSON (RFC 8259: UTF-8, no byte order mark), checked for what
    Python's parser would let through: repeated keys, long numbers, deep nesting."""
    not_json = "the reply is not valid JSON"
    if reply.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise Unavailable(f"{not_json}: it starts with a byte order mark; send UTF-8 without one")
    if b"\x00" in reply:
        raise Unavailable(f"{not_json}: it holds NUL bytes, as UTF-16 or UTF-32 would; send UTF-8")
    try:
        text = reply.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unavailable(f"{not_json}: it is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    too_deep = f"the reply nests deeper than {MAX_REPLY_DEPTH} levels"
    # Each number is checked (a Python call per number) only if the text has a run of
    # number characters long enough to hold a literal over the limit, which is rare.
    lengths_checked = (
        {"parse_int": _number(int), "parse_float": _number(float)} if _LONG_NUMBER.search(text) else {}
    )
    try:
        document = json.loads(
            text, object_pairs_hook=_object, parse_constant=_refuse_constant, **lengths_checked
        )
    except _Refused as exc:
        raise Unavailable(str(exc)) from None
    except RecursionError:
        raise Unavailable(too_deep) from None
    except ValueError as exc:
        raise Unavailable(f"{not_json}: {exc}") from None
    # Nesting needs at least as many brackets as levels: most replies are not walked.
    if text.count("[") + text.count("{") > MAX_REPLY_DEPTH and _nests_deeper(document, MAX_REPLY_DEPTH):
        raise Unavailable(too_deep)
    return document


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def parse_scores(reply: bytes, ids: list[str]) -> dict[str, int | float]:
    """The scores of a reply, checked: exactly one finite number per id sent."""
    document = _document(reply)
    if not isinstance(document, dict):
        kind = _JSON_TYPES.get(type(document), "a number")
        raise Unavailable(f'the reply is {kind}, not {{"scores": [...]}}')
    items = document.get("scores")
    if not isinstance(items, list):
        raise Unavailable('the reply is not {"scores": [...]}: it has no "scores" array')
    if len(items) != len(ids):
        raise Unavailable(f"the reply has {len(items)} scores for {len(ids)} candidates")
    expected = set(ids)
    scores: dict[str, int | float] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or "score" not in item:
            raise Unavailable('every score must be {"id": <string>, "score": <number>}')
        record_id = item["id"]
        if record_id not in expected:
            raise Unavailable(f"the reply scores {shown(record_id)}, which was not sent")
        if record_id in scores:
            raise Unavailable(f"the reply scores {shown(record_id)} twice")
        try:
            scores[record_id] = _checked(item["score"], record_id)
        except ScorerError as exc:
            raise Unavailable(f"invalid score: {exc}") from None
    return scores


def shown(value: object, form: Any = repr, limit: int = 80) -> str:
    """``value`` as a reason shows it: repr (or str) cut to ``limit`` characters,
    so a hostile reply cannot make a reason of megabytes."""
    text = str(form(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."
