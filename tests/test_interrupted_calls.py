"""A call interrupted between its BEGIN and its own error handling (a KeyboardInterrupt from
a signal handler, at any bytecode) leaves no transaction open: later writes are committed,
not quietly added to a transaction that close() rolls back."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from pyevidence import EvidenceStore
from pyevidence.storage.engines.python_engine import CAN_WRITE_UNCHECKED


def _put(store: EvidenceStore, record_id: str) -> None:
    store.put(tenant="t", record_id=record_id, revision="v", kind="runbook", body="queue lag",
              source="s", expires_at=100)  # fmt: skip


def _seen_by_another_connection(path: Path) -> set[str]:
    with closing(sqlite3.connect(path, timeout=0.5)) as conn:
        return {row[0] for row in conn.execute("SELECT record_id FROM evidence_current")}


def _open_behind_its_back(store: EvidenceStore, sql: str) -> None:
    """The transaction an interrupted call left: BEGIN ran, its try did not."""
    engine: Any = store._engine  # the state an interrupt leaves is internal
    if hasattr(engine, "_conn"):
        engine._conn.execute(sql)
    else:
        engine._script(sql + ";")


@pytest.fixture
def store(engine: str, tmp_path: Path) -> Iterator[EvidenceStore]:
    with EvidenceStore(tmp_path / "s.db", engine=engine) as opened:
        _put(opened, "before")
        yield opened


@pytest.mark.parametrize("left_open", ["BEGIN IMMEDIATE", "BEGIN"])
@pytest.mark.parametrize("call", ["put", "put_many", "forget", "verify", "reindex"])
def test_a_transaction_an_interrupted_call_left_open_is_not_joined(
    store: EvidenceStore, tmp_path: Path, left_open: str, call: str
) -> None:
    """The audit's case: after such an interrupt, put returned, no other connection saw the
    record, other writers were locked out, and close() rolled the acknowledged put back."""
    _open_behind_its_back(store, left_open)
    if call == "put":
        _put(store, "after")
    elif call == "put_many":
        store.put_many([dict(tenant="t", record_id="after", revision="v", kind="runbook", body="b",
                             source="s", expires_at=100)])  # fmt: skip
    elif call == "forget":
        assert store.forget(tenant="t", record_id="before") is True
    elif call == "verify":
        assert store.verify(tenant="t").ok
    else:
        store.reindex()
    expected = {"before", "after"} if call.startswith("put") else set() if call == "forget" else {"before"}
    assert _seen_by_another_connection(tmp_path / "s.db") == expected
    _put(store, "last")  # and another writer is not locked out
    with closing(sqlite3.connect(tmp_path / "s.db", timeout=0.5)) as other:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")


@pytest.mark.parametrize("call", ["put", "put_many", "verify"])
def test_an_interrupt_just_after_begin_rolls_back_at_once(
    store: EvidenceStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, engine: str
) -> None:
    inner: Any = store._engine
    begin = inner._begin

    def interrupted(*args: Any) -> None:
        begin(*args)
        raise KeyboardInterrupt  # as a signal handler's, the moment BEGIN returned

    monkeypatch.setattr(inner, "_begin", interrupted)
    if call == "put" and engine == "native":
        # one C call that begins and commits its own transaction: no Python runs in between
        _put(store, "whole")
        assert _seen_by_another_connection(tmp_path / "s.db") == {"before", "whole"}
        return
    with pytest.raises(KeyboardInterrupt):
        if call == "put":
            _put(store, "lost")
        elif call == "put_many":
            store.put_many([dict(tenant="t", record_id="lost", revision="v", kind="runbook", body="b",
                                 source="s", expires_at=100)])  # fmt: skip
        else:
            store.verify(tenant="t")
    monkeypatch.undo()
    with closing(sqlite3.connect(tmp_path / "s.db", timeout=0.5)) as other:
        other.execute("BEGIN IMMEDIATE")  # no transaction of the store holds the lock
        other.execute("ROLLBACK")
    _put(store, "after")
    assert _seen_by_another_connection(tmp_path / "s.db") == {"before", "after"}


def _a_forget_ends(lock: Any, requests: Any) -> bool:
    """Whether a forget's wait for the requests in flight (Requests.erasing) ends within 5 s."""
    import threading

    erased = threading.Event()

    def forget() -> None:
        with lock, requests.erasing():
            erased.set()

    threading.Thread(target=forget, daemon=True).start()
    return erased.wait(timeout=5)


