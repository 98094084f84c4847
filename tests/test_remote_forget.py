"""A forget during a remote ranking: once forget() returns, no request carries the text.

retrieve() hands the eligible candidates to RemoteScorer outside the store's lock, and
the scorer sends them in batches; each request is checked against the store first
(pyevidence/ranking/send_gate.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from provider import Provider, Reply, length_scores, provider

from pyevidence import EvidenceStore, RemoteScorer, StoreError, TokenScorer
from pyevidence.core.records import Candidate

SCOPE = dict(tenant="team-a", revision="v1", now=100)
SECRET = "SECRET patient note that forget must erase"


@pytest.fixture
def service() -> Iterator[Provider]:
    with provider() as running:
        yield running


def _two_records(store: EvidenceStore) -> None:
    store.put(**record(record_id="a-public", body="public queue note"))
    store.put(**record(record_id="z-private", body=SECRET))


def _two_stores(open_store: Callable[..., EvidenceStore], path: Path) -> tuple[EvidenceStore, EvidenceStore]:
    """A store with the two records, and another EvidenceStore on the same file."""
    store, other = open_store(path), open_store(path)
    _two_records(store)
    return store, other


def _forget_private(store: EvidenceStore) -> None:
    store.forget(tenant="team-a", record_id="z-private")


def _hold_the_first_request(service: Provider) -> tuple[threading.Event, threading.Event]:
    """The service holds its first request until ``release`` is set; ``holding`` says it is."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        assert release.wait(10)

    service.reply = _first_request_then(hold)
    return holding, release


def _retrieve(store: EvidenceStore, scorer: RemoteScorer) -> Any:
    return store.retrieve(query="queue", scorer=scorer, **SCOPE)  # type: ignore[arg-type]


def _first_request_then(action: Callable[[], None]) -> Callable[[Any], Reply]:
    """A service that runs ``action`` while it holds the first request, then scores."""
    done = threading.Event()

    def reply(document: Any) -> Reply:
        if not done.is_set():
            done.set()
            action()
        return length_scores(document)

    return reply


def test_a_record_forgotten_by_another_store_during_the_ranking_is_not_sent(
    open_store: Callable[..., EvidenceStore], tmp_path: Path, service: Provider
) -> None:
    store, other = _two_stores(open_store, tmp_path / "s.db")
    service.reply = _first_request_then(lambda: _forget_private(other))

    result = _retrieve(store, RemoteScorer(service.url, max_batch_candidates=1))

    assert result.status == "ok" and [h.record_id for h in result] == ["a-public"]
    assert SECRET.encode() not in service.everything_received()
    assert len(service.received) == 1  # the second batch held only the forgotten record
    assert result.eligible_count == 2  # eligible when retrieve read the scope


def test_a_record_replaced_during_the_ranking_is_left_out_of_it(
    open_store: Callable[..., EvidenceStore], tmp_path: Path, service: Provider
) -> None:
    store, other = _two_stores(open_store, tmp_path / "s.db")
    service.reply = _first_request_then(
        lambda: other.put(**record(record_id="z-private", body="new queue text"))
    )

    result = _retrieve(store, RemoteScorer(service.url, max_batch_candidates=1))

    assert [h.record_id for h in result] == ["a-public"]
    assert SECRET.encode() not in service.everything_received()


def test_forget_waits_for_the_request_in_flight_and_the_next_one_leaves_the_record_out(
    store: EvidenceStore, service: Provider
) -> None:
    _two_records(store)
    holding, release = _hold_the_first_request(service)
    results: list[Any] = []
    ranking = threading.Thread(
        target=lambda: results.append(_retrieve(store, RemoteScorer(service.url, max_batch_candidates=1)))
    )
    ranking.start()
    assert holding.wait(10)
    forgetting = threading.Thread(target=lambda: _forget_private(store))
    forgetting.start()
    forgetting.join(0.5)
    assert forgetting.is_alive()  # it waits for the request the service is holding
    release.set()
    forgetting.join(10)
    ranking.join(10)

    assert not forgetting.is_alive() and not ranking.is_alive()
    assert [h.record_id for h in results[0]] == ["a-public"]
    assert SECRET.encode() not in service.everything_received()
    assert store.history(tenant="team-a", record_id="z-private")[-1].operation == "forget"


