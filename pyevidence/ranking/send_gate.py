"""The check a remote ranking makes before each request: is this text still the store's?

retrieve() reads the eligible candidates under the store's lock, then hands them to a
SetRanker outside it, so that a slow service does not stall other threads. A RemoteScorer
then sends them in batches, over seconds. Without a check, a record forgotten in that
time would still have its text sent after forget() had returned, and come back as a hit.

So retrieve() sets a gate for the ranking (a context variable: the SetRanker protocol
stays as it is), and RemoteScorer asks it, before every attempt at a request, which
candidates of the batch still are their record's current version, and once more before
it returns its hits. The store answers under its lock and counts the request as in
flight until the attempt ends (the pause before a retry is not in flight). A forget on
the same store waits for the requests in flight to end before it erases, with the lock
released meanwhile (other calls go on; new requests wait for the forget). So once
forget() has returned, no request of this store carries the record's text, and no
ranking returns it. A forget by another process or another EvidenceStore is seen by the
next attempt's check: only the request in flight when it committed can still carry it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Protocol

from ..core.records import Candidate

StillCurrent = Callable[[Sequence[Candidate]], list[Candidate]]


class SendGate(Protocol):
    def sending(self, batch: Sequence[Candidate]) -> AbstractContextManager[list[Candidate]]:
        """The candidates of ``batch`` that may be sent, with the request counted as in
        flight until the block ends."""
        ...

    def current(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """The candidates still at the version read: those a ranking may return."""
        ...


# The gate of the ranking running in this context; None outside a retrieve (a scorer used
# on its own, with candidates its caller chose, sends them all).
current_gate: ContextVar[SendGate | None] = ContextVar("pyevidence_send_gate", default=None)


class Requests:
    """One store's remote requests in flight and the erasures waiting for them. Every
    method but end() is called with the store's lock held: the lock this is made with."""

    def __init__(self, store_lock: threading.Lock) -> None:
        self._lock = store_lock
        self._changed = threading.Condition(store_lock)
        # One token per request in flight: a request an interrupt ends at any point is
        # removed by its own token, never counted twice nor left counted.
        self._in_flight: set[object] = set()
        self._erasing = 0

    @contextmanager
    def erasing(self) -> Iterator[None]:
        """Waits until no request is in flight (the lock released meanwhile), and keeps new
        ones from starting until the block ends."""
        self._erasing += 1
        try:
            while not self._changed.wait_for(lambda: not self._in_flight, timeout=0.1):
                pass  # looks again: a request may have ended without the notify
            yield
        finally:
            self._erasing -= 1
            self._changed.notify_all()

    def begin(self, token: object) -> None:
        """Counts the request ``token`` as in flight, once no erasure is waiting or running."""
        self._changed.wait_for(lambda: self._erasing == 0)
        self._in_flight.add(token)

    def end(self, token: object) -> None:
        """The request ``token`` is no longer in flight (whether or not begin() counted it).
        It goes before the lock is waited for, which an interrupt can end: an erasure waiting
        sees it gone at its next look (erasing() looks every 0.1 s) even if no one notifies."""
        self._in_flight.discard(token)  # one operation under the GIL: no lock needed to remove it
        with self._lock:
            self._changed.notify_all()


class StoreGate:
    """A retrieve's gate: ``locked()`` holds the store's lock and gives the function that
    picks the candidates still at their version, ``requests`` the store's count."""

    def __init__(
        self, locked: Callable[[], AbstractContextManager[StillCurrent]], requests: Requests
    ) -> None:
        self._locked = locked
        self._requests = requests

    @contextmanager
    def sending(self, batch: Sequence[Candidate]) -> Iterator[list[Candidate]]:
        token = object()
        try:  # one try from the count to its end: an interrupt anywhere between ends it too
            with self._locked() as still_current:
                self._requests.begin(token)  # may wait for a forget, which then happens before the check
                allowed = still_current(batch)
            yield allowed
        finally:
            self._requests.end(token)

    def current(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        with self._locked() as still_current:
            return still_current(candidates)
