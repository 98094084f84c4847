"""RemoteScorer against services that misbehave on purpose (tests/hostile_service.py).

Every hostile behaviour must end in the documented outcome: status "unavailable"
with a reason (or "degraded" when a fallback is configured), within the deadline
plus a small margin, with no exception out of retrieve(), and with nothing but
the eligible records sent.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from helpers import record
from hostile_service import (
    HOLD,
    Behaviour,
    Connection,
    HostileService,
    chunked_as,
    close_without_reply,
    content_length,
    content_length_beyond_body,
    content_length_short_of_body,
    drip_body,
    drip_chunk_size_line,
    drip_chunked_body,
    drip_chunks,
    drip_headers,
    drip_many_headers,
    drip_status_line,
    drip_tls_handshake,
    drip_trailers,
    endless_continues,
    flood_body,
    flood_chunks,
    flood_headers,
    hostile_service,
    length_and_chunked,
    nested,
    never_reads,
    plain_http_to_tls,
    raw,
    replying,
    reset_without_reply,
    scores_for,
    scores_then,
    silent,
    utf16,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceStore, RemoteScorer, Retrieval, TokenScorer

SCOPE = dict(tenant="team-a", revision="v1", now=100)
DEADLINE = 0.5
MARGIN = 0.75  # scheduling slack on a loaded machine; a drip that is not cut off lasts HOLD (5 s)
ELIGIBLE = {"r0": "restart the queue consumer", "r1": "rotate the logs", "r2": "page the queue owner"}


def put_scope(store: EvidenceStore) -> None:
    """Three eligible records and, around them, records no service may ever see."""
    for record_id, body in ELIGIBLE.items():
        store.put(**record(record_id=record_id, body=body))
    store.put(**record(record_id="x1", tenant="team-b", body="SECRET other tenant"))
    store.put(**record(record_id="x2", revision="v2", body="SECRET other revision"))
    store.put(**record(record_id="x3", expires_at=100, body="SECRET expired"))


def timed_retrieve(store: EvidenceStore, scorer: RemoteScorer) -> tuple[Retrieval, float]:
    started = time.monotonic()
    result = store.retrieve(query="queue", limit=10, scorer=scorer, **SCOPE)  # type: ignore[arg-type]
    return result, time.monotonic() - started


def assert_only_eligible_sent(service: HostileService) -> None:
    for request in service.received:
        assert b"SECRET" not in request.head + request.body
        assert {c["id"]: c["text"] for c in request.document["candidates"]} == ELIGIBLE


def assert_failed_within(
    store: EvidenceStore, service: HostileService, reason: str, bound: float = DEADLINE, **options: Any
) -> Retrieval:
    """Retrieves twice, without and with a fallback: unavailable, then degraded, both
    within ``bound`` seconds plus the margin, each with ``reason`` in its reason."""
    options = {"timeout": 10.0, "deadline": DEADLINE, **options}
    result, elapsed = timed_retrieve(store, RemoteScorer(service.url, **options))
    assert elapsed < bound + MARGIN, f"took {elapsed:.2f} s; reason: {result.reason}"
    assert (result.status, result.hits, result.ranked_by) == ("unavailable", (), "remote")
    assert result.eligible_count == 3 and reason in (result.reason or ""), result.reason

    degraded, elapsed = timed_retrieve(store, RemoteScorer(service.url, fallback=TokenScorer(), **options))
    assert elapsed < bound + MARGIN, f"took {elapsed:.2f} s; reason: {degraded.reason}"
    assert (degraded.status, degraded.ranked_by) == ("degraded", "token_overlap")
    assert [h.record_id for h in degraded] == ["r0", "r2"]  # the lexical ranking of "queue"
    assert degraded.reason == f"remote: {result.reason}"
    assert_only_eligible_sent(service)
    return result


@pytest.fixture
def serve() -> Iterator[Callable[..., HostileService]]:
    """Starts hostile services for one test; all are stopped after it."""
    with ExitStack() as services:
        yield lambda behaviour, **options: services.enter_context(hostile_service(behaviour, **options))


# --- slow: the deadline bounds every phase, however the bytes are spaced -----------------

NO_REPLY = "no reply within the deadline of 0.5 s"
INCOMPLETE = "the reply was not complete within the deadline of 0.5 s"

SLOW = {
    "the status line, one byte at a time": (drip_status_line, NO_REPLY),
    "a header line, one byte at a time": (drip_headers, NO_REPLY),
    "short header lines, one byte at a time": (drip_many_headers, NO_REPLY),
    "100 Continue, again and again": (endless_continues, NO_REPLY),
    "a chunk-size line, one byte at a time": (drip_chunk_size_line, INCOMPLETE),
    "the body, one byte at a time": (drip_body, INCOMPLETE),
    "a chunk's data, one byte at a time": (drip_chunked_body, INCOMPLETE),
    "one-byte chunks, one at a time": (drip_chunks, INCOMPLETE),
    "trailer lines after the last chunk, one byte at a time": (drip_trailers, INCOMPLETE),
    "nothing at all": (silent, NO_REPLY),
}


@pytest.mark.parametrize("case", list(SLOW))
def test_a_dripping_service_is_cut_off_at_the_deadline(
    store: EvidenceStore, serve: Callable[..., HostileService], case: str
) -> None:
    behaviour, reason = SLOW[case]
    put_scope(store)
    service = serve(behaviour)
    assert_failed_within(store, service, reason)
    assert len(service.received) == 2  # a timeout is not retried


def test_the_timeout_bounds_each_request_as_a_whole(
    store: EvidenceStore, serve: Callable[..., HostileService]
) -> None:
    put_scope(store)
    service = serve(drip_headers)
    assert_failed_within(
        store, service, "no reply within the timeout of 0.3 s", bound=0.3, timeout=0.3, deadline=30.0
    )


def test_retries_after_slow_failures_stop_at_the_deadline(
    store: EvidenceStore, serve: Callable[..., HostileService]
) -> None:
    """Each attempt drips a few bytes and resets: retryable, but never past the deadline."""

    def slow_reset(conn: Connection) -> None:
        conn.read_request()
        conn.drip(b"HTTP/1.1")
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    put_scope(store)
    service = serve(slow_reset)
    result = assert_failed_within(store, service, "", max_retries=50, retry_backoff=0.0)
    assert result.cost is not None and result.cost.retries >= 1


def test_a_tls_handshake_that_drips_is_cut_off(
    store: EvidenceStore, serve: Callable[..., HostileService]
) -> None:
    put_scope(store)
    service = serve(drip_tls_handshake)
    url = service.url.replace("http://", "https://")
    result, elapsed = timed_retrieve(store, RemoteScorer(url, deadline=DEADLINE))
    assert elapsed < DEADLINE + MARGIN
    assert result.status == "unavailable" and result.reason == NO_REPLY


def test_a_tls_failure_is_unavailable(store: EvidenceStore, serve: Callable[..., HostileService]) -> None:
    put_scope(store)
    service = serve(plain_http_to_tls)
    url = service.url.replace("http://", "https://")
    result, elapsed = timed_retrieve(store, RemoteScorer(url, deadline=DEADLINE, fallback=TokenScorer()))
    assert elapsed < DEADLINE + MARGIN
    assert result.status == "degraded" and (result.reason or "").startswith(
        "remote: the request failed: [SSL"
    )


def test_a_send_the_service_never_reads_is_cut_off(
    store: EvidenceStore, serve: Callable[..., HostileService]
) -> None:
    for i in range(6):  # 6 MB in one request: more than the socket buffers hold
        store.put(**record(record_id=f"big{i}", body="queue " + "x" * 1_000_000))
    service = serve(never_reads, receive_buffer=4096)
    scorer = RemoteScorer(service.url, deadline=DEADLINE, max_batch_bytes=64 << 20, max_batch_candidates=100)
    result, elapsed = timed_retrieve(store, scorer)
    assert elapsed < DEADLINE + MARGIN
    assert result.status == "unavailable" and result.reason == NO_REPLY


def test_a_connect_that_never_completes_is_cut_off(store: EvidenceStore) -> None:
    """A listener whose accept queue is full: the kernel drops the next connection attempts."""
    with socket.socket() as listener, socket.socket() as queued:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        queued.connect(listener.getsockname())  # fills the queue: nobody accepts
        put_scope(store)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        result, elapsed = timed_retrieve(store, RemoteScorer(url, deadline=DEADLINE))
    assert elapsed < DEADLINE + MARGIN
    assert result.status == "unavailable" and result.reason == NO_REPLY


def test_a_name_lookup_that_never_completes_is_cut_off(
    store: EvidenceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real_getaddrinfo = socket.getaddrinfo

    def slow_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slow-resolver.test":
            release.wait(HOLD)
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow_getaddrinfo)
    put_scope(store)
    try:
        result, elapsed = timed_retrieve(store, RemoteScorer("http://slow-resolver.test/", deadline=DEADLINE))
    finally:
        release.set()
    assert elapsed < DEADLINE + MARGIN
    assert result.status == "unavailable" and result.reason == NO_REPLY


# --- big: never-ending replies are refused at max_response_bytes -------------------------

BIG = {
    "a body without length that never ends": (flood_body, "the reply is over max_response_bytes=65536"),
    "chunks that never end": (flood_chunks, "the reply is over max_response_bytes=65536"),
    "headers that never end": (flood_headers, "got more than 100 headers"),
    "a Content-Length over the limit": (content_length("99999999"), "over max_response_bytes=65536"),
}


@pytest.mark.parametrize("case", list(BIG))
def test_a_never_ending_reply_is_refused(
    store: EvidenceStore, serve: Callable[..., HostileService], case: str
) -> None:
    behaviour, reason = BIG[case]
    put_scope(store)
    service = serve(behaviour)
    assert_failed_within(store, service, reason, max_response_bytes=65536)


# --- wrong framing ----------------------------------------------------------------------

FRAMING = {
    "a Content-Length beyond the body": (content_length_beyond_body, "the reply ended 100 bytes short"),
    "a Content-Length short of the body": (content_length_short_of_body, "not valid JSON"),
    "a Content-Length that is not a number": (
        content_length("12abc"),
        "Content-Length is not valid: '12abc'",
    ),
    "a negative Content-Length": (content_length("-1"), "Content-Length is not valid: '-1'"),
    "two different Content-Lengths": (content_length("9", "10"), "Content-Length is not valid: '9, 10'"),
    "Content-Length and chunked both": (length_and_chunked, "both Content-Length and Transfer-Encoding"),
    "a transfer coding before chunked": (
        chunked_as("gzip, chunked"),
        "the reply uses the transfer coding 'gzip', which is not supported",
    ),
    "a transfer coding alone": (chunked_as("identity"), "the transfer coding 'identity'"),
    "chunked twice in one header": (
        chunked_as("chunked, chunked"),
        "the reply's Transfer-Encoding is not valid: 'chunked, chunked'",
    ),
    "chunked in two headers": (
        chunked_as("chunked", "chunked"),
        "the reply's Transfer-Encoding is not valid: 'chunked, chunked'",
    ),
    "a status line that is not HTTP": (raw(b"HELLO THERE\r\n\r\n"), "not valid HTTP"),
    "a status code out of range": (raw(b"HTTP/1.1 20 OK\r\n\r\n"), "not valid HTTP"),
    "a chunk size that is not hex": (
        raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
        "not valid HTTP",
    ),
    "a chunked body cut short": (
        raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n{}"),
        "not valid HTTP",
    ),
}


@pytest.mark.parametrize("case", list(FRAMING))
def test_a_wrongly_framed_reply_is_unavailable(
    store: EvidenceStore, serve: Callable[..., HostileService], case: str
) -> None:
    behaviour, reason = FRAMING[case]
    put_scope(store)
    service = serve(behaviour)
    assert_failed_within(store, service, reason, max_retries=0)
    assert len(service.received) == 2


@pytest.mark.parametrize("behaviour", [close_without_reply, reset_without_reply])
def test_a_dropped_connection_is_retried_then_unavailable(
    store: EvidenceStore, serve: Callable[..., HostileService], behaviour: Behaviour
) -> None:
    put_scope(store)
    service = serve(behaviour)
    result = assert_failed_within(store, service, "connection failed", retry_backoff=0.01)
    assert result.cost is not None and (result.cost.requests, result.cost.retries) == (2, 1)
    assert len(service.received) == 4  # two retrieves, each tried twice


# --- malformed JSON: every kind is "unavailable" with a clear reason --------------------

TOO_DEEP = "the reply nests deeper than 64 levels"


def first_score(item: bytes) -> bytes:
    """A reply whose first score is ``item`` (raw JSON); r1 and r2 are scored correctly."""
    return b'{"scores": [' + item + b', {"id": "r1", "score": 1}, {"id": "r2", "score": 1}]}'


MALFORMED: dict[str, tuple[bytes | Callable[[Any], bytes], str]] = {
    "100,000 nested arrays": (nested(100_000), TOO_DEEP),
    "100,000 nested objects": (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, TOO_DEEP),
    "deep nesting inside the scores": (nested(100_000, b'{"scores": ', b"}"), TOO_DEEP),
    "65 levels in an extra member": (scores_then(b'"extra": ' + nested(64)), TOO_DEEP),
    "a UTF-8 byte order mark": (lambda r: b"\xef\xbb\xbf" + scores_for(r), "starts with a byte order mark"),
    "UTF-16 with its byte order mark": (utf16("utf-16"), "starts with a byte order mark"),
    "UTF-16 without a byte order mark": (utf16("utf-16-be"), "NUL bytes"),
    "UTF-32": (utf16("utf-32-le"), "NUL bytes"),
    "a byte that is not UTF-8": (b'{"scores": "\xff"}', "not UTF-8 (invalid start byte at byte 12)"),
    "an overlong UTF-8 encoding": (b'{"scores": "\xc0\xaf"}', "not UTF-8"),
    "an encoded surrogate": (b'{"scores": "\xed\xa0\x80"}', "not UTF-8"),
    "a NUL byte inside a string": (b'{"scores": "\x00"}', "NUL bytes"),
    "an escaped lone surrogate as id": (
        first_score(b'{"id": "\\ud800", "score": 1}'),
        "'\\ud800', which was not sent",
    ),
    "a top-level array": (b"[]", 'the reply is an array, not {"scores": [...]}'),
    "a top-level string": (b'"scores"', 'the reply is a string, not {"scores": [...]}'),
    "a top-level number": (b"1", 'the reply is a number, not {"scores": [...]}'),
    "a top-level null": (b"null", 'the reply is null, not {"scores": [...]}'),
    "an empty body": (b"", "not valid JSON: expected a value"),
    "trailing data": (lambda r: scores_for(r) + b" {}", "not valid JSON: more text follows the JSON value"),
    "scores given twice": (
        lambda r: b'{"scores": [], ' + scores_for(r)[1:],
        "the reply repeats the key 'scores' in one object",
    ),
    "an id given twice in one item": (
        first_score(b'{"id": "r9", "id": "r0", "score": 1}'),
        "the reply repeats the key 'id' in one object",
    ),
    "a score given twice in one item": (
        first_score(b'{"id": "r0", "score": 1, "score": 2}'),
        "the reply repeats the key 'score' in one object",
    ),
    "an integer of 5,000 digits": (scores_then(b'"n": ' + b"7" * 5000), "a number of 5,000 characters"),
    "an integer score of 400 digits": (
        first_score(b'{"id": "r0", "score": 1' + b"0" * 399 + b"}"),
        "a number of 400 characters; at most 100",
    ),
    "a float of 1,000 digits": (scores_then(b'"n": 0.' + b"1" * 998), "a number of 1,000 characters"),
    "a score too large for a float": (
        first_score(b'{"id": "r0", "score": 1e400}'),
        "scores must be finite",
    ),
    "an id not sent, very long": (
        first_score(b'{"id": "' + b"z" * 100_000 + b'", "score": 1}'),
        "which was not sent",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_is_unavailable_with_its_reason(
    store: EvidenceStore, serve: Callable[..., HostileService], case: str
) -> None:
    body, reason = MALFORMED[case]
    put_scope(store)
    service = serve(replying(body))
    result = assert_failed_within(store, service, reason)
    assert len(result.reason or "") < 300  # the reason names the problem; it does not echo the reply
    assert len(service.received) == 2  # an invalid reply is not retried


ACCEPTED = {
    "a score of 100 characters": lambda r: scores_for(r).replace(
        b'"score": 1', b'"score": 0.' + b"5" * 98, 1
    ),
    "the contract laid out with whitespace": lambda r: json.dumps(
        json.loads(scores_for(r)), indent="\t"
    ).encode(),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_what_is_within_the_limits_is_accepted(
    store: EvidenceStore, serve: Callable[..., HostileService], case: str
) -> None:
    put_scope(store)
    service = serve(replying(ACCEPTED[case]))
    result, _ = timed_retrieve(store, RemoteScorer(service.url))
    assert result.status == "ok" and len(result) == 3


def test_a_chunked_reply_is_accepted_whatever_the_case_of_chunked(
    store: EvidenceStore, serve: Callable[..., HostileService]
) -> None:
    put_scope(store)
    service = serve(chunked_as("Chunked"))
    result, _ = timed_retrieve(store, RemoteScorer(service.url))
    assert result.status == "ok" and len(result) == 3


# JSON within the parser's limits that only an extra key keeps from being the contract:
# the parser reads it (no depth or length refusal), then the contract refuses the key.
WITHIN_THE_PARSER_LIMITS = {
    "64 levels in all": scores_then(b'"extra": ' + nested(63)),
    "brackets and number characters inside strings": scores_then(
        b'"extra": "' + b"[{" * 100 + b"1e5" * 200 + b'"'
    ),
    "a number of 100 characters": scores_then(b'"extra": 0.' + b"5" * 98),
}


@pytest.mark.parametrize("case", list(WITHIN_THE_PARSER_LIMITS))
def test_json_within_the_limits_is_read_then_held_to_the_contract(
    store: EvidenceStore, serve: Callable[..., HostileService], case: str
) -> None:
    put_scope(store)
    service = serve(replying(WITHIN_THE_PARSER_LIMITS[case]))
    assert_failed_within(store, service, "the reply has the unexpected key 'extra'")


# --- whatever the bytes, retrieve() returns the documented outcome ----------------------


@pytest.fixture(scope="module")
def scripted() -> Iterator[HostileService]:
    """One service for the property tests; each example sets the bytes it replies."""
    with hostile_service(raw(b"")) as service:
        yield service


def _retrieve_reply(engine: str, service: HostileService, reply: bytes) -> Retrieval:
    service.behaviour = raw(reply)
    with EvidenceStore(":memory:", engine=engine) as store:
        put_scope(store)
        scorer = RemoteScorer(service.url, deadline=DEADLINE, max_retries=0)
        result, elapsed = timed_retrieve(store, scorer)
    assert elapsed < DEADLINE + MARGIN
    assert result.status in ("ok", "unavailable")
    event(f"status {result.status}")
    if result.status == "unavailable":
        assert result.reason and result.hits == ()
    return result


HTTP_PIECES = st.sampled_from(
    [
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.0 503 Busy\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"Content-Length: 7\r\n",
        b"Content-Length: -3\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"\r\n",
        b"0\r\n\r\n",
        b"-5\r\n",
        b"ffffffffffffffff\r\n",
        b'{"scores": [{"id": "r0", "score": 1}]}',
        b"\xff\xfe",
    ]
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=st.one_of(st.binary(max_size=300), st.lists(HTTP_PIECES | st.binary(max_size=8)).map(b"".join)))
def test_any_reply_bytes_give_the_documented_outcome(
    engine: str, scripted: HostileService, reply: bytes
) -> None:
    _retrieve_reply(engine, scripted, reply)


ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from(list(ELIGIBLE)),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["scores", "id", "score", "x"]), inner)
    ),
    max_leaves=12,
)
SCORE_LISTS = st.fixed_dictionaries(
    {
        "scores": st.lists(
            st.fixed_dictionaries(
                {"id": st.sampled_from([*ELIGIBLE, "r9"]), "score": st.integers() | st.floats() | ANY_JSON}
            ),
            max_size=4,
        )
    }
)
WELL_FORMED = st.permutations(list(ELIGIBLE)).flatmap(
    lambda ids: st.lists(st.integers() | st.floats(), min_size=3, max_size=3).map(
        lambda scores: {"scores": [{"id": i, "score": s} for i, s in zip(ids, scores, strict=True)]}
    )
)
JSON_VALUES = WELL_FORMED | ANY_JSON | SCORE_LISTS


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=JSON_VALUES)
def test_any_json_reply_gives_the_documented_outcome(
    engine: str, scripted: HostileService, document: Any
) -> None:
    body = json.dumps(document).encode()  # NaN and Infinity included: JSON does not allow them
    http = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    result = _retrieve_reply(engine, scripted, http)
    if result.status == "ok":  # only the contract, exactly: no other key anywhere
        assert list(document) == ["scores"]
        assert all(sorted(item) == ["id", "score"] for item in document["scores"])
        scores = {item["id"]: item["score"] for item in document["scores"]}
        assert sorted(scores) == sorted(ELIGIBLE) and {h.record_id: h.score for h in result} == scores
        assert [h.record_id for h in result] == sorted(scores, key=lambda i: (-scores[i], i))
