"""RemoteScorer against a real HTTP service on 127.0.0.1 that records every byte it receives."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import record
from hostile_service import hostile_service, replying, scores_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider import Provider, Reply, length_scores, provider
from strategies import rich_text

import pyevidence
from pyevidence import EvidenceStore, RemoteScorer, ScorerCost, TokenScorer, ValidationError, native_available
from pyevidence.core.jsonout import dumps

SCOPE = dict(tenant="team-a", revision="v1", now=100)


@pytest.fixture
def service() -> Iterator[Provider]:
    with provider() as running:
        yield running


def put_in_scope(store: EvidenceStore, *bodies: str) -> None:
    for i, body in enumerate(bodies):
        store.put(**record(record_id=f"r{i}", body=body))


def retrieve(store: EvidenceStore, scorer: RemoteScorer, query: str = "queue", limit: int = 10) -> Any:
    return store.retrieve(query=query, limit=limit, scorer=scorer, **SCOPE)  # type: ignore[arg-type]


def test_the_service_never_receives_filtered_out_text(store: EvidenceStore, service: Provider) -> None:
    store.put(**record(record_id="in-1", body="eligible one"))
    store.put(**record(record_id="in-2", body="eligible two"))
    store.put(**record(record_id="other-tenant", tenant="team-b", body="SECRET-TENANT-B"))
    store.put(**record(record_id="other-rev", revision="v2", body="SECRET-REVISION-V2"))
    store.put(**record(record_id="expired", body="SECRET-EXPIRED", expires_at=100))
    store.put(**record(record_id="replaced", body="SECRET-OLD-VERSION"))
    store.put(**record(record_id="replaced", body="eligible replacement"))
    store.put(**record(record_id="forgotten", body="SECRET-FORGOTTEN"))
    store.forget(tenant="team-a", record_id="forgotten")

    result = retrieve(store, RemoteScorer(service.url))

    assert result.status == "ok" and result.eligible_count == 3
    assert sorted(service.candidate_texts) == ["eligible one", "eligible replacement", "eligible two"]
    assert b"SECRET" not in service.everything_received()
    assert [h.record_id for h in result] == ["replaced", "in-1", "in-2"]  # by length, ties by id


def test_request_shape_and_headers(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "b body", "a body")
    retrieve(store, RemoteScorer(service.url, headers={"Authorization": "Bearer t0ken"}), query="q?")
    (request,) = service.received
    assert request.document == {
        "query": "q?",
        "candidates": [{"id": "r0", "text": "b body"}, {"id": "r1", "text": "a body"}],
    }
    assert request.head.startswith(b"POST /rerank HTTP/1.1\r\n")
    assert b"Authorization: Bearer t0ken" in request.head
    assert b"Content-Type: application/json" in request.head
    assert f"User-Agent: pyevidence/{pyevidence.__version__}".encode() in request.head


def test_scores_rank_highest_first_with_ties_by_record_id(store: EvidenceStore, service: Provider) -> None:
    scores = {"r0": 0.5, "r1": 2, "r2": 0.5, "r3": -1.0}
    put_in_scope(store, "w", "x", "y", "z")
    service.reply = lambda doc: (200, _scores({c["id"]: scores[c["id"]] for c in doc["candidates"]}), 0)
    result = retrieve(store, RemoteScorer(service.url))
    assert [(h.record_id, h.score) for h in result] == [("r1", 2), ("r0", 0.5), ("r2", 0.5), ("r3", -1.0)]
    assert (result.status, result.ranked_by, result.reason) == ("ok", "remote", None)
    filtered = retrieve(store, RemoteScorer(service.url, min_score=0.5, name="reranker-x"))
    assert [h.record_id for h in filtered] == ["r1"] and filtered.ranked_by == "reranker-x"
    assert [h.record_id for h in retrieve(store, RemoteScorer(service.url), limit=2)] == ["r1", "r0"]


def test_proxy_settings_of_the_environment_are_not_used(
    store: EvidenceStore, service: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    put_in_scope(store, "one")
    assert retrieve(store, RemoteScorer(service.url)).status == "ok" and len(service.received) == 1


def test_nothing_eligible_sends_nothing(store: EvidenceStore, service: Provider) -> None:
    store.put(**record(tenant="team-b", body="not yours"))
    result = retrieve(store, RemoteScorer(service.url))
    assert (result.status, result.hits, result.eligible_count) == ("ok", (), 0)
    assert service.received == [] and result.cost == ScorerCost(elapsed_seconds=result.cost.elapsed_seconds)


def _scores(mapping: dict[str, Any]) -> bytes:
    return json.dumps({"scores": [{"id": k, "score": v} for k, v in mapping.items()]}).encode()


def _bad(payload: bytes, status: int = 200) -> Any:
    return lambda doc: (status, payload, 0.0)


def _replace_first_score(text: str) -> Any:
    def reply(doc: Any) -> Reply:
        ids = [c["id"] for c in doc["candidates"]]
        body = _scores({i: 1 for i in ids}).decode().replace('"score": 1', f'"score": {text}', 1)
        return 200, body.encode(), 0.0

    return reply


def _wrong_ids(transform: Any) -> Any:
    return lambda doc: (200, _scores({i: 1 for i in transform([c["id"] for c in doc["candidates"]])}), 0.0)


INVALID_REPLIES = {
    "not json": (_bad(b"<html>oops</html>"), "not valid JSON"),
    "not utf-8": (_bad(b'{"scores": "\xff"}'), "not valid JSON"),
    "wrong shape": (_bad(b'{"results": []}'), 'not {"scores"'),
    "a list of numbers": (_bad(b"[1, 2]"), 'not {"scores"'),
    "too few scores": (_wrong_ids(lambda ids: ids[:-1]), "2 scores for 3 candidates"),
    "too many scores": (lambda doc: (200, _scores({"r0": 1, "r1": 1, "r2": 1, "r9": 1}), 0.0), "4 scores"),
    "an id not sent": (_wrong_ids(lambda ids: [*ids[:-1], "r9"]), "'r9', which was not sent"),
    "an id twice": (
        _bad(b'{"scores": [{"id": "r0", "score": 1}, {"id": "r0", "score": 2}, {"id": "r1", "score": 3}]}'),
        "'r0' twice",
    ),
    "NaN": (_replace_first_score("NaN"), "NaN is not a number JSON allows"),
    "Infinity": (_replace_first_score("-Infinity"), "-Infinity is not a number JSON allows"),
    "overflowing number": (_replace_first_score("1e400"), "scores must be finite"),
    "a string score": (_replace_first_score('"0.9"'), "must be a real number"),
    "a boolean score": (_replace_first_score("true"), "must be a real number"),
    "a null score": (_replace_first_score("null"), "must be a real number"),
    "no score": (_bad(b'{"scores": [{"id": "r0"}, {"id": "r1"}, {"id": "r2"}]}'), '{"id": <string>'),
    "an extra top-level key": (
        lambda doc: (200, _scores({"r0": 1, "r1": 1, "r2": 1})[:-1] + b', "model": "m"}', 0.0),
        "the reply has the unexpected key 'model': it must be {\"scores\": [...]} exactly",
    ),
    "an extra key in a score": (
        lambda doc: (
            200,
            _scores({"r0": 1, "r1": 1, "r2": 1}).replace(b'"score": 1}', b'"score": 1, "why": "x"}', 1),
            0.0,
        ),
        'a score has the unexpected key \'why\': each must be {"id": <string>, "score": <number>} exactly',
    ),
    "HTTP 500": (_bad(b"{}", status=500), "HTTP 500"),
    "HTTP 400": (_bad(b"{}", status=400), "HTTP 400"),
    "a redirect": (_bad(b"{}", status=301), "HTTP 301"),
}


@pytest.mark.parametrize("case", sorted(INVALID_REPLIES))
def test_invalid_replies_make_the_scorer_unavailable(
    store: EvidenceStore, service: Provider, case: str
) -> None:
    put_in_scope(store, "one", "two", "three")
    service.reply, reason = INVALID_REPLIES[case]
    result = retrieve(store, RemoteScorer(service.url))
    assert (result.status, result.hits, result.ranked_by) == ("unavailable", (), "remote")
    assert result.eligible_count == 3
    assert reason in (result.reason or "")
    assert len(service.received) == 1  # an invalid reply is never retried


def test_a_slow_reply_times_out_without_retry(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "one")
    service.reply = lambda doc: (*length_scores(doc)[:2], 3.0)
    started = time.monotonic()
    result = retrieve(store, RemoteScorer(service.url, timeout=0.2))
    assert time.monotonic() - started < 2.0
    assert result.status == "unavailable" and result.hits == ()
    assert result.reason == "no reply within the timeout of 0.2 s"
    assert len(service.received) == 1 and result.cost is not None and result.cost.retries == 0


def test_the_deadline_bounds_the_whole_retrieve(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "a", "b", "c", "d", "e", "f")
    service.reply = lambda doc: (*length_scores(doc)[:2], 0.3)
    scorer = RemoteScorer(service.url, timeout=1.0, deadline=0.5, max_batch_candidates=1)
    started = time.monotonic()
    result = retrieve(store, scorer)
    assert time.monotonic() - started < 1.5  # six replies would take 1.8 s
    assert result.status == "unavailable" and result.reason == "no reply within the deadline of 0.5 s"
    assert 1 <= len(service.received) < 6


def test_retries_only_on_overload_and_within_the_bound(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "one", "two")
    statuses = iter([503, 429, 200])
    service.reply = lambda doc: (
        status := next(statuses),
        length_scores(doc)[1] if status == 200 else b"{}",
        0,
    )
    result = retrieve(store, RemoteScorer(service.url, max_retries=2, retry_backoff=0.01))
    assert result.status == "ok" and [h.record_id for h in result] == ["r0", "r1"]
    assert result.cost is not None and (result.cost.requests, result.cost.retries) == (3, 2)
    assert len(service.received) == 3

    service.received.clear()
    service.reply = _bad(b"{}", status=502)
    result = retrieve(store, RemoteScorer(service.url, max_retries=1, retry_backoff=0.01))
    assert result.status == "unavailable" and result.reason == "the service replied HTTP 502"
    assert len(service.received) == 2


def test_a_refused_connection_is_retried_then_unavailable(store: EvidenceStore) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    put_in_scope(store, "one")
    result = retrieve(store, RemoteScorer(f"http://127.0.0.1:{port}/", retry_backoff=0.01))
    assert result.status == "unavailable" and (result.reason or "").startswith("connection failed")
    assert result.cost is not None and (result.cost.requests, result.cost.retries) == (0, 1)


def test_an_oversized_reply_is_refused(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "one")
    service.reply = lambda doc: (
        200,
        b'{"scores": [{"id": "r0", "score": 1}], "pad": "' + b"x" * 5000 + b'"}',
        0,
    )
    result = retrieve(store, RemoteScorer(service.url, max_response_bytes=4096))
    assert result.status == "unavailable" and "max_response_bytes=4096" in (result.reason or "")


def test_batches_respect_count_and_bytes(store: EvidenceStore, service: Provider) -> None:
    bodies = [f"body {i} " + "x" * (i % 7) * 20 for i in range(70)]
    put_in_scope(store, *bodies)
    result = retrieve(store, RemoteScorer(service.url, max_batch_candidates=32))
    assert [len(r.document["candidates"]) for r in service.received] == [32, 32, 6]
    assert result.cost is not None and result.cost.candidates_sent == 70

    service.received.clear()
    result = retrieve(store, RemoteScorer(service.url, max_batch_bytes=600))
    sizes = [len(r.body) for r in service.received]
    assert max(sizes) <= 600 and len(sizes) > 3
    sent = [c["id"] for r in service.received for c in r.document["candidates"]]
    assert sorted(sent) == sorted(f"r{i}" for i in range(70)) and len(set(sent)) == 70
    assert result.status == "ok" and len(result) == 10


def test_a_candidate_too_large_for_a_batch_is_not_truncated(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "short", "y" * 1000)
    result = retrieve(store, RemoteScorer(service.url, max_batch_bytes=500))
    assert result.status == "unavailable" and "record 'r1' alone makes a request over" in (
        result.reason or ""
    )
    assert service.received == []


def test_accounting_matches_what_the_service_saw(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, *[f"text number {i}" for i in range(9)])
    scorer = RemoteScorer(service.url, max_batch_candidates=4)
    first = retrieve(store, scorer)
    second = retrieve(store, scorer, query="another query")
    for result in (first, second):
        assert result.cost is not None
    assert first.cost is not None and second.cost is not None
    sent = [len(r.body) for r in service.received]
    assert first.cost.requests + second.cost.requests == len(service.received) == 6
    assert first.cost.bytes_sent + second.cost.bytes_sent == sum(sent)
    assert first.cost.bytes_sent == sum(sent[:3])
    assert first.cost.candidates_sent == sum(len(r.document["candidates"]) for r in service.received[:3]) == 9
    assert first.cost.bytes_received + second.cost.bytes_received == sum(map(len, service.replied))
    assert first.cost.elapsed_seconds > 0
    assert scorer.totals == first.cost + second.cost


def test_a_configured_fallback_ranks_and_says_degraded(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "restart the queue consumer", "rotate the logs")
    service.reply = _bad(b"{}", status=500)
    result = retrieve(store, RemoteScorer(service.url, fallback=TokenScorer()), query="queue consumer")
    expected = store.retrieve(query="queue consumer", limit=10, **SCOPE)  # type: ignore[arg-type]
    assert result.status == "degraded" and result.ranked_by == "token_overlap"
    assert result.reason == "remote: the service replied HTTP 500"
    assert result.hits == expected.hits and len(result) == 1


def test_the_result_prints_its_status_and_cost(store: EvidenceStore, service: Provider) -> None:
    put_in_scope(store, "one")
    service.reply = _bad(b"nope")
    document = json.loads(dumps(retrieve(store, RemoteScorer(service.url)).to_dict()))
    assert document["status"] == "unavailable" and document["hits"] == []
    assert document["cost"]["requests"] == 1 and document["ranked_by"] == "remote"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"url": "ftp://host/"}, "url"),
        ({"url": "http://user:pw@host/"}, "url"),
        ({"url": "http:///nohost"}, "url"),
        ({"timeout": 0}, "timeout"),
        ({"deadline": float("nan")}, "deadline"),
        ({"max_batch_candidates": 0}, "max_batch_candidates"),
        ({"max_retries": -1}, "max_retries"),
        ({"headers": {"X": "a\r\nInjected: 1"}}, "headers"),
        ({"fallback": object()}, "fallback"),
        ({"min_score": float("inf")}, "min_score"),
        ({"min_score": True}, "min_score"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, Any], field: str) -> None:
    arguments = {"url": "http://127.0.0.1:9/", **kwargs}
    with pytest.raises(ValidationError) as caught:
        RemoteScorer(**arguments)
    assert caught.value.field == field


BAD_URLS = {
    "http://[::1/": "url: is not a valid URL (Invalid IPv6 URL): 'http://[::1/'",
    "http://[not-ipv6]/": "url: is not a valid URL",
    "http://host:99999/": "url: is not a valid URL (Port out of range 0-65535)",
    "http://host:abc/": "url: is not a valid URL",
    "http://host:0/": "url: port must be between 1 and 65535: 'http://host:0/'",
    "http://ho st/": "url: must not contain spaces or control characters: 'http://ho st/'",
    "http://bad!host/": "url: has a host that is not a valid host name: 'http://bad!host/'",
    "http://host/r\u00e9sum\u00e9": "url: path and query must be printable ASCII without spaces;",
    "http://host/a b": "url: must not contain spaces or control characters",
    "http://host/a?q=\u2603": "url: path and query must be printable ASCII",
    "http://host/a\tb": "url: must not contain spaces or control characters: 'http://host/a\\tb'",
    "http://host/a\nb": "url: must not contain spaces or control characters",
    "http://host/a\x00b": "url: must not contain spaces or control characters",
    "http://host/rerank#top": "url: must not have a #fragment (it is never sent): 'http://host/rerank#top'",
    "http://" + "a" * 64 + ".example/": "url: has a host that is not a valid host name",
}


@pytest.mark.parametrize("url", list(BAD_URLS))
def test_a_url_that_cannot_be_requested_is_refused_by_the_constructor(url: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RemoteScorer(url, fallback=TokenScorer())
    assert caught.value.field == "url"
    assert str(caught.value).startswith(BAD_URLS[url])


BAD_HEADERS: list[tuple[Any, str]] = [
    (
        {"X-Name": "caf\u00e9 \u2615"},
        "the value of X-Name has U+2615 at index 5: a header value may hold printable Latin-1",
    ),
    ({"Authorization": "Bearer s3cret\n"}, "the value of Authorization has U+000A at index 13"),
    ({"X-Name": "a\x00b"}, "the value of X-Name has U+0000 at index 1"),
    ({"X-Name": "a\x7fb"}, "the value of X-Name has U+007F at index 1"),
    ({"X-Name:": "1"}, "'X-Name:' is not a header name: use letters, digits and !#$%&'*+-.^_`|~ only"),
    ({"X Name": "1"}, "'X Name' is not a header name"),
    ({"X-Name\r\nInjected": "1"}, "'X-Name\\r\\nInjected' is not a header name"),
    ({"": "1"}, "'' is not a header name"),
    ({"X-N\u00e4me": "1"}, "'X-N\u00e4me' is not a header name"),
    ({1: "1"}, "1 is not a header name"),
    ({"X-Name": 1}, "the value of X-Name must be a string, got int"),
    ({"X-Name": "1", "x-name": "2"}, "x-name is given twice (header names ignore case)"),
    ({"Content-Length": "5"}, "Content-Length is set by pyevidence from the request body; remove it"),
    ({"transfer-encoding": "chunked"}, "transfer-encoding is set by pyevidence from the request body"),
    ([("X-Name", "1")], "must be a mapping of header names to values, got list"),
]


@pytest.mark.parametrize(("headers", "reason"), BAD_HEADERS)
def test_headers_that_cannot_be_sent_are_refused_by_the_constructor(headers: Any, reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RemoteScorer("http://127.0.0.1:9/", headers=headers, fallback=TokenScorer())
    assert caught.value.field == "headers"
    assert str(caught.value).startswith(f"headers: {reason}")
    assert "s3cret" not in str(caught.value)  # a value may be a secret: errors never show it


def test_headers_replace_the_defaults_without_regard_to_case(store: EvidenceStore) -> None:
    put_in_scope(store, "one")
    headers = {"user-agent": "my-agent/1", "X-Team": "caf\u00e9\tops"}
    with hostile_service(replying(scores_for)) as service:  # it records the raw bytes of the head
        assert retrieve(store, RemoteScorer(service.url, headers=headers)).status == "ok"
    (request,) = service.received
    assert b"user-agent: my-agent/1\r\n" in request.head and b"pyevidence/" not in request.head
    assert b"X-Team: caf\xe9\tops\r\n" in request.head  # Latin-1 on the wire, as HTTP sends it


def test_an_ipv6_url_and_a_percent_encoded_path_are_requested_as_given(store: EvidenceStore) -> None:
    put_in_scope(store, "one")
    with provider("::1") as service:
        url = service.url.replace("/rerank", "/r%C3%A9sum%C3%A9?x=%20")
        assert url.startswith("http://[::1]:")
        assert retrieve(store, RemoteScorer(url)).status == "ok"
    (request,) = service.received
    port = url.split("]:")[1].split("/")[0]
    assert request.head.startswith(b"POST /r%C3%A9sum%C3%A9?x=%20 HTTP/1.1\r\n")
    assert f"Host: [::1]:{port}\n".encode() in request.head  # http.server's copy of the head ends lines in \n


@pytest.fixture(scope="module")
def shared_service() -> Iterator[Provider]:
    with provider() as running:
        yield running


RECORDS = st.lists(
    st.tuples(
        st.sampled_from(["team-a", "team-b"]),
        st.sampled_from(["r1", "r2", "r3", "r4"]),
        st.sampled_from(["v1", "v2"]),
        st.integers(95, 105),
        rich_text.filter(lambda t: t.strip() != ""),
        st.booleans(),  # forget it afterwards
    ),
    max_size=12,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=RECORDS, now=st.integers(94, 106), batch=st.integers(1, 5))
def test_the_service_receives_exactly_the_eligible_set(
    engine: str,
    shared_service: Provider,
    records: list[tuple[str, str, str, int, str, bool]],
    now: int,
    batch: int,
) -> None:
    """Against a model of the rules: the current, unforgotten records of team-a at v1
    expiring after now. Those bodies, each once, are all that leaves the process."""
    if engine == "native" and not native_available():
        pytest.skip("native engine not built in this installation")
    model: dict[tuple[str, str], tuple[str, int, str]] = {}
    with EvidenceStore(":memory:", engine=engine) as store:
        for tenant, record_id, revision, expires_at, body, forget in records:
            store.put(
                **record(
                    tenant=tenant, record_id=record_id, revision=revision, expires_at=expires_at, body=body
                )
            )
            model[(tenant, record_id)] = (revision, expires_at, body)
            if forget:
                store.forget(tenant=tenant, record_id=record_id)
                del model[(tenant, record_id)]
        shared_service.received.clear()
        shared_service.reply = length_scores
        result = store.retrieve(
            tenant="team-a",
            revision="v1",
            query="q",
            now=now,
            scorer=RemoteScorer(shared_service.url, max_batch_candidates=batch),
        )
    eligible = sorted(
        (rid, body)
        for (tenant, rid), (rev, exp, body) in model.items()
        if tenant == "team-a" and rev == "v1" and exp > now
    )
    sent = sorted((c["id"], c["text"]) for r in shared_service.received for c in r.document["candidates"])
    assert sent == eligible
    assert result.status == "ok" and result.eligible_count == len(eligible)
    assert result.cost is not None and result.cost.requests == len(shared_service.received)
