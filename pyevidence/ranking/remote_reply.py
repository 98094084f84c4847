"""Reading and checking a ranking service's reply: framing, size, JSON, then the scores.

RemoteScorer does not trust the service it calls. Before a reply's scores are used
the reply is checked here, and anything wrong raises Unavailable, whose message is
the reason the Retrieval shows ("unavailable", or "degraded" with a fallback):

    body = read_body(response, max_response_bytes, counted)   # framing and size
    scores = parse_scores(body, ids_sent)   # {record id: finite number}

read_body refuses a reply whose end is ambiguous (Content-Length with
Transfer-Encoding, differing or non-numeric Content-Length, a transfer coding other
than chunked alone), one over the size limit (announced or received) and one cut
short. parse_scores reads the body as JSON (RFC 8259: UTF-8, no byte order mark, no
NUL bytes) with the strict parser of core/strict_json.py, which refuses what Python's
parser would let through (repeated keys, NaN and Infinity, long number literals,
nesting deeper than MAX_REPLY_DEPTH), then requires the contract exactly
({"scores": [...]} of {"id": ..., "score": ...} objects, no other key) with one
finite score per candidate sent. Every piece of the reply a reason quotes is cut
short by shown(), so a hostile reply cannot make a reason of megabytes.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Callable
from typing import Any

from ..core import strict_json
from ..core.errors import ScorerError
from ..core.strict_json import shown
from .scoring import _checked

# A reply nested deeper than this is refused: the contract's reply is 3 levels deep.
MAX_REPLY_DEPTH = strict_json.MAX_DEPTH
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
    _check_transfer_coding(response)
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


def _check_transfer_coding(response: http.client.HTTPResponse) -> None:
    """A Transfer-Encoding must be ``chunked`` alone, given once: http.client reads any
    other (``gzip, chunked``) as no framing at all, up to the close, and decodes no
    coding, so the reason would otherwise be the undecoded body's."""
    values = response.msg.get_all("Transfer-Encoding") or []
    codings = [coding.strip() for value in values for coding in value.split(",")]
    unsupported = [coding for coding in codings if coding.lower() != "chunked"]
    if unsupported:
        raise Unavailable(
            f"the reply uses the transfer coding {shown(unsupported[0])}, which is not supported: "
            "send the body as is, or chunked alone"
        )
    if values and (len(codings) != 1 or not response.chunked):
        raise Unavailable(
            f"the reply's Transfer-Encoding is not valid: {shown(', '.join(values), str)!r}; "
            "send chunked alone, once"
        )


def _document(reply: bytes) -> Any:
    """The reply as JSON (RFC 8259: UTF-8, no byte order mark), read by the strict parser
    (core/strict_json.py: no repeated keys, long numbers or deep nesting)."""
    not_json = "the reply is not valid JSON"
    if reply.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise Unavailable(f"{not_json}: it starts with a byte order mark; send UTF-8 without one")
    if b"\x00" in reply:
        raise Unavailable(f"{not_json}: it holds NUL bytes, as UTF-16 or UTF-32 would; send UTF-8")
    try:
        text = reply.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unavailable(f"{not_json}: it is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return strict_json.loads(text, max_depth=MAX_REPLY_DEPTH)
    except strict_json.JsonRefused as exc:
        raise Unavailable(f"the reply {exc}") from None


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def parse_scores(reply: bytes, ids: list[str]) -> dict[str, int | float]:
    """The scores of a reply, checked: the contract exactly, with one finite number per
    id sent."""
    document = _document(reply)
    if not isinstance(document, dict):
        kind = _JSON_TYPES.get(type(document), "a number")
        raise Unavailable(f'the reply is {kind}, not {{"scores": [...]}}')
    items = document.get("scores")
    if not isinstance(items, list):
        raise Unavailable('the reply is not {"scores": [...]}: it has no "scores" array')
    unexpected = next((key for key in document if key != "scores"), None)
    if unexpected is not None:
        raise Unavailable(
            f'the reply has the unexpected key {shown(unexpected)}: it must be {{"scores": [...]}} exactly'
        )
    if len(items) != len(ids):
        raise Unavailable(f"the reply has {len(items)} scores for {len(ids)} candidates")
    expected = set(ids)
    scores: dict[str, int | float] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or "score" not in item:
            raise Unavailable('every score must be {"id": <string>, "score": <number>}')
        unexpected = next((key for key in item if key not in ("id", "score")), None)
        if unexpected is not None:
            raise Unavailable(
                f"a score has the unexpected key {shown(unexpected)}: "
                'each must be {"id": <string>, "score": <number>} exactly'
            )
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
