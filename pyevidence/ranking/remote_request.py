"""What RemoteScorer sends: the request's target, headers and body, checked so that
http.client sends them exactly as given.

A URL or header http.client would alter, drop or refuse on the wire is refused here
instead, when the scorer is made, with a ValidationError naming the option:

    https, host, port, path = request_target("https://rerank.example/v1?model=a")
    headers = request_headers({"Authorization": "Bearer ..."})   # over pyevidence's own
    body = request_body(query, batch)   # the same bytes for the same candidates

A URL must be http:// or https://, without credentials, fragment, spaces or control
characters, with a valid host and port and a printable ASCII path. Header names are
HTTP tokens, values printable Latin-1 (never shown in errors: they may be secrets),
and the headers that frame the body (Content-Length, Transfer-Encoding) are
pyevidence's own. The body is JSON with sorted keys and fixed separators, so the
batching can measure it exactly and a request is the same bytes every time.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import ValidationError
from ..core.records import Candidate
from ..core.strict_json import shown

# The characters of a header name (RFC 9110 "token").
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A header value: printable Latin-1 (http.client sends Latin-1), space and tab.
_HEADER_VALUE_CHAR = re.compile(r"[\t\x20-\x7e\xa0-\xff]")
# The path and query on the request line: printable ASCII without spaces.
_REQUEST_TARGET = re.compile(r"[\x21-\x7e]+")
# A host name as DNS spells it (after IDNA for non-ASCII names).
_HOST_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f-\x9f]")
# Headers that frame the request body; pyevidence sets them from the body it sends.
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})


def request_target(url: object) -> tuple[bool, str, int, str]:
    """(https?, host, port, path and query) of a URL that can be requested as given."""
    url_shown = shown(url)
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        port = parts.port if parts is not None else None
    except ValueError as exc:  # a bad IPv6 literal or port
        raise ValidationError("url", f"is not a valid URL ({exc}): {url_shown}") from None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("url", f"must be an http:// or https:// URL, got {url_shown}")
    if _CONTROL_OR_SPACE.search(str(url)):  # urlsplit would drop tabs and line breaks silently
        raise ValidationError("url", f"must not contain spaces or control characters: {url_shown}")
    if parts.username is not None or parts.password is not None:
        raise ValidationError("url", "must not carry credentials; pass them in headers=")
    if "#" in str(url):
        raise ValidationError("url", f"must not have a #fragment (it is never sent): {url_shown}")
    if port == 0:
        raise ValidationError("url", f"port must be between 1 and 65535: {url_shown}")
    host = parts.hostname
    if ":" not in host:  # urlsplit has checked a bracketed IPv6 address already
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = ""
        if not _HOST_NAME.fullmatch(host):
            raise ValidationError("url", f"has a host that is not a valid host name: {url_shown}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not _REQUEST_TARGET.fullmatch(path):
        raise ValidationError(
            "url",
            "path and query must be printable ASCII without spaces; percent-encode other "
            f"characters (urllib.parse.quote): {url_shown}",
        )
    https = parts.scheme == "https"
    return https, host, port or (443 if https else 80), path


def request_headers(headers: object) -> dict[str, str]:
    """pyevidence's request headers with the caller's ``headers`` over them (names
    compared without case). Values are never shown in errors: they may be secrets."""
    merged = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"pyevidence/{_version()}",
    }
    if headers is None:
        return merged
    if not isinstance(headers, Mapping):
        raise ValidationError(
            "headers", f"must be a mapping of header names to values, got {type(headers).__name__}"
        )
    given: set[str] = set()
    for key, value in headers.items():
        if not isinstance(key, str) or not _TOKEN.fullmatch(key):
            raise ValidationError(
                "headers",
                f"{shown(key)} is not a header name: use letters, digits and !#$%&'*+-.^_`|~ only",
            )
        if key.lower() in _FRAMING_HEADERS:
            raise ValidationError("headers", f"{key} is set by pyevidence from the request body; remove it")
        if key.lower() in given:
            raise ValidationError("headers", f"{key} is given twice (header names ignore case)")
        given.add(key.lower())
        if not isinstance(value, str):
            raise ValidationError(
                "headers", f"the value of {key} must be a string, got {type(value).__name__}"
            )
        for index, char in enumerate(value):
            if not _HEADER_VALUE_CHAR.fullmatch(char):
                raise ValidationError(
                    "headers",
                    f"the value of {key} has U+{ord(char):04X} at index {index}: a header value may hold "
                    "printable Latin-1 characters, spaces and tabs only (no line breaks)",
                )
        for name in [n for n in merged if n.lower() == key.lower()]:
            del merged[name]
        merged[key] = value
    return merged


def candidate_json(candidate: Candidate) -> bytes:
    """One candidate as the request body holds it: the batching measures requests with it."""
    return _encode({"id": candidate.record_id, "text": candidate.body})


def request_body(query: str, batch: Sequence[Candidate]) -> bytes:
    """The request body: stable key order and separators, so it is the same bytes every time."""
    return _encode({"query": query, "candidates": [{"id": c.record_id, "text": c.body} for c in batch]})


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _version() -> str:
    from ..core.version import __version__

    return __version__
