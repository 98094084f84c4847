"""RemoteScorer: ranking by an HTTP JSON reranking service, with nothing hidden.

The service only ever receives the candidates retrieve() found eligible (the
caller's tenant, revision and unexpired records): store.retrieve hands this
scorer that set and nothing else. The wire contract (docs/ranking.md, "Remote
reranker"):

    POST <url>   Content-Type: application/json
    {"query": "<query>", "candidates": [{"id": "<record_id>", "text": "<body>"}, ...]}

    200 OK       Content-Type: application/json
    {"scores": [{"id": "<record_id>", "score": <finite number>}, ...]}

with exactly one score per candidate sent, in any order. Anything else, a
timeout, a connection failure or the deadline passing, makes the scorer
*unavailable* for that retrieve: the Retrieval says so and holds no hits, unless
a fallback scorer was configured, which then ranks and the Retrieval says
"degraded". Standard library only (http.client): no SDK, no extra dependency.

The service is not trusted. http.client parses the HTTP, over a socket whose
every read and write gets only the time left before the request's end (a
socket timeout alone restarts at every byte, so a service dripping bytes could
hold a retrieve forever), and the reply is checked before use: framing,
size, encoding, nesting, numbers, duplicated keys, then the scores.
"""

from __future__ import annotations

import http.client
import io
import ipaddress
import json
import math
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..core.errors import ScorerError, ValidationError
from ..core.records import DEGRADED, OK, UNAVAILABLE, Candidate, Retrieval, ScorerCost
from .scoring import Scorer, _checked, order, rank, scorer_name

# Statuses after which the same request may be sent again: the service said it
# is overloaded or a proxy in front of it failed, so it did not score this request.
# Scoring changes nothing on the service, so a repeat is harmless.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})

# A reply nested deeper than this is refused: the contract's reply is 3 levels
# deep, and a fixed bound gives the same answer whatever the caller's stack.
MAX_REPLY_DEPTH = 64
# The longest number literal a reply may hold: a float needs about 25 characters;
# a longer literal is either no finite double or a way to make int() work hard.
MAX_NUMBER_CHARS = 100
_LONG_NUMBER = re.compile(f"[-+.0-9eE]{{{MAX_NUMBER_CHARS + 1}}}")


class Unavailable(Exception):
    """The service failed for this retrieve; the message says how (Retrieval.reason)."""


@dataclass
class _Spend:
    """The running cost of one retrieve, frozen into a ScorerCost at the end."""

    requests: int = 0
    retries: int = 0
    candidates_sent: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0

    def frozen(self, elapsed: float) -> ScorerCost:
        return ScorerCost(elapsed_seconds=elapsed, **asdict(self))


