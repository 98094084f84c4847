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

This file is the scorer: its options, the batches, the retries within the
deadline, the cost and the fallback. What it sends is built and checked in
remote_request.py, the deadline-bounded connection is http_transport.py, and
the reply's checks are remote_reply.py.
"""

from __future__ import annotations

import http.client
import math
import ssl
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from ..core.errors import ValidationError
from ..core.records import DEGRADED, OK, UNAVAILABLE, Candidate, Retrieval, ScorerCost
from ..core.strict_json import shown
from .http_transport import BoundedConnection
from .remote_reply import Unavailable, parse_scores, read_body
from .remote_request import candidate_json, request_body, request_headers, request_target
from .scoring import Scorer, order, rank, scorer_name
from .send_gate import SendGate, current_gate

# Statuses after which the same request may be sent again: the service said it
# is overloaded or a proxy in front of it failed, so it did not score this request.
# Scoring changes nothing on the service, so a repeat is harmless.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


@dataclass
class _Spend:
    """The running cost of one retrieve, frozen into a ScorerCost at the end."""

    requests: int = 0
    retries: int = 0
    candidates_sent: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0

    def received(self, n_bytes: int) -> None:
        self.bytes_received += n_bytes

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
    HTTP or not the contract's JSON (see remote_reply.py).

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
        self._https, self._host, self._port, self._path = request_target(url)
        # Certificates checked against the system's CAs, whatever ssl's module defaults say.
        self._tls = ssl.create_default_context() if self._https else None
        if self._tls is not None:
            self._tls.set_alpn_protocols(["http/1.1"])
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", "must be a non-empty string")
        self.name = name
        self._headers = request_headers(headers)
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
        """Ranks the eligible ``candidates`` (all of them, and only them, are sent). Inside
        retrieve(), a candidate whose record is forgotten or replaced during the ranking is
        left out: not sent after the store has seen it change, and not a hit
        (send_gate.py)."""
        started = time.monotonic()
        spend = _Spend()
        gate = current_gate.get()
        left_out: set[str] = set()  # record ids the store's gate kept back
        try:
            scores = self._scores(query, candidates, started + self.deadline, spend, gate, left_out)
        except Unavailable as failure:
            cost = self._spent(spend, started)
            if self.fallback is None:
                return Retrieval(
                    hits=(), eligible_count=len(candidates), status=UNAVAILABLE,
                    ranked_by=self.name, reason=str(failure), cost=cost,
                )  # fmt: skip
            kept = _still_current(gate, [c for c in candidates if c.record_id not in left_out])
            hits = rank(query, kept, self.fallback, limit)
            return Retrieval(
                hits=hits, eligible_count=len(candidates), status=DEGRADED,
                ranked_by=scorer_name(self.fallback), reason=f"{self.name}: {failure}", cost=cost,
            )  # fmt: skip
        scored = [(scores[c.record_id], c) for c in candidates if c.record_id in scores]
        if self.min_score is not None:
            scored = [(s, c) for s, c in scored if s > self.min_score]
        current = {c.record_id for c in _still_current(gate, [c for _, c in scored])}
        return Retrieval(
            hits=order([(s, c) for s, c in scored if c.record_id in current], limit),
            eligible_count=len(candidates), status=OK, ranked_by=self.name,
            cost=self._spent(spend, started),
        )  # fmt: skip

    def _spent(self, spend: _Spend, started: float) -> ScorerCost:
        cost = spend.frozen(time.monotonic() - started)
        with self._totals_lock:
            self._totals = self._totals + cost
        return cost

    def _scores(
        self,
        query: str,
        candidates: Sequence[Candidate],
        deadline_at: float,
        spend: _Spend,
        gate: SendGate | None,
        left_out: set[str],
    ) -> dict[str, int | float]:
        scores: dict[str, int | float] = {}
        for batch in self._batches(query, candidates):
            posted = self._post(query, batch, deadline_at, spend, gate, left_out)
            if posted is not None:  # None: the gate kept back the whole batch
                reply, sent = posted
                scores.update(parse_scores(reply, [c.record_id for c in sent]))
        return scores

    def _batches(self, query: str, candidates: Sequence[Candidate]) -> list[list[Candidate]]:
        """Consecutive runs of candidates, each within both batch limits."""
        base = len(request_body(query, []))
        if base > self.max_batch_bytes:
            raise Unavailable(
                f"the query alone makes a {base}-byte request, over max_batch_bytes={self.max_batch_bytes}"
            )
        batches: list[list[Candidate]] = []
        current: list[Candidate] = []
        size = base  # the request body's length with the candidates of `current`
        for candidate in candidates:
            item = len(candidate_json(candidate))
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

    def _post(
        self,
        query: str,
        batch: list[Candidate],
        deadline_at: float,
        spend: _Spend,
        gate: SendGate | None,
        left_out: set[str],
    ) -> tuple[bytes, list[Candidate]] | None:
        """POSTs one batch, retrying where that is safe: the reply body of an HTTP 200 and
        the candidates it scores (None: none of them may be sent). Each attempt sends only
        what the store's gate allows then; the pause before a retry is outside the gate."""
        attempt = 0
        while True:
            failure: ConnectionError | None = None
            with _sending(gate, batch, left_out) as allowed:
                if not allowed:
                    return None
                batch = allowed
                try:
                    status, reply = self._exchange(request_body(query, batch), len(batch), deadline_at, spend)
                except ConnectionError as exc:
                    failure = exc
            if failure is not None:
                # Refused or reset before any reply: the service scored nothing.
                if attempt >= self.max_retries:
                    raise Unavailable(f"connection failed: {shown(failure, str)}") from None
            else:
                if status == 200:
                    return reply, batch
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
        connection = BoundedConnection(self._host, self._port, until=until, tls=self._tls)
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
                return 200, read_body(response, self.max_response_bytes, spend.received)
            except TimeoutError:
                raise Unavailable(self._late(deadline_at, replying=response is not None)) from None
            except ConnectionError:
                raise  # refused, reset or closed before a reply: _post may retry
            except http.client.HTTPException as exc:
                raise Unavailable(f"the reply is not valid HTTP: {shown(exc)}") from None
            except OSError as exc:
                raise Unavailable(f"the request failed: {shown(exc, str)}") from None
        finally:
            connection.close()
            connection.release()

    def _late(self, deadline_at: float, *, replying: bool) -> str:
        bound = (
            f"the deadline of {self.deadline} s"
            if time.monotonic() >= deadline_at
            else f"the timeout of {self.timeout} s"
        )
        return f"the reply was not complete within {bound}" if replying else f"no reply within {bound}"


@contextmanager
def _sending(gate: SendGate | None, batch: list[Candidate], left_out: set[str]) -> Iterator[list[Candidate]]:
    """The candidates of ``batch`` one attempt may send: all of them outside retrieve(), else
    those the store's gate allows, with the attempt counted in flight for the block."""
    if gate is None:
        yield batch
        return
    with gate.sending(batch) as allowed:
        sent = {c.record_id for c in allowed}
        left_out.update(c.record_id for c in batch if c.record_id not in sent)
        yield allowed


def _still_current(gate: SendGate | None, candidates: list[Candidate]) -> list[Candidate]:
    """The candidates a ranking may return: those still at their version, by the gate."""
    return candidates if gate is None or not candidates else gate.current(candidates)


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
