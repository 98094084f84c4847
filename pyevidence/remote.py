"""RemoteScorer: ranking by an HTTP JSON reranking service, with nothing hidden.

The service only ever receives the candidates retrieve() found eligible (the
caller's tenant, revision and unexpired records): store.retrieve hands this
scorer that set and nothing else. The wire contract (README "Ranking
providers"):

    POST <url>   Content-Type: application/json
    {"query": "<query>", "candidates": [{"id": "<record_id>", "text": "<body>"}, ...]}

    200 OK       Content-Type: application/json
    {"scores": [{"id": "<record_id>", "score": <finite number>}, ...]}

with exactly one score per candidate sent, in any order. Anything else, a
timeout, a connection failure or the deadline passing, makes the scorer
*unavailable* for that retrieve: the Retrieval says so and holds no hits, unless
a fallback scorer was configured, which then ranks and the Retrieval says
"degraded". Standard library only (http.client): no SDK, no extra dependency.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .errors import ScorerError, ValidationError
from .records import DEGRADED, OK, UNAVAILABLE, Candidate, Retrieval, ScorerCost
from .scoring import Scorer, _checked, order, rank, scorer_name

# Statuses after which the same request may be sent again: the service said it
# is overloaded or a proxy in front of it failed, so it did not score this request.
# Scoring changes nothing on the service, so a repeat is harmless.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


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

    ``timeout`` bounds each HTTP request (connect, send, reply) and ``deadline`` the
    whole retrieve, retries and batches included, in seconds. Candidates go in
    batches of at most ``max_batch_candidates`` and ``max_batch_bytes`` of request
    body; a single candidate too large for one batch makes the scorer unavailable
    (it is never truncated). A connection failure before any reply, or a reply of
    HTTP 429, 502, 503 or 504, is retried up to ``max_retries`` times per batch
    after ``retry_backoff`` seconds (doubling), within the deadline; a timeout or an
    invalid reply is not retried. Replies over ``max_response_bytes`` are refused.

    Hits are the candidates with a score above ``min_score`` (None: every
    candidate), highest first, ties by record id. ``fallback`` (a scorer with
    score(query, body), e.g. TokenScorer()) ranks instead when the service fails;
    without it a failure gives an unavailable Retrieval with no hits. ``headers``
    are sent with every request (e.g. an Authorization header). ``totals`` is the
    cost of every retrieve so far; a scorer may be shared between threads.
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
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError("url", f"must be an http:// or https:// URL, got {url!r}")
        if parts.username or parts.password:
            raise ValidationError("url", "must not carry credentials; pass them in headers=")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", "must be a non-empty string")
        self.name = name
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"pyevidence/{_version()}",
        }
        for key, value in (headers or {}).items():
            if (
                not isinstance(key, str)
                or not isinstance(value, str)
                or "\n" in key + value
                or "\r" in key + value
            ):
                raise ValidationError(
                    "headers", "must map header names to values, strings without line breaks"
                )
            self._headers[key] = value
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
                    raise Unavailable(f"connection failed: {exc}") from None
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
        """One HTTP request: (status, reply body), within the timeout and the deadline."""
        request_deadline = min(time.monotonic() + self.timeout, deadline_at)

        def remaining() -> float:
            left = request_deadline - time.monotonic()
            if left <= 0:
                raise Unavailable(self._late(deadline_at))
            return left

        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=remaining())
        try:
            try:
                connection.request("POST", self._path, body=body, headers=self._headers)
                spend.requests += 1
                spend.candidates_sent += n_candidates
                spend.bytes_sent += len(body)
                sock = connection.sock  # getresponse() may drop it from the connection
                sock.settimeout(remaining())
                response = connection.getresponse()
                chunks, received = [], 0
                # Since Python 3.13 read1() closes the response (and its socket) as soon as it
                # returns the last byte of a Content-Length body: no timeout to set after that.
                while not response.isclosed():
                    sock.settimeout(remaining())
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    received += len(chunk)
                    spend.bytes_received += len(chunk)
                    if received > self.max_response_bytes:
                        raise Unavailable(f"the reply is over max_response_bytes={self.max_response_bytes}")
                    chunks.append(chunk)
            except TimeoutError:
                raise Unavailable(self._late(deadline_at)) from None
            except ConnectionError:
                raise  # refused, reset or closed before a reply: _post may retry
            except http.client.HTTPException as exc:
                raise Unavailable(f"the reply is not valid HTTP: {exc!r}") from None
            except OSError as exc:
                raise Unavailable(f"the request failed: {exc}") from None
            return response.status, b"".join(chunks)
        finally:
            connection.close()

    def _late(self, deadline_at: float) -> str:
        if time.monotonic() >= deadline_at:
            return f"no reply within the deadline of {self.deadline} s"
        return f"no reply within the timeout of {self.timeout} s"


def _version() -> str:
    from . import __version__

    return __version__


def _candidate_json(candidate: Candidate) -> bytes:
    return _encode({"id": candidate.record_id, "text": candidate.body})


def _request_body(query: str, batch: Sequence[Candidate]) -> bytes:
    """The request body: stable key order and separators, so it is the same bytes every time."""
    return _encode({"query": query, "candidates": [{"id": c.record_id, "text": c.body} for c in batch]})


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _parse_scores(reply: bytes, ids: list[str]) -> dict[str, int | float]:
    """The scores of a reply, checked: exactly one finite number per id sent."""
    try:
        document = json.loads(reply.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unavailable(f"the reply is not valid JSON: {exc}") from None
    items = document.get("scores") if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise Unavailable('the reply is not {"scores": [...]}')
    if len(items) != len(ids):
        raise Unavailable(f"the reply has {len(items)} scores for {len(ids)} candidates")
    expected = set(ids)
    scores: dict[str, int | float] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or "score" not in item:
            raise Unavailable('every score must be {"id": <string>, "score": <number>}')
        record_id = item["id"]
        if record_id not in expected:
            raise Unavailable(f"the reply scores {record_id!r}, which was not sent")
        if record_id in scores:
            raise Unavailable(f"the reply scores {record_id!r} twice")
        try:
            scores[record_id] = _checked(item["score"], record_id)
        except ScorerError as exc:
            raise Unavailable(f"invalid score: {exc}") from None
    return scores


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
