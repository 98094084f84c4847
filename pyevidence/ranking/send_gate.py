"""The check a remote ranking makes before each request: is this text still the store's?

retrieve() reads the eligible candidates under the store's lock, then hands them to a
SetRanker outside it, so that a slow service does not stall other threads. A RemoteScorer
then sends them in batches, over seconds. Without a check, a record forgotten in that
time would still have its text sent after forget() had returned, and come back as a hit.

So retrieve() sets a gate for the ranking (a context variable: the SetRanker protocol
stays as it is), and RemoteScorer asks it, before every request, which candidates of the
batch still are their record's current version. The store answers under its lock and
counts the request as in flight until it ends; its forget() waits for the requests in
flight before it erases anything. So once forget() has returned, no request of this
store carries the record's text. A forget by another process or another EvidenceStore
is seen by the next request's check: only the request in flight when it committed can
still carry the text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Protocol

from ..core.records import Candidate


class SendGate(Protocol):
    def sending(self, batch: Sequence[Candidate]) -> AbstractContextManager[list[Candidate]]:
        """The candidates of ``batch`` that may be sent, with the request counted as in
        flight until the block ends."""
        ...


# The gate of the ranking running in this context; None outside a retrieve (a scorer used
# on its own, with candidates its caller chose, sends them all).
current_gate: ContextVar[SendGate | None] = ContextVar("pyevidence_send_gate", default=None)


class InFlight:
    """How many requests of one store's rankings are in flight; erasing waits for none."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    def begin(self) -> None:
        with self._idle:
            self._count += 1

    def end(self) -> None:
        with self._idle:
            self._count -= 1
            if self._count == 0:
                self._idle.notify_all()

    def wait_for_none(self) -> None:
        """Returns once no request is in flight. The caller holds the store's lock, so
        no new request can start (its check takes that lock) while it waits."""
        with self._idle:
            self._idle.wait_for(lambda: self._count == 0)


class StoreGate:
    """A retrieve's gate: ``still_current(batch)``, run with the store's lock held, gives
    the candidates whose record still has that version as its current one."""

    def __init__(
        self,
        locked: Callable[[], AbstractContextManager[Callable[[Sequence[Candidate]], list[Candidate]]]],
        in_flight: InFlight,
    ) -> None:
        self._locked = locked
        self._in_flight = in_flight

    @contextmanager
    def sending(self, batch: Sequence[Candidate]) -> Iterator[list[Candidate]]:
        with self._locked() as still_current:
            allowed = still_current(batch)
            self._in_flight.begin()  # before the lock is released: a forget then waits for it
        try:
            yield allowed
        finally:
            self._in_flight.end()