def test_a_remote_request_interrupted_as_it_starts_does_not_hold_up_forget() -> None:
    """The audit's hang: an interrupt as the gate released the store's lock, after it had
    counted the request and before the try that ends it, left the request counted for
    ever, and every later forget waited for it."""
    import threading
    from collections.abc import Callable, Sequence
    from contextlib import contextmanager

    from pyevidence.ranking.send_gate import Requests, StoreGate

    lock = threading.Lock()
    requests = Requests(lock)

    @contextmanager
    def locked() -> Iterator[Callable[[Sequence[Any]], list[Any]]]:
        with lock:
            yield list
        raise KeyboardInterrupt  # a signal handler's, the moment the lock is released

    with pytest.raises(KeyboardInterrupt), StoreGate(locked, requests).sending([]):
        pass
    assert _a_forget_ends(lock, requests), "forget waited for a request that had ended"


def test_ctrl_c_inside_a_sql_function_of_the_python_engine_is_still_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlite3 reports a KeyboardInterrupt raised in a function SQLite called as "user-defined
    function raised exception": Ctrl-C became a StoreError, which a caller (the CLI) catches
    and goes on after. The token index's upsert calls evidence_docset_union once a docset of
    more than 255 documents grows."""
    from pyevidence.storage.index import docsets

    real = docsets.union
    calls: list[int] = []

    def union(a: bytes | None, b: bytes | None) -> bytes:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt  # a signal handler's, while SQLite ran the function
        return real(a, b)

    monkeypatch.setattr(docsets, "union", union)  # before the store registers it
    with EvidenceStore(tmp_path / "s.db", engine="python") as store:
        store.put_many([dict(tenant="t", record_id=f"r{i}", revision="v", kind="runbook", body="queue lag",
                             source="s", expires_at=100) for i in range(300)])  # fmt: skip
        with pytest.raises(KeyboardInterrupt):
            _put(store, "interrupted")
        assert calls == [1]
        _put(store, "after")  # the interrupted put was rolled back; the store goes on
        assert store.retrieve(tenant="t", revision="v", query="queue", now=1).eligible_count == 301


def _frozen_read_left_open(store: EvidenceStore) -> None:
    """A read transaction an interrupt left open, its snapshot taken (the review's case: a
    Ctrl-C in snapshot()'s cleanup, before its COMMIT)."""
    engine: Any = store._engine
    if hasattr(engine, "_conn"):
        engine._conn.execute("BEGIN")
        engine._conn.execute("SELECT count(*) FROM evidence_current").fetchone()
    else:
        engine._script("BEGIN; SELECT count(*) FROM evidence_current;")


@pytest.mark.parametrize("call", ["retrieve", "history", "get_version"])
def test_a_read_left_open_does_not_freeze_what_later_reads_see(
    store: EvidenceStore, engine: str, tmp_path: Path, call: str
) -> None:
    """Reads ran inside the transaction an interrupt had left: they went on seeing the store
    as it was, and another connection's checkpoint (forget's erasure) could not run."""
    _frozen_read_left_open(store)
    with EvidenceStore(tmp_path / "s.db", engine=engine) as other:
        _put(other, "new")
    if call == "retrieve":
        assert store.retrieve(tenant="t", revision="v", query="queue", now=1).eligible_count == 2
    elif call == "history":
        assert len(store.history(tenant="t", record_id="new")) == 1
    else:
        cited = store.history(tenant="t", record_id="new")[0].version
        assert store.get_version(tenant="t", record_id="new", version=cited).status == "found"
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    assert busy == 0  # no snapshot of this store's holds the log


@pytest.mark.skipif(
    not CAN_WRITE_UNCHECKED, reason="this Python's sqlite3 cannot turn triggers off (setconfig, 3.12+)"
)
def test_a_schema_check_left_off_by_an_interrupt_is_on_again_for_the_next_write(tmp_path: Path) -> None:
    """An unchecked batch of the Python engine turns the schema's triggers and CHECKs off
    and back on in a finally; a second interrupt there left them off for later writes."""
    with EvidenceStore(tmp_path / "s.db", engine="python") as store:
        inner: Any = store._engine
        inner._schema_checks(on=False)  # what the interrupted finally left
        _put(store, "after")
        assert inner._conn.execute("PRAGMA ignore_check_constraints").fetchone()[0] == 0
        assert not inner._checks_off


def test_nested_transactions_of_an_engine_are_one(engine: str, tmp_path: Path) -> None:
    """A snapshot or a write transaction inside a write transaction is part of it: no COMMIT
    of half the outer one, no rollback of it."""
    with EvidenceStore(tmp_path / "s.db", engine=engine) as store:
        inner: Any = store._engine
        from pyevidence.core.records import Record

        record = Record(tenant="t", record_id="a", revision="v", kind="runbook", body="b", source="s",
                        expires_at=100)  # fmt: skip
        with pytest.raises(RuntimeError), inner.write_transaction("test"):
            inner.put(record)
            with inner.snapshot():
                pass
            with inner.write_transaction("inner"):
                inner.put(record._replace(record_id="b") if hasattr(record, "_replace") else record)
            raise RuntimeError("the outer block fails: nothing of it stays")
        assert _seen_by_another_connection(tmp_path / "s.db") == set()


def test_ctrl_c_during_an_upgrade_is_still_ctrl_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The upgrade at open ran the Python engine's SQL functions outside the relay: Ctrl-C
    came out as "could not be upgraded ... user-defined function raised exception"."""
    import shutil

    from pyevidence.storage import sql_functions

    real = sql_functions.sha256_fields
    calls: list[int] = []

    def interrupted_once(*fields: Any) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*fields)

    monkeypatch.setattr(sql_functions, "sha256_fields", interrupted_once)
    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "v1_store.db", path)
    kept = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        EvidenceStore(path, engine="python")
    assert calls == [1] and path.read_bytes() == kept


def test_a_request_interrupted_while_it_waits_to_end_does_not_hold_up_forget() -> None:
    """The review's hang: end() waited for the store's lock (held by a long reindex) before
    it removed the request, and Ctrl-C during that wait left the request counted for ever."""
    import threading

    from pyevidence.ranking.send_gate import Requests

    class InterruptedLock:
        """The store's lock; the next wait for it is interrupted, as by Ctrl-C."""

        def __init__(self) -> None:
            self._lock = threading.Lock()
            self.interrupt_next = False

        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            if self.interrupt_next:
                self.interrupt_next = False
                raise KeyboardInterrupt
            return self._lock.acquire(blocking, timeout)

        def release(self) -> None:
            self._lock.release()

        __enter__ = acquire

        def __exit__(self, *exc: object) -> None:
            self.release()

    lock = InterruptedLock()
    requests = Requests(lock)  # type: ignore[arg-type]
    token = object()
    with lock:
        requests.begin(token)
    lock.interrupt_next = True
    with pytest.raises(KeyboardInterrupt):
        requests.end(token)
    assert _a_forget_ends(lock, requests), "forget waited for a request that had ended"


# Ctrl-C (SIGINT, from a timer in the child) during calls that would run for a long time in C:
# a query of the native engine that never ends, and a put_many of 300,000 records (seconds).
_CTRL_C_CHILD = """
import os, signal, sys, threading
from pyevidence import EvidenceStore

def ctrl_c_soon():
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

def record(i, tenant="t"):
    return dict(tenant=tenant, record_id=f"r{i}", revision="v", kind="runbook",
                body=f"queue lag {i}: restart the consumer, then watch the lag " * 4, source="s",
                expires_at=9)

with EvidenceStore(sys.argv[1], engine=sys.argv[2]) as store:
    store.put_many([record(i, "u") for i in range(2000)])
    if sys.argv[2] == "native":
        ctrl_c_soon()
        try:
            store.query("SELECT count(*) FROM evidence_current a, evidence_current b, evidence_current c")
        except KeyboardInterrupt:
            print("query interrupted", flush=True)
    ctrl_c_soon()
    try:
        store.put_many([record(i) for i in range(300000)])
    except KeyboardInterrupt:
        print("put_many interrupted", flush=True)
    print(store.tenants(), flush=True)
    store.put(**record(0))
    print(store.retrieve(tenant="t", revision="v", query="queue", now=1).eligible_count, flush=True)
"""


def test_ctrl_c_stops_a_long_call_as_it_runs_and_the_store_goes_on(engine: str, tmp_path: Path) -> None:
    """The native engine runs a call in C, where Python's own handling of SIGINT waits for the
    call to return: the query here would never return, and the put_many would take seconds.
    Each stops with KeyboardInterrupt, the put_many writes nothing, and the store takes the
    next call."""
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_CHILD, str(tmp_path / "s.db"), engine],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    interrupted = ["query interrupted"] if engine == "native" else []
    assert done.stdout.splitlines() == [*interrupted, "put_many interrupted", "('u',)", "1"]