def test_the_fallback_does_not_rank_a_record_left_out(
    open_store: Callable[..., EvidenceStore], tmp_path: Path, service: Provider
) -> None:
    path = tmp_path / "s.db"
    store, other = open_store(path), open_store(path)
    for record_id in ("a-public", "b-private", "c-public"):
        store.put(**record(record_id=record_id, body=f"{record_id} queue note"))
    requests: list[Any] = []

    def forget_then_fail(document: Any) -> Reply:
        requests.append(document)
        if len(requests) == 1:  # a-public's batch: b-private is forgotten meanwhile
            other.forget(tenant="team-a", record_id="b-private")
            return length_scores(document)
        return 500, b"", 0.0  # c-public's batch fails: the fallback ranks

    service.reply = forget_then_fail
    scorer = RemoteScorer(service.url, max_batch_candidates=1, max_retries=0, fallback=TokenScorer())
    result = _retrieve(store, scorer)

    assert result.status == "degraded" and [h.record_id for h in result] == ["a-public", "c-public"]
    assert [c["id"] for r in requests for c in r["candidates"]] == ["a-public", "c-public"]


def test_a_scorer_used_on_its_own_sends_every_candidate_it_is_given(service: Provider) -> None:
    # Outside retrieve() there is no store to ask: the caller chose the candidates.
    candidates = [
        Candidate(f"r{i}", "v1", "runbook", f"queue note {i}", f"s://{i}", 1000, 1, "0" * 64)
        for i in range(3)
    ]
    result = RemoteScorer(service.url, max_batch_candidates=2).rank_candidates("queue", candidates, 5)
    assert result.status == "ok" and [h.record_id for h in result] == ["r0", "r1", "r2"]
    assert sorted(service.candidate_texts) == ["queue note 0", "queue note 1", "queue note 2"]


def test_a_record_forgotten_while_its_own_request_is_in_flight_is_not_a_hit(
    open_store: Callable[..., EvidenceStore], tmp_path: Path, service: Provider
) -> None:
    store, other = _two_stores(open_store, tmp_path / "s.db")
    service.reply = _first_request_then(lambda: _forget_private(other))

    result = _retrieve(store, RemoteScorer(service.url))  # one batch: both records

    assert [c["id"] for r in service.received for c in r.document["candidates"]] == ["a-public", "z-private"]
    assert [h.record_id for h in result] == ["a-public"]  # scored, but forgotten before the ranking ended


def test_a_retry_sends_only_what_is_still_current(
    open_store: Callable[..., EvidenceStore], tmp_path: Path, service: Provider
) -> None:
    store, other = _two_stores(open_store, tmp_path / "s.db")
    attempts: list[Any] = []

    def forget_then_overloaded(document: Any) -> Reply:
        attempts.append(document)
        if len(attempts) == 1:
            _forget_private(other)
            return 503, b"", 0.0
        return length_scores(document)

    service.reply = forget_then_overloaded
    result = _retrieve(store, RemoteScorer(service.url, max_retries=1, retry_backoff=0.0))

    assert result.status == "ok" and [h.record_id for h in result] == ["a-public"]
    assert [[c["id"] for c in a["candidates"]] for a in attempts] == [["a-public", "z-private"], ["a-public"]]


def test_a_forget_waiting_for_a_request_does_not_stall_other_calls(
    store: EvidenceStore, service: Provider
) -> None:
    _two_records(store)
    holding, release = _hold_the_first_request(service)
    ranking = threading.Thread(target=lambda: _retrieve(store, RemoteScorer(service.url)))
    ranking.start()
    assert holding.wait(10)
    forgetting = threading.Thread(target=lambda: _forget_private(store))
    forgetting.start()
    forgetting.join(0.3)
    try:
        reading = threading.Thread(target=lambda: store.history(tenant="team-a", record_id="a-public"))
        reading.start()
        reading.join(5)
        assert not reading.is_alive()  # served while the forget waits for the service
        assert forgetting.is_alive()
    finally:
        release.set()
        forgetting.join(10)
        ranking.join(10)
    assert not forgetting.is_alive()


def test_the_store_used_from_its_own_progress_callback_is_an_error_not_a_hang(
    engine: str, tmp_path: Path
) -> None:
    calls: list[str] = []
    holder: list[EvidenceStore] = []

    def progress(done: int, total: int) -> None:
        calls.append("called")
        holder[0].retrieve(query="queue", **SCOPE)  # type: ignore[arg-type]

    with EvidenceStore(tmp_path / "s.db", engine=engine, progress=progress) as store:
        holder.append(store)
        store.put(**record())
        with pytest.raises(StoreError, match="busy in this same thread"):
            store.reindex()
        assert calls
        assert store.check_index().ok
        assert [h.record_id for h in store.retrieve(query="queue", **SCOPE)] == ["r1"]  # type: ignore[arg-type]
