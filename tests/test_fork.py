"""A store does not cross a fork (pyevidence/forks.py, docs/python-api.md, "Processes").

Each test forks (os.fork or multiprocessing's fork start method); the child reports through a
pipe and ends with os._exit, under a timeout, so a hang is a failure, not a stuck suite.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import ENGINES
from helpers import record

from pyevidence import EvidenceStore, StoreError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="this platform has no fork")

CHILD_TIMEOUT = 20.0  # seconds; a child still running then is a hang


@contextmanager
def _forking() -> Iterator[None]:
    # Python 3.12+ warns when a process with threads forks; these tests do it on purpose.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def in_child(body: Callable[[], Any]) -> Any:
    """body() run in a child made by os.fork(); what it returned (through JSON), or its
    exception as {"raised": "Type: message"}. Fails the test if the child hangs."""
    read_end, write_end = os.pipe()
    with _forking():
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_end)
            try:
                answer = {"returned": body()}
            except BaseException as exc:
                answer = {"returned": {"raised": f"{type(exc).__name__}: {exc}"}}
            os.write(write_end, json.dumps(answer).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    deadline = time.monotonic() + CHILD_TIMEOUT
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                pytest.fail(f"the forked child hung (no answer in {CHILD_TIMEOUT} s)")
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    assert data, "the child died without an answer"
    return json.loads(data)["returned"]


def check_intact(path: Path, tenants: list[str], engine: str) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    with EvidenceStore(path, engine=engine) as store:
        for tenant in tenants:
            assert store.verify(tenant=tenant).ok


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if not name.startswith("_") and callable(value) and not isinstance(value, property)
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_every_call_on_an_inherited_store_is_refused_at_once_even_with_its_lock_held(
    tmp_path: Path, engine: str
) -> None:
    """The child was forked while another thread was inside a store call (its progress
    callback): the store's lock is held for ever there. Every call still answers at once."""
    path = tmp_path / "ev.db"
    entered, release = threading.Event(), threading.Event()

    def progress(done: int, total: int) -> None:
        entered.set()
        release.wait(CHILD_TIMEOUT * 2)

    store = EvidenceStore(path, engine=engine, progress=progress)
    store.put_many([record(record_id=f"r{i}") for i in range(5)])
    version = store.history(tenant="team-a", record_id="r1")[0].version
    scoped = store.scoped(tenant="team-a")
    busy = threading.Thread(target=store.reindex)
    busy.start()
    assert entered.wait(10), "the reindex never called its progress function"

    one = record(record_id="child")
    calls: dict[str, Callable[[], object]] = {
        "put": lambda: store.put(**one),
        "put_many": lambda: store.put_many([one]),
        "retrieve": lambda: store.retrieve(tenant="team-a", revision="v1", query="queue", now=0),
        "query": lambda: store.query("SELECT 1"),
        "forget": lambda: store.forget(tenant="team-a", record_id="r1"),
        "finish_erasure": lambda: store.finish_erasure(timeout=0),
        "history": lambda: store.history(tenant="team-a", record_id="r1"),
        "get_version": lambda: store.get_version(tenant="team-a", record_id="r1", version=version),
        "verify": lambda: store.verify(tenant="team-a"),
        "tenants": store.tenants,
        "reindex": store.reindex,
        "check_index": store.check_index,
        "backup": lambda: store.backup(tmp_path / "copy.db"),
        "scoped": lambda: store.scoped(tenant="team-a"),
        "close": store.close,
    }
    scoped_calls: dict[str, Callable[[], object]] = {
        "put": lambda: scoped.put(**{k: v for k, v in one.items() if k != "tenant"}),  # type: ignore[arg-type]
        "put_many": lambda: scoped.put_many([{k: v for k, v in one.items() if k != "tenant"}]),
        "retrieve": lambda: scoped.retrieve(revision="v1", query="queue", now=0),
        "forget": lambda: scoped.forget(record_id="r1"),
        "put_in_revision": lambda: scoped.put_in_revision(
            record_id="child", revision="v1", kind="runbook", body="b", source="s", expires_at=9
        ),
        "forget_in_revision": lambda: scoped.forget_in_revision(record_id="r1", revision="v1"),
        "history": lambda: scoped.history(record_id="r1"),
        "get_version": lambda: scoped.get_version(record_id="r1", version=version),
        "verify": scoped.verify,
    }
    # A new method of either class needs its line here.
    assert set(calls) == _public_methods(EvidenceStore)
    assert set(scoped_calls) == _public_methods(type(scoped))

    def child() -> dict[str, object]:
        answers: dict[str, object] = {}
        for prefix, table in (("", calls), ("scoped.", scoped_calls)):
            for name, call in table.items():
                try:
                    answers[prefix + name] = repr(call())
                except StoreError as exc:
                    answers[prefix + name] = f"StoreError: {exc}"
        with store:  # a with block left open by the fork unwinds without an error
            pass
        answers["after close: put"] = ""
        try:
            store.put(**one)
        except StoreError as exc:
            answers["after close: put"] = f"StoreError: {exc}"
        return answers

    try:
        answers = in_child(child)
    finally:
        release.set()
        busy.join()
    assert answers.pop("close") == "None"  # close() refuses nothing: it touches nothing either
    for name, answer in answers.items():
        assert isinstance(answer, str)
        assert answer.startswith("StoreError: this EvidenceStore on "), (name, answer)
        assert f"was opened in process {os.getpid()}" in answer, (name, answer)
        assert "'spawn' or 'forkserver'" in answer, (name, answer)
    assert not (tmp_path / "copy.db").exists()
    # The parent's store goes on, its data intact.
    store.put(**record(record_id="after"))
    assert len(store.history(tenant="team-a", record_id="r1")) == 1
    store.close()
    check_intact(path, ["team-a"], engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_opens_other_files_but_never_one_a_store_had_open_at_the_fork(
    tmp_path: Path, engine: str
) -> None:
    held, other, closed_before = tmp_path / "held.db", tmp_path / "other.db", tmp_path / "closed.db"
    (tmp_path / "link.db").symlink_to(held)
    EvidenceStore(closed_before, engine=engine).close()  # closed before the fork: free
    store = EvidenceStore(held, engine=engine)
    store.put(**record())
    os.link(held, tmp_path / "hard.db")

    def child() -> dict[str, str]:
        answers = {}
        for name in ("held.db", "link.db", "hard.db"):
            try:
                EvidenceStore(tmp_path / name, engine=engine).close()
                answers[name] = "opened"
            except StoreError as exc:
                answers[name] = str(exc)
        for name in ("other.db", "closed.db"):
            with EvidenceStore(tmp_path / name, engine=engine) as mine:
                mine.put(**record(tenant="child"))
                answers[name] = str(mine.verify(tenant="child").ok)
        with EvidenceStore(":memory:", engine=engine) as memory:
            memory.put(**record())
            answers[":memory:"] = str(len(memory.history(tenant="team-a", record_id="r1")))
        return answers

    answers = in_child(child)
    for name in ("held.db", "link.db", "hard.db"):
        assert answers[name].startswith(f"opening {tmp_path / name} refused: this process"), answers
        assert f"forked from process {os.getpid()}" in answers[name]
        assert "'spawn' or 'forkserver'" in answers[name]
    assert answers["other.db"] == answers["closed.db"] == "True"
    assert answers[":memory:"] == "1"
    store.put(**record(record_id="r2"))
    store.close()
    check_intact(held, ["team-a"], engine)
    check_intact(other, ["child"], engine)


# The child keeps its copy of the connection open through close(), a with block's exit,
# garbage collection and the interpreter's shutdown; a weak reference's callback and the
# file descriptors say whether anything freed or closed it.
_NEVER_CLOSED = """
import ctypes, gc, os, sys, weakref
from pyevidence import EvidenceStore

path, engine = sys.argv[1], sys.argv[2]
store = EvidenceStore(path, engine=engine)
store.put(tenant="t", record_id="r", revision="v", kind="runbook", body="b", source="s", expires_at=9)
read_end, write_end = os.pipe()

def files():
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink(f"/proc/self/fd/{fd}").startswith(path)
        except OSError:
            pass
    return found

pid = os.fork()
if pid == 0:
    os.close(read_end)
    def freed(ref, write=os.write, fd=write_end):
        write(fd, b"freed ")
    watch = weakref.ref(store._engine, freed)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(watch))  # the watch itself outlives the shutdown
    before = files()
    with store:
        pass
    store.close()
    del store
    gc.collect()
    os.write(write_end, f"open {before} {files()} ".encode())
    sys.exit(0)  # the interpreter's shutdown, with watch still set
os.close(write_end)
os.waitpid(pid, 0)
said = b""
while chunk := os.read(read_end, 1024):
    said += chunk
store.put(tenant="t", record_id="r2", revision="v", kind="runbook", body="b", source="s", expires_at=9)
store.close()
print(said.decode())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors in /proc")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_never_closes_or_frees_the_connection_it_inherited(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "ev.db"
    run = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", _NEVER_CLOSED, str(path), engine],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert run.returncode == 0, run.stderr
    said = run.stdout.split()
    assert said[0] == "open" and said[1] == said[2] and int(said[1]) > 0, run.stdout
    assert "freed" not in said, run.stdout
    check_intact(path, ["t"], engine)


def _fork_worker(args: tuple[str, str]) -> str:
    path, engine = args
    try:
        with EvidenceStore(path, engine=engine) as mine:
            mine.put_many([record(tenant="worker", record_id=f"w{os.getpid()}-{i}") for i in range(20)])
    except StoreError as exc:
        return str(exc)
    return "wrote"


def _spawn_worker(args: tuple[str, str, int]) -> list[str]:
    path, engine, worker = args
    versions = []
    with EvidenceStore(path, engine=engine) as mine:
        for batch in range(10):
            ids = [f"s{worker}-{batch}-{i}" for i in range(20)]
            mine.put_many([record(tenant="worker", record_id=r) for r in ids])
            versions += [mine.history(tenant="worker", record_id=r)[-1].version for r in ids]
    return versions


@pytest.mark.parametrize("engine", ENGINES)
def test_fork_workers_are_refused_spawn_workers_write_and_the_parent_keeps_its_data(
    tmp_path: Path, engine: str
) -> None:
    """The audit's reproduction: the parent's store is open when a fork pool starts; its
    workers' stores on that file are refused, where they used to corrupt it. With spawn,
    the workers write beside the parent and every acknowledged version is there."""
    path = str(tmp_path / "ev.db")
    store = EvidenceStore(path, engine=engine)
    store.put(**record())
    with _forking(), multiprocessing.get_context("fork").Pool(2) as pool:
        pending = pool.map_async(_fork_worker, [(path, engine)] * 4)
        store.close()  # the parent closes and reopens while the workers run, as in the audit
        store = EvidenceStore(path, engine=engine)
        for i in range(20):
            store.put(**record(record_id=f"p{i}"))
        answers = pending.get(timeout=60)
    for answer in answers:
        assert answer.startswith(f"opening {path} refused: this process"), answer
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pending_versions = pool.map_async(_spawn_worker, [(path, engine, w) for w in range(2)])
        for i in range(20):
            store.put(**record(record_id=f"q{i}"))
        acknowledged = [v for worker in pending_versions.get(timeout=120) for v in worker]
    assert len(acknowledged) == 400
    store.close()
    check_intact(Path(path), ["team-a", "worker"], engine)
    spawned = [f"s{w}-{b}-{i}" for w in range(2) for b in range(10) for i in range(20)]
    with EvidenceStore(path, engine=engine) as again:
        for record_id, version in zip(spawned, acknowledged, strict=True):
            found = again.get_version(tenant="worker", record_id=record_id, version=version)
            assert found.status == "found", (record_id, version)
        assert len(again.history(tenant="team-a", record_id="p19")) == 1