_OWN_HANDLER_CHILD = """
import os, signal, sys, threading
from pyevidence import EvidenceStore

heard = []
signal.signal(signal.SIGINT, lambda number, frame: heard.append(number))
with EvidenceStore(sys.argv[1], engine="native") as store:
    records = [dict(tenant="t", record_id=f"r{i}", revision="v", kind="runbook",
                    body=f"queue lag {i}: restart the consumer, then watch the lag " * 4, source="s",
                    expires_at=9) for i in range(200000)]
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # during the put_many
    store.put_many(records)  # heard by the program's handler, and not stopped
    print(len(heard), store.retrieve(tenant="t", revision="v", query="queue", now=1).eligible_count)
"""


def test_a_programs_own_sigint_handler_is_left_to_act_as_it_does(tmp_path: Path) -> None:
    pytest.importorskip("pyevidence.storage._native")
    done = subprocess.run(
        [sys.executable, "-c", _OWN_HANDLER_CHILD, str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "1 200000\n", "")


# faulthandler.register(SIGINT) sets a handler of its own at the C level, after the store's, and
# Python's table still says KeyboardInterrupt: chain=False only prints the stacks, chain=True then
# passes SIGINT on to the handler it replaced (the store's). A query that runs a few seconds in C.
_FAULTHANDLER_CHILD = """
import faulthandler, os, signal, sys, threading
from pyevidence import EvidenceStore

with EvidenceStore(sys.argv[1], engine="native") as store:
    store.put_many([dict(tenant="u", record_id=f"r{i}", revision="v", kind="runbook", body=f"b {i}",
                         source="s", expires_at=9) for i in range(2000)])
    for chain in (False, True):
        # all_threads=False: dumping every thread from a signal handler crashed this child now and
        # then (SIGSEGV in 3 of 16 runs) with the store's Ctrl-C watch switched off as well
        faulthandler.register(signal.SIGINT, file=open(os.devnull, "w"), chain=chain, all_threads=False)
        threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            rows = store.query("SELECT count(*) FROM evidence_current a, evidence_current b,"
                               " (SELECT 1 FROM evidence_current LIMIT 60) c").rows
            print(chain, rows, flush=True)
        except BaseException as exc:
            print(chain, type(exc).__name__, flush=True)
"""


def test_a_sigint_handler_set_at_the_c_level_since_is_left_to_act_as_it_does(tmp_path: Path) -> None:
    """Not chained to: without chain=True the query runs to its end (nothing raises
    KeyboardInterrupt, so nothing may stop it); with chain=True, SIGINT reaches Python
    through the store's handler, which must not pass it back (each calling the other until
    the stack overflowed, a crash), and KeyboardInterrupt comes as the query returns."""
    pytest.importorskip("pyevidence.storage._native")
    done = subprocess.run(
        [sys.executable, "-c", _FAULTHANDLER_CHILD, str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "False ((240000000,),)\nTrue KeyboardInterrupt\n",
        "",
    )