class RemoteScorer:
    """Ranks the eligible candidates of a retrieve by POSTing them to ``url``.

    ``timeout`` bounds each HTTP request as a whole (name lookup, connect, TLS
    handshake, send, status line, headers, body), however slowly its bytes come,
    and ``deadline`` the whole retrieve, batches, retries and backoff included, in
    seconds. Candidates go in batches of at most ``max_batch_candidates`` and
    ``max_batch_bytes`` of request body; a single candidate too large for one batch
    makes the scorer unavailable (it is never truncated). A connection failure
    before any reply, or a reply of HTTP 429, 502, 503 or 504, is retried up to
    ``max_retries`` times per batch after ``retry_backoff`` seconds (doubling),
    within the deadline; a timeout or an invalid reply is not retried. Replies over
    ``max_response_bytes`` are refused, as is any reply that is not well-framed
    HTTP or not the contract's JSON (see _document and _parse_scores).

    Hits are the candidates with a score above ``min_score`` (None: every
    candidate), highest first, ties by record id. ``fallback`` (a scorer with
    score(query, body), e.g. TokenScorer()) ranks instead when the service fails;
    without it a failure gives an unavailable Retrieval with no hits: no failure of
    the service raises out of retrieve(). ``headers`` are sent with every request
    (e.g. an Authorization header); they replace pyevidence's own of the same name.
    ``totals`` is the cost of every retrieve so far; a scorer may be shared between
    threads.

    Raises ValidationError, naming the option, for any option that could not be
    used as given: a URL http.client could not request (bad IPv6 literal or port,
    spaces, control or non-ASCII characters in the path, a fragment), a header name
    that is not an HTTP token, a header value with line breaks, control characters
    or characters beyond Latin-1, or a Content-Length / Transfer-Encoding header.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str = "remote",
        headers: Mapping[str, str] | None = None,
        timeout: float = 5.0,
        deadline: float = 15.0,
        max_batch_candidates: int = 32,
        max_batch_bytes: int = 256 * 1024,
        max_retries: int = 1,
        retry_backoff: float = 0.1,
        max_response_bytes: int = 4 * 1024 * 1024,
        min_score: float | None = None,
        fallback: Scorer | None = None,
    ) -> None:
        self._https, self._host, self._port, self._path = _target(url)
        # Certificates checked against the system's CAs, whatever ssl's module defaults say.
        self._tls = ssl.create_default_context() if self._https else None
        if self._tls is not None:
            self._tls.set_alpn_protocols(["http/1.1"])
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", "must be a non-empty string")
        self.name = name
        self._headers = _request_headers(headers)
        self.timeout = _positive("timeout", timeout)
        self.deadline = _positive("deadline", deadline)
        self.max_batch_candidates = _count("max_batch_candidates", max_batch_candidates, 1)
        self.max_batch_bytes = _count("max_batch_bytes", max_batch_bytes, 64)
        self.max_retries = _count("max_retries", max_retries, 0)
        self.retry_backoff = _positive("retry_backoff", retry_backoff, allow_zero=True)
        self.max_response_bytes = _count("max_response_bytes", max_response_bytes, 64)
        real = isinstance(min_score, (int, float)) and not isinstance(min_score, bool)
        if min_score is not None and not (real and math.isfinite(min_score)):
            raise ValidationError("min_score", f"must be None or a finite number, got {min_score!r}")
        self.min_score = min_score
        if fallback is not None and not callable(getattr(fallback, "score", None)):
            raise ValidationError("fallback", "must be a scorer with a score(query, body) method, or None")
        self.fallback = fallback
        self._totals = ScorerCost()
        self._totals_lock = threading.Lock()

    @property
    def totals(self) -> ScorerCost:
        """The cost of every retrieve this scorer ranked so far."""
        with self._totals_lock:
            return self._totals

    def rank_candidates(self, query: str, candidates: Sequence[Candidate], limit: int) -> Retrieval:
        """Ranks the eligible ``candidates`` (all of them, and only them, are sent)."""
        started = time.monotonic()
        spend = _Spend()
        try:
            scores = self._scores(query, candidates, started + self.deadline, spend)
        except Unavailable as failure:
            cost = self._spent(spend, started)
            if self.fallback is None:
                return Retrieval(
                    hits=(), eligible_count=len(candidates), status=UNAVAILABLE,
                    ranked_by=self.name, reason=str(failure), cost=cost,
                )  # fmt: skip
            hits = rank(query, candidates, self.fallback, limit)
            return Retrieval(
                hits=hits, eligible_count=len(candidates), status=DEGRADED,
                ranked_by=scorer_name(self.fallback), reason=f"{self.name}: {failure}", cost=cost,
            )  # fmt: skip
        scored = [(scores[c.record_id], c) for c in candidates]
        if self.min_score is not None:
            scored = [(s, c) for s, c in scored if s > self.min_score]
        return Retrieval(
            hits=order(scored, limit), eligible_count=len(candidates), status=OK,
            ranked_by=self.name, cost=self._spent(spend, started),
        )  # fmt: skip

    def _spent(self, spend: _Spend, started: float) -> ScorerCost:
        cost = spend.frozen(time.monotonic() - started)
        with self._totals_lock:
            self._totals = self._totals + cost
        return cost

    def _scores(
        self, query: str, candidates: Sequence[Candidate], deadline_at: float, spend: _Spend
    ) -> dict[str, int | float]:
        scores: dict[str, int | float] = {}
        for batch in self._batches(query, candidates):
            body = _request_body(query, batch)
            reply = self._post(body, len(batch), deadline_at, spend)
            scores.update(_parse_scores(reply, [c.record_id for c in batch]))
        return scores

    def _batches(self, query: str, candidates: Sequence[Candidate]) -> list[list[Candidate]]:
        """Consecutive runs of candidates, each within both batch limits."""
        base = len(_request_body(query, []))
        if base > self.max_batch_bytes:
            raise Unavailable(
                f"the query alone makes a {base}-byte request, over max_batch_bytes={self.max_batch_bytes}"
            )
        batches: list[list[Candidate]] = []
        current: list[Candidate] = []
        size = base  # the request body's length with the candidates of `current`
        for candidate in candidates:
            item = len(_candidate_json(candidate))
            if base + item > self.max_batch_bytes:
                raise Unavailable(
                    f"record {candidate.record_id!r} alone makes a request over "
                    f"max_batch_bytes={self.max_batch_bytes}; it is not truncated: raise the limit"
                )
            if current and (
                len(current) == self.max_batch_candidates or size + 1 + item > self.max_batch_bytes
            ):
                batches.append(current)
                current, size = [], base
            size += item + (1 if current else 0)  # after the first, each candidate adds a comma
            current.append(candidate)
        if current:
            batches.append(current)
        return batches

    def _post(self, body: bytes, n_candidates: int, deadline_at: float, spend: _Spend) -> bytes:
        """POSTs one batch, retrying where that is safe; the reply body of an HTTP 200."""
        attempt = 0
        while True:
            try:
                status, reply = self._exchange(body, n_candidates, deadline_at, spend)
            except ConnectionError as exc:
                # Refused or reset before any reply: the service scored nothing.
                if attempt >= self.max_retries:
                    raise Unavailable(f"connection failed: {_shown(exc, str)}") from None
            else:
                if status == 200:
                    return reply
                if status not in RETRYABLE_STATUSES or attempt >= self.max_retries:
                    raise Unavailable(f"the service replied HTTP {status}")
            pause = self.retry_backoff * (2**attempt)
            if time.monotonic() + pause >= deadline_at:
                raise Unavailable(f"deadline of {self.deadline} s passed while retrying")
            time.sleep(pause)
            attempt += 1
            spend.retries += 1

    def _exchange(
        self, body: bytes, n_candidates: int, deadline_at: float, spend: _Spend
    ) -> tuple[int, bytes]:
        """One HTTP request: (status, reply body of an HTTP 200), within the timeout
        and the deadline: name lookup, connect, send, status line, headers and body."""
        until = min(time.monotonic() + self.timeout, deadline_at)
        connection = _Connection(self._host, self._port, until=until, tls=self._tls)
        response = None
        try:
            try:
                connection.request("POST", self._path, body=body, headers=self._headers)
                spend.requests += 1
                spend.candidates_sent += n_candidates
                spend.bytes_sent += len(body)
                response = connection.getresponse()
                if response.status != 200:
                    return response.status, b""  # the body is not used: not read
                return 200, self._read_body(response, spend)
            except TimeoutError:
                raise Unavailable(self._late(deadline_at, replying=response is not None)) from None
            except ConnectionError:
                raise  # refused, reset or closed before a reply: _post may retry
            except http.client.HTTPException as exc:
                raise Unavailable(f"the reply is not valid HTTP: {_shown(exc)}") from None
            except OSError as exc:
                raise Unavailable(f"the request failed: {_shown(exc, str)}") from None
        finally:
            connection.close()
            connection.release()

    def _read_body(self, response: http.client.HTTPResponse, spend: _Spend) -> bytes:
        """The body of a reply, refused if it is framed ambiguously, too large or cut short."""
        lengths = response.msg.get_all("Content-Length") or []
        if lengths and response.msg.get("Transfer-Encoding") is not None:
            raise Unavailable("the reply has both Content-Length and Transfer-Encoding: its end is ambiguous")
        if len({v.strip() for v in lengths}) > 1 or not all(_DIGITS.fullmatch(v.strip()) for v in lengths):
            raise Unavailable(f"the reply's Content-Length is not valid: {_shown(', '.join(lengths), str)!r}")
        if response.length is not None and response.length > self.max_response_bytes:
            limit = self.max_response_bytes
            raise Unavailable(f"the reply announces {response.length} bytes, over max_response_bytes={limit}")
        chunks, received = [], 0
        while chunk := response.read1(65536):
            received += len(chunk)
            spend.bytes_received += len(chunk)
            if received > self.max_response_bytes:
                raise Unavailable(f"the reply is over max_response_bytes={self.max_response_bytes}")
            chunks.append(chunk)
        if response.length:  # the service closed before sending what it announced
            raise Unavailable(f"the reply ended {response.length} bytes short of its Content-Length")
        return b"".join(chunks)

    def _late(self, deadline_at: float, *, replying: bool) -> str:
        bound = (
            f"the deadline of {self.deadline} s"
            if time.monotonic() >= deadline_at
            else f"the timeout of {self.timeout} s"
        )
        return f"the reply was not complete within {bound}" if replying else f"no reply within {bound}"


class _Connection(http.client.HTTPConnection):
    """http.client's HTTP/1.1 over a socket that cannot outlive ``until``, with TLS
    when ``tls`` is given. Nothing is read from the environment (no proxies)."""

    def __init__(self, host: str, port: int, *, until: float, tls: ssl.SSLContext | None) -> None:
        self.default_port = 443 if tls is not None else 80  # the Host header omits it
        super().__init__(host, port)
        self._until = until
        self._tls = tls
        self._socket: socket.socket | None = None

    def connect(self) -> None:
        sock = _open(self.host, self.port, self._until)
        try:
            if self._tls is not None:
                # ssl bounds the whole handshake by the socket's timeout, not each read.
                sock.settimeout(_left(self._until))
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self._socket = sock
        self.sock = _Bounded(sock, self._until)

    def release(self) -> None:
        """Closes the socket; close() leaves it open while the reply may still be read
        (http.client calls close() as soon as the headers say the connection will close)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class _Bounded:
    """The socket as http.client uses it: every send and receive gets the time left
    before ``until`` as its timeout, so no spacing of the bytes can stretch a request."""

    def __init__(self, sock: socket.socket, until: float) -> None:
        self._sock = sock
        self._until = until

    def sendall(self, data: bytes) -> None:
        # send() in a loop, not sendall(): an SSL socket's sendall gives each of its
        # own sends the full timeout, so a slow reader could stretch it.
        with memoryview(data) as view, view.cast("B") as unsent:
            while unsent:
                self._sock.settimeout(_left(self._until))
                unsent = unsent[self._sock.send(unsent) :]

    def recv_into(self, buffer: Any) -> int:
        self._sock.settimeout(_left(self._until))
        return self._sock.recv_into(buffer)

    def makefile(self, mode: str) -> io.BufferedReader:
        del mode  # http.client reads its replies through this, always "rb"
        return io.BufferedReader(_Receiver(self))

    def close(self) -> None:
        """Nothing: _Connection.release() closes the socket once the reply is read."""


class _Receiver(io.RawIOBase):
    def __init__(self, sock: _Bounded) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)


def _left(until: float) -> float:
    """The seconds left before ``until``; TimeoutError when there are none."""
    left = until - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left


def _open(host: str, port: int, until: float) -> socket.socket:
    """A TCP connection to host:port by ``until``, its name looked up first."""
    failure: OSError = OSError(f"no address found for {host}")
    for family, kind, proto, _, address in _resolve(host, port, until):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(_left(until))
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc  # try the next address, if time is left
        except BaseException:
            sock.close()
            raise
    raise failure


def _resolve(host: str, port: int, until: float) -> list[Any]:
    """getaddrinfo by ``until``. A name lookup has no timeout of its own: it runs in
    a helper thread, abandoned when time is up (it ends when the resolver gives up)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:  # an address: nothing to look up, no wait
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    outcome: list[Any] = []

    def look_up() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            outcome.append(exc)

    lookup = threading.Thread(target=look_up, name=f"pyevidence lookup of {host}", daemon=True)
    lookup.start()
    lookup.join(_left(until))
    if not outcome:
        raise TimeoutError(f"the name lookup of {host} timed out")
    if isinstance(outcome[0], OSError):
        raise outcome[0]
    return list(outcome[0])


def _version() -> str:
    from ..core.version import __version__

    return __version__


def _candidate_json(candidate: Candidate) -> bytes:
    return _encode({"id": candidate.record_id, "text": candidate.body})


def _request_body(query: str, batch: Sequence[Candidate]) -> bytes:
    """The request body: stable key order and separators, so it is the same bytes every time."""
    return _encode({"query": query, "candidates": [{"id": c.record_id, "text": c.body} for c in batch]})


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


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
                raise _Refused(f"the reply repeats the key {_shown(key)} in one object")
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


def _parse_scores(reply: bytes, ids: list[str]) -> dict[str, int | float]:
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
            raise Unavailable(f"the reply scores {_shown(record_id)}, which was not sent")
        if record_id in scores:
            raise Unavailable(f"the reply scores {_shown(record_id)} twice")
        try:
            scores[record_id] = _checked(item["score"], record_id)
        except ScorerError as exc:
            raise Unavailable(f"invalid score: {exc}") from None
    return scores


def _shown(value: object, form: Any = repr, limit: int = 80) -> str:
    """``value`` as a reason shows it: repr (or str) cut to ``limit`` characters,
    so a hostile reply cannot make a reason of megabytes."""
    text = str(form(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- configuration --------------------------------------------------------------------

# The characters of a header name (RFC 9110 "token").
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A header value: printable Latin-1 (http.client sends Latin-1), space and tab.
_HEADER_VALUE_CHAR = re.compile(r"[\t\x20-\x7e\xa0-\xff]")
# The path and query on the request line: printable ASCII without spaces.
_REQUEST_TARGET = re.compile(r"[\x21-\x7e]+")
# A host name as DNS spells it (after IDNA for non-ASCII names).
_HOST_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?")
_DIGITS = re.compile(r"[0-9]+")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f-\x9f]")
# Headers that frame the request body; pyevidence sets them from the body it sends.
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})


def _target(url: object) -> tuple[bool, str, int, str]:
    """(https?, host, port, path and query) of a URL that can be requested as given."""
    shown = _shown(url)
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        port = parts.port if parts is not None else None
    except ValueError as exc:  # a bad IPv6 literal or port
        raise ValidationError("url", f"is not a valid URL ({exc}): {shown}") from None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("url", f"must be an http:// or https:// URL, got {shown}")
    if _CONTROL_OR_SPACE.search(str(url)):  # urlsplit would drop tabs and line breaks silently
        raise ValidationError("url", f"must not contain spaces or control characters: {shown}")
    if parts.username is not None or parts.password is not None:
        raise ValidationError("url", "must not carry credentials; pass them in headers=")
    if "#" in str(url):
        raise ValidationError("url", f"must not have a #fragment (it is never sent): {shown}")
    if port == 0:
        raise ValidationError("url", f"port must be between 1 and 65535: {shown}")
    host = parts.hostname
    if ":" not in host:  # urlsplit has checked a bracketed IPv6 address already
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = ""
        if not _HOST_NAME.fullmatch(host):
            raise ValidationError("url", f"has a host that is not a valid host name: {shown}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not _REQUEST_TARGET.fullmatch(path):
        raise ValidationError(
            "url",
            "path and query must be printable ASCII without spaces; percent-encode other "
            f"characters (urllib.parse.quote): {shown}",
        )
    https = parts.scheme == "https"
    return https, host, port or (443 if https else 80), path


def _request_headers(headers: object) -> dict[str, str]:
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
                f"{_shown(key)} is not a header name: use letters, digits and !#$%&'*+-.^_`|~ only",
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


def _positive(field: str, value: object, *, allow_zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):  # type: ignore[operator]
        raise ValidationError(
            field,
            f"must be a {'non-negative' if allow_zero else 'positive'} number of seconds, got {value!r}",
        )
    return float(value)  # type: ignore[arg-type]


def _count(field: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValidationError(field, f"must be a whole number >= {least}, got {value!r}")
    return value
