"""pyevidence on a replicated dqlite cluster: three nodes on loopback.

These run under Python >= 3.13 with the cluster extra (``make test-cluster``
builds build/evidence_node, makes that venv and runs this file); under an older
Python only the tests that need no node run (the error it gives, how a put_many
is cut). With PYEVIDENCE_REQUIRE_CLUSTER=1 (as make test-cluster sets) a missing
node program or client fails instead of skipping.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceStore, bulk
from pyevidence.core.errors import EngineUnavailableError, SchemaError, StoreError, ValidationError

ROOT = Path(__file__).resolve().parent.parent
REQUIRED = os.environ.get("PYEVIDENCE_REQUIRE_CLUSTER") == "1"
NEW_ENOUGH = sys.version_info >= (3, 13)
# Loopback: an election after 75 ms of silence, so the failover tests run fast. Enough only
# because these tests' writes are small (docs/cluster.md, "Large writes": users get 50).
LATENCY_MS = "5"


def _node_program() -> str | None:
    program = os.environ.get("PYEVIDENCE_NODE") or str(ROOT / "build" / "evidence_node")
    return program if os.access(program, os.X_OK) else None


def _missing() -> str | None:
    if not NEW_ENOUGH:
        return f"the cluster client needs Python >= 3.13, this is {sys.version_info[:2]}"
    try:
        import dqlitedbapi  # noqa: F401
    except ImportError:
        return "dqlite-dbapi is not installed (in the pyevidence checkout: pip install '.[cluster]')"
    if _node_program() is None:
        return "build/evidence_node is not built (make node)"
    return None


def _needs_cluster() -> None:
    why = _missing()
    if why is not None:
        if REQUIRED:
            pytest.fail(f"PYEVIDENCE_REQUIRE_CLUSTER=1 but {why}")
        pytest.skip(why)


_CRASH_REPORT = re.compile(r"crashed: SIGSEGV at (0x[0-9a-f]+); stack \(innermost first\):\n")


# Where a crash of Debian 12's dqlite stack happens: the libraries, not pyevidence's code (which is
# linked into evidence_node itself) nor SQLite's.
_DQLITE_LIBRARIES = ("/libdqlite.so", "/libraft.so", "/libuv.so")


def _crashed_in_dqlite(log: str) -> bool:
    """Whether a node's log ends with a crash report (csrc/node/evidence_crash.c) of the known
    crashes of libdqlite 1.11.1 / libraft 0.15.0 (Debian 12) under leader kills (docs/cluster.md,
    "Known crashes of Debian 12's dqlite"):
    - a stack whose innermost frame outside the handler and libc is in libdqlite, libraft or
      libuv;
    - a jump to an address in the first page from libuv's event loop, which the unwinder cannot
      walk, so the report has no frames (gdb on its core dump showed the call from libuv.so.1).
    A stack with pyevidence's code or SQLite innermost matches neither."""
    found = list(_CRASH_REPORT.finditer(log))
    if not found:
        return False
    frames = log[found[-1].end() :].splitlines()
    if not all(")[0x" in f for f in frames):  # the report must be the log's last words
        return False
    if not frames:
        return int(found[-1].group(1), 16) < 4096
    outside_libc = [f for f in frames[1:] if "/libc.so" not in f]  # frames[0] is the handler itself
    return bool(outside_libc) and any(lib in outside_libc[0] for lib in _DQLITE_LIBRARIES)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    node_id: int
    address: str
    data: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None
    latency_ms: str = LATENCY_MS

    def start(self, join: list[str]) -> None:
        """Starts the node through the CLI (pyevidence node execs the program) and waits until ready."""
        env = {**os.environ, "PYEVIDENCE_NODE": str(_node_program())}
        ready = f"node {self.node_id} ready"
        seen = self.log.read_text().count(ready) if self.log.exists() else 0
        args = ["--id", str(self.node_id), "--address", self.address, "--data", str(self.data)]
        args += ["--latency-ms", self.latency_ms] + [a for seed in join for a in ("--join", seed)]
        if self.node_id == 1 and not (self.data / "metadata1").exists():
            args.append("--new-cluster")  # node 1's first start, as docs/cluster.md starts it
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pyevidence", "node", *args], stderr=log, env=env
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.log.read_text().count(ready) > seen:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"node {self.node_id} did not start:\n{self.log.read_text()}")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        if self.process.wait() != -signal.SIGKILL:  # it had ended before the signal came
            self.check_crash()
        self.process = None

    def check_crash(self) -> None:
        """For a node that ended by itself: passes for a known crash of dqlite (with a warning, so the
        summary shows it), fails with the node's log, which holds its stack, for anything else."""
        assert self.process is not None
        status = self.process.poll()
        log = self.log.read_text()
        assert status == -signal.SIGSEGV and _crashed_in_dqlite(log), (
            f"node {self.node_id} ended by itself (status {status}):\n{log}"
        )
        warnings.warn(
            f"node {self.node_id} hit the known crash of Debian 12's dqlite and was restarted", stacklevel=2
        )

    def stop(self) -> int:
        """SIGTERM; returns the exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process = None
        return status


@dataclass
class Cluster:
    nodes: list[Node] = field(default_factory=list)

    @classmethod
    def of_three(cls, root: Path, latency_ms: str = LATENCY_MS) -> Cluster:
        """Three nodes on loopback, their data and logs under root; not started yet."""
        return cls(
            [
                Node(
                    i, f"127.0.0.1:{_free_port()}", root / f"n{i}", root / f"n{i}.log", latency_ms=latency_ms
                )
                for i in (1, 2, 3)
            ]
        )

    def start(self) -> None:
        """The first node starts a new cluster; the others join it."""
        first, *others = self.nodes
        first.start(join=[])
        for node in others:
            node.start(join=[first.address])

    @property
    def addresses(self) -> list[str]:
        return [n.address for n in self.nodes]

    def url(self, database: str | None = None) -> str:
        return f"dqlite://{','.join(self.addresses)}/{database or 'db' + uuid.uuid4().hex[:12]}"

    def leader(self) -> Node:
        """The node that leads now (asked through dqlite-dbapi's own client)."""
        from dqliteclient import ClusterClient, MemoryNodeStore

        async def ask() -> Any:
            client = ClusterClient(MemoryNodeStore([n.address for n in self.running()]))
            return await client.leader_info()

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.supervise()
            try:
                info = asyncio.run(ask())
            except Exception:
                info = None
            if info is not None:
                return next(n for n in self.nodes if n.node_id == info.node_id)
            time.sleep(0.05)
        raise AssertionError("no leader within 20 s")

    def ask_transfer(self, to: Node) -> bool:
        """Asks the cluster once to move its leadership to node to; False if it could not (an
        election under way)."""
        from dqliteclient import ClusterClient, MemoryNodeStore

        async def move() -> None:
            client = ClusterClient(MemoryNodeStore([n.address for n in self.running()]))
            await client.transfer_leadership(to.node_id)

        try:
            asyncio.run(move())
        except Exception:
            return False
        return True

    def transfer(self, to: Node) -> None:
        deadline = time.monotonic() + 20
        while self.leader() is not to:
            assert time.monotonic() < deadline, f"leadership did not move to node {to.node_id}"
            if not self.ask_transfer(to):
                time.sleep(0.1)

    def running(self) -> list[Node]:
        return [n for n in self.nodes if n.process is not None]

    def stop_all(self) -> None:
        """Stops every running node with SIGTERM, each in turn; each must stop cleanly: status 0 and
        "stopped" as the last word in its log. (A node down with a known crash of dqlite is
        restarted first, as its supervisor would have.)"""
        self.supervise()
        statuses = {n.node_id: n.stop() for n in self.running()}
        for node_id, status in statuses.items():
            node = next(n for n in self.nodes if n.node_id == node_id)
            assert status == 0, node.log.read_text()
            assert node.log.read_text().rstrip().endswith(f"node {node_id} stopped")

    def supervise(self) -> None:
        """What a supervisor does for a node (docs/cluster.md: systemd's Restart=on-failure): restarts one
        that hit a known crash of dqlite. A node that ended in any other way fails the test."""
        for node in self.running():
            assert node.process is not None
            if node.process.poll() is not None:
                node.check_crash()
                node.start(join=[])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    _needs_cluster()
    c = Cluster.of_three(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop_all()


def start_writer(url: str, name: str, stop: Path, out: Path) -> subprocess.Popen[bytes]:
    """A client process (tests/cluster_writer.py) writing to tenant-NAME until the file stop exists;
    its operations go to out/NAME.jsonl, its errors to out/NAME.err."""
    with (out / f"{name}.jsonl").open("w") as stdout, (out / f"{name}.err").open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "cluster_writer.py"), url, name, str(stop)],
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )


def record(i: int, **changes: Any) -> dict[str, Any]:
    base = dict(
        tenant="team-a",
        record_id=f"r{i}",
        revision="v1",
        kind="runbook",
        body=f"queue lag on consumer {i}: restart the worker",
        source=f"runbook://queue/{i}",
        expires_at=1000,
    )
    return {**base, **changes}


# -- the same answers as a file ------------------------------------------------------

TENANTS = st.sampled_from(["team-a", "team-b"])
WORDS = st.sampled_from(["queue", "lag", "disk", "full", "restart", "worker", "Überlauf", "db"])
RECORDS = st.fixed_dictionaries(
    {
        "tenant": TENANTS,
        "record_id": st.sampled_from(["r1", "r2", "r3", "r4"]),
        "revision": st.sampled_from(["v1", "v2"]),
        "kind": st.sampled_from(["working", "incident", "runbook"]),
        "body": st.lists(WORDS, min_size=1, max_size=5).map(" ".join),
        "source": st.sampled_from(["rb://a", "inc://b"]),
        "expires_at": st.integers(0, 20),
    }
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), RECORDS),
        st.tuples(st.just("put_many"), st.lists(RECORDS, min_size=1, max_size=3)),
        st.tuples(st.just("forget"), st.tuples(TENANTS, st.sampled_from(["r1", "r2", "r3", "r4"]))),
    ),
    min_size=1,
    max_size=12,
)


def _apply(store: EvidenceStore, operations: list[tuple[str, Any]]) -> list[Any]:
    results = []
    for op, arg in operations:
        if op == "put":
            results.append(store.put(**arg))
        elif op == "put_many":
            results.append(store.put_many(arg))
        else:
            results.append(store.forget(tenant=arg[0], record_id=arg[1]))
    return results


def _observe(store: EvidenceStore) -> list[Any]:
    seen: list[Any] = []
    for tenant in ("team-a", "team-b"):
        for revision in ("v1", "v2"):
            for now in (0, 7, 19):
                for query in ("queue lag", "disk full restart", "Überlauf db worker", "nothing matches"):
                    for method in ("index", "scan"):
                        asked = dict(tenant=tenant, revision=revision, query=query, now=now, method=method)
                        seen.append(store.retrieve(**asked))
        for record_id in ("r1", "r2", "r3", "r4"):
            history = store.history(tenant=tenant, record_id=record_id)
            seen.append(history)
            seen += [
                store.get_version(tenant=tenant, record_id=record_id, version=v.version) for v in history
            ]
        seen.append(store.verify(tenant=tenant))
    return seen


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(operations=OPERATIONS)
def test_a_cluster_answers_exactly_as_a_file_store(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, operations: list[tuple[str, Any]]
) -> None:
    """Same operations, same results: hits with their scores, versions and hashes,
    eligible counts (also where nothing matches), histories, citations and verification,
    through the token index and through the scan."""
    path = tmp_path_factory.mktemp("file") / "evidence.db"
    with EvidenceStore(cluster.url()) as on_cluster, EvidenceStore(path, engine="python") as on_file:
        assert on_cluster.engine == "cluster"
        assert _apply(on_cluster, operations) == _apply(on_file, operations)
        assert _observe(on_cluster) == _observe(on_file)


def test_bad_input_gets_the_same_error_and_changes_nothing(cluster: Cluster) -> None:
    with EvidenceStore(cluster.url()) as store:
        store.put(**record(1))
        with pytest.raises(ValidationError, match=r"^records\[1\]\.kind: "):
            store.put_many([record(2), record(3, kind="poem")])
        with pytest.raises(ValidationError, match=r"^body: "):
            store.put(**record(4, body="   "))
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=1).eligible_count == 1
        assert [v.seq for v in store.history(tenant="team-a", record_id="r1")] == [1]


def test_put_retrieve_forget_verify(cluster: Cluster) -> None:
    with EvidenceStore(cluster.url()) as store:
        assert store.put_many([record(i) for i in range(5)]) == 5
        result = store.retrieve(tenant="team-a", revision="v1", query="queue lag worker", now=1, limit=3)
        assert [h.record_id for h in result.hits] == ["r0", "r1", "r2"]
        assert result.eligible_count == 5
        cited = result.hits[0]
        assert store.forget(tenant="team-a", record_id="r0") is True
        assert store.forget(tenant="team-a", record_id="r0") is False
        assert store.get_version(tenant="team-a", record_id="r0", version=cited.version).status == "forgotten"
        assert store.verify(tenant="team-a").ok
        assert store.retrieve(tenant="team-b", revision="v1", query="queue", now=1).hits == ()


def test_an_interrupt_just_after_begin_leaves_no_transaction_on_the_leader(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KeyboardInterrupt right after a write's BEGIN IMMEDIATE left it open on the leader
    connection: the next write failed with 'cannot start a transaction within a transaction'."""
    url = cluster.url()
    with EvidenceStore(url) as store:
        engine: Any = store._engine
        execute = engine._execute

        def interrupted(sql: str, params: Any = ()) -> Any:
            done = execute(sql, params)
            if sql == "BEGIN IMMEDIATE":
                monkeypatch.setattr(engine, "_execute", execute)  # once
                raise KeyboardInterrupt
            return done

        monkeypatch.setattr(engine, "_execute", interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.put(**record(1))
        assert store.put_many([record(2)]) == 1
    with EvidenceStore(url) as other:
        assert other.retrieve(tenant="team-a", revision="v1", query="queue", now=1).eligible_count == 1


def test_the_leader_killed_the_data_and_the_functions_survive(cluster: Cluster) -> None:
    """kill -9 the leader: a new one is elected, every acknowledged write is there, on
    every node, and calls go on (ranking with token_overlap, puts hashed by the triggers)."""
    url = cluster.url()
    with EvidenceStore(url) as store:
        store.put_many([record(i) for i in range(10)])
        before = store.retrieve(tenant="team-a", revision="v1", query="queue lag", now=1, limit=10)
        old = cluster.leader()
        old.kill()
        started = time.monotonic()
        store.put(**record(10, body="disk full on the queue host"))  # waits for the new leader
        failover = time.monotonic() - started
        new = cluster.leader()
        assert new is not old
        assert failover < 10, f"the put waited {failover:.1f} s for a new leader"
        after = store.retrieve(tenant="team-a", revision="v1", query="queue lag", now=1, limit=10)
        assert after.hits == before.hits
        assert store.retrieve(tenant="team-a", revision="v1", query="disk", now=1).hits[0].record_id == "r10"
        assert store.verify(tenant="team-a").ok
        old.start(join=[])  # a restarted node needs no --join: it catches up
        expected = _observe(store)
    # Every node holds every write: each one leads in turn and answers the same.
    for node in cluster.nodes:
        cluster.transfer(node)
        with EvidenceStore(url) as store:
            assert _observe(store) == expected


def test_reads_continue_on_the_new_leader_inside_verify(cluster: Cluster) -> None:
    """A leader killed between two reads of one snapshot: the reads are run again on the
    new leader, and verify still checks one state of the database."""
    with EvidenceStore(cluster.url()) as store:
        store.put_many([record(i) for i in range(3)])
        engine = store._engine
        with engine.snapshot():
            first = engine.select("SELECT count(*) FROM evidence_versions")
            leader = cluster.leader()
            leader.kill()
            second = engine.select("SELECT count(*) FROM evidence_versions")
        assert first == second == [(3,)]
        assert store.verify(tenant="team-a").ok
        leader.start(join=[])


def test_a_cluster_store_refuses_what_it_cannot_do(cluster: Cluster, tmp_path: Path) -> None:
    with EvidenceStore(cluster.url()) as store:
        with pytest.raises(EngineUnavailableError, match="copy its data directory"):
            store.backup(tmp_path / "copy.db")
        with pytest.raises(EngineUnavailableError, match="read-only gate"):
            store.query("SELECT 1")


def test_no_leader_reachable_is_a_clear_error(cluster: Cluster) -> None:
    url = f"dqlite://127.0.0.1:{_free_port()}/nothing"
    started = time.monotonic()
    with pytest.raises(
        StoreError, match=r"no leader of the cluster .* answered within .*; nothing was written"
    ):
        EvidenceStore(url)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("dqlite://127.0.0.1:9001", "names no database"),
        ("dqlite://127.0.0.1/evidence", "is not a HOST:PORT address"),
        ("dqlite://127.0.0.1:9001/a b", "names no database"),
    ],
)
def test_a_malformed_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EvidenceStore(url)


def test_engine_cluster_needs_a_url(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs a dqlite://"):
        EvidenceStore(tmp_path / "x.db", engine="cluster")


@pytest.mark.skipif(NEW_ENOUGH, reason="the error of an older Python")
def test_an_older_python_is_told_it_needs_313() -> None:
    with pytest.raises(EngineUnavailableError, match=r"needs Python 3\.13 or later"):
        EvidenceStore("dqlite://127.0.0.1:9001/evidence")


def test_a_joining_node_needs_a_seed(tmp_path: Path) -> None:
    program = _node_program()
    if program is None:
        _needs_cluster()
    env = {**os.environ, "PYEVIDENCE_NODE": str(program)}
    run = subprocess.run(
        [sys.executable, "-m", "pyevidence", "node", "--id", "2", "--address", "127.0.0.1:1", "--data",
         str(tmp_path / "n")],
        capture_output=True, text=True, env=env, timeout=30,
    )  # fmt: skip
    assert run.returncode == 2
    assert "node 2 has no cluster yet: give --join HOST:PORT of a running node" in run.stderr


def _node(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    program = _node_program()
    if program is None:
        _needs_cluster()
    env = {**os.environ, "PYEVIDENCE_NODE": str(program)}
    return subprocess.run(
        [sys.executable, "-m", "pyevidence", "node", *args], capture_output=True, text=True, env=env,
        timeout=timeout,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("127.0.0.1:99999", "--address must be HOST:PORT with a port of 1..65535, got 127.0.0.1:99999"),
        ("127.0.0.1:abc", "--address must be HOST:PORT with a port of 1..65535"),
        ("127.0.0.1:0", "--address must be HOST:PORT with a port of 1..65535"),
        ("localhost:9001", "--address must be an IPv4 address of this machine and a port"),
        ("[::1]:9001", "--address must be an IPv4 address of this machine and a port"),
        ("0.0.0.0:9001", "0.0.0.0 names no one machine"),
    ],
)
def test_an_address_the_node_would_not_listen_at_is_a_usage_error(
    address: str, says: str, tmp_path: Path
) -> None:
    """Before, a port of 99999 was taken as 34463 and "abc" as any port: the node announced
    an address it did not listen on, and the cluster stored it."""
    run = _node("--id", "1", "--address", address, "--data", str(tmp_path / "n"), "--new-cluster")
    assert run.returncode == 2 and says in run.stderr, run.stderr
    assert not (tmp_path / "n").exists()


def test_a_bad_seed_or_an_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    run = _node(
        "--id", "2", "--address", "127.0.0.1:9001", "--data", str(tmp_path / "n"), "--join", "nonsense"
    )
    assert (
        run.returncode == 2 and "--join must be HOST:PORT with a port of 1..65535, got nonsense" in run.stderr
    )
    run = _node("--bogus")
    assert run.returncode == 2 and "evidence_node: unknown option --bogus" in run.stderr


def test_an_address_taken_or_not_this_machines_says_why(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = _node(
            "--id", "1", "--address", f"127.0.0.1:{port}", "--data", str(tmp_path / "n"), "--new-cluster"
        )
    assert run.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in run.stderr, run.stderr
    run = _node(  # 192.0.2.1: TEST-NET-1
        "--id", "1", "--address", "192.0.2.1:9001", "--data", str(tmp_path / "m"), "--new-cluster"
    )
    assert run.returncode == 1 and "that address is not one of this machine's" in run.stderr, run.stderr


def _stop_a_joining_node(tmp_path: Path, seed: str, why: str) -> float:
    """Starts node 5 joining through seed, sends SIGTERM once it listens; returns how long it took
    to stop, after checking that it stopped cleanly and said why: "node 5 stopping before it
    joined (" + why."""
    node = Node(5, f"127.0.0.1:{_free_port()}", tmp_path / "n5", tmp_path / "n5.log")
    env = {**os.environ, "PYEVIDENCE_NODE": str(_node_program())}
    args = ["--id", "5", "--address", node.address, "--data", str(node.data), "--join", seed]
    with node.log.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "pyevidence", "node", *args], stderr=log, env=env)
    try:
        deadline = time.monotonic() + 30
        while "listening on" not in node.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # into the join's first attempt
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, node.log.read_text()
        took = time.monotonic() - sent
    finally:
        process.kill()
    assert "node 5 stopping before it joined (" + why in node.log.read_text(), node.log.read_text()
    return took


def test_a_node_stops_on_sigterm_while_it_still_tries_to_join(tmp_path: Path) -> None:
    _needs_cluster()
    seed = f"127.0.0.1:{_free_port()}"
    # The reason it had not joined yet is kept, not replaced by the signal's name.
    why = f"SIGTERM; last: cannot connect to {seed}: Connection refused)"
    assert _stop_a_joining_node(tmp_path, seed, why) < 10  # not after the join's 120 s


def test_a_node_stops_on_sigterm_while_a_seed_keeps_it_waiting(tmp_path: Path) -> None:
    """A seed that takes the connection and never answers kept the attempt in a read of up to
    60 s: the stop signal now ends the wait itself, not only the pause between attempts."""
    _needs_cluster()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # never accepted: the kernel completes the connections, no one answers
        seed = f"127.0.0.1:{silent.getsockname()[1]}"
        assert _stop_a_joining_node(tmp_path, seed, "SIGTERM)") < 5  # cut its first attempt short


def test_an_id_the_cluster_has_already_is_refused_not_taken(tmp_path: Path) -> None:
    """Another address under a member's id, or a member's id on an empty data directory (a node
    that lost its state): both used to report "a voter of the cluster" and serve outside it."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path)  # with one stopped, two still elect a leader
    first, _, third = three.nodes
    try:
        three.start()
        elsewhere = f"127.0.0.1:{_free_port()}"
        run = _node(
            "--id", "3", "--address", elsewhere, "--data", str(tmp_path / "other"), "--join", first.address
        )
        assert run.returncode == 1
        assert f"node 3 is a member of the cluster already, at {third.address}" in run.stderr, run.stderr
        assert third.stop() == 0
        run = _node("--id", "3", "--address", third.address, "--data", str(tmp_path / "empty"), "--join",
                    first.address)  # fmt: skip
        assert run.returncode == 1
        assert "this data directory holds no state of it" in run.stderr, run.stderr
        third.start(join=[first.address])  # from its own data directory: still a member
        assert third.log.read_text().count("node 3 is a voter of the cluster") == 2
    finally:
        three.stop_all()


def test_node_1_starts_a_cluster_only_when_told_and_never_again_on_an_empty_directory(tmp_path: Path) -> None:
    """libdqlite starts a new cluster whenever node 1 starts on an empty data directory: node 1
    restarted after losing its directory led a cluster of its own, acknowledged writes there, and
    they were lost when the other members took it back."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path)
    first, second, _ = three.nodes
    try:
        three.start()
        with EvidenceStore(three.url("kept")) as store:
            store.put(**record(1))
        assert first.stop() == 0
        run = _node("--id", "1", "--address", first.address, "--data", str(first.data), "--new-cluster")
        assert run.returncode == 2 and "--new-cluster is for node 1's first start only" in run.stderr
        shutil.rmtree(first.data)  # node 1's disk is lost
        run = _node("--id", "1", "--address", first.address, "--data", str(first.data))
        assert run.returncode == 2, run.stderr
        assert run.stderr == (
            f"evidence_node: node 1 has no state in {first.data}: to start a new cluster, give --new-cluster "
            "(its first start only); if node 1 was a member of a cluster and lost its data, it must not "
            "start an empty cluster under its id: start this node under a new id with --join HOST:PORT "
            "of a running member\n"
        )
        # Under a new id, but at node 1's address, which a member still holds: refused at once
        # (it retried dqlite's "address already in use" for two minutes).
        started = time.monotonic()
        run = _node("--id", "4", "--address", first.address, "--data", str(tmp_path / "n4"), "--join",
                    second.address)  # fmt: skip
        assert run.returncode == 1, run.stderr
        assert f"{first.address} is the address of node 1 of the cluster already" in run.stderr
        assert time.monotonic() - started < 30
        with EvidenceStore(three.url("kept")) as store:
            assert len(store.history(tenant=record(1)["tenant"], record_id=record(1)["record_id"])) == 1
    finally:
        three.stop_all()


@pytest.mark.parametrize(
    ("args", "says", "status"),
    [
        (["--id", "2", "--new-cluster"], "--new-cluster starts a cluster from node 1 (dqlite's rule)", 2),
        (["--id", "1", "--id", "2"], "--id is given twice; give it once", 2),
        (["--id", "1", "--new-cluster", "--new-cluster"], "--new-cluster is given twice; give it once", 2),
        (["--id", "2", "--join", "host name:9001"], "--join must be HOST:PORT, a host of letters, digits", 2),
        (["--id", "1", "--new-cluster", "--data", "FILE"], "is not a directory; name a directory", 2),
    ],
)
def test_options_a_node_cannot_act_on_are_refused_before_it_starts(
    tmp_path: Path, args: list[str], says: str, status: int
) -> None:
    """A file as --data was reported as "out of memory", and a repeated --id silently kept the last."""
    (tmp_path / "FILE").write_text("not a directory")
    args = [str(tmp_path / "FILE") if a == "FILE" else a for a in args]
    if "--data" not in args:
        args += ["--data", str(tmp_path / "n")]
    run = _node(*args, "--address", f"127.0.0.1:{_free_port()}")
    assert run.returncode == status and says in run.stderr, run.stderr
    assert not (tmp_path / "n").exists()  # a refused start leaves no directory behind


def test_a_crashing_node_writes_its_stack_to_its_log(tmp_path: Path) -> None:
    """A node that receives SIGSEGV writes where it was before it ends, and ends as the signal ends
    it (status -11), so a crash in CI or in production can be read from the log. The stack of this
    crash (the main thread, waiting for a signal) is not in dqlite's libraries, so the test harness
    would not restart it."""
    program = _node_program()
    if program is None:
        _needs_cluster()
    node = Node(1, f"127.0.0.1:{_free_port()}", tmp_path / "n1", tmp_path / "n1.log")
    node.start(join=[])
    assert node.process is not None
    node.process.send_signal(signal.SIGSEGV)
    assert node.process.wait(timeout=20) == -signal.SIGSEGV
    log = node.log.read_text()
    if "AddressSanitizer" in log:  # the ASan build leaves the report to ASan (make test-cluster-asan)
        return
    found = _CRASH_REPORT.search(log)
    assert found is not None, log
    report = log[found.end() :].splitlines()
    assert any("evidence_node(main+" in frame for frame in report), log
    assert not _crashed_in_dqlite(log)


# The report of a real crash of libraft 0.15.0 on this machine (strlen on the null address of
# sendAppendEntriesResult), and the same report with pyevidence's code innermost.
_LIBRAFT_CRASH = """evidence_node: node 3 ready
evidence_node: node 3 crashed: SIGSEGV at 0x0; stack (innermost first):
/work/main/build/evidence_node(+0x501d)[0x55f87da9001d]
/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7fcb4e5a2050]
/lib/x86_64-linux-gnu/libc.so.6(+0x156219)[0x7fcb4e6bc219]
/lib/x86_64-linux-gnu/libraft.so.2(+0x1d706)[0x7fcb4e4f4706]
/lib/x86_64-linux-gnu/libraft.so.2(+0xd39b)[0x7fcb4e4e439b]
/lib/x86_64-linux-gnu/libuv.so.1(uv_run+0xc4)[0x7fcb4e5459e4]
/lib/x86_64-linux-gnu/libdqlite.so.0(+0x19650)[0x7fcb4e8c0650]
"""
_OWN_CRASH = _LIBRAFT_CRASH.replace(
    "/lib/x86_64-linux-gnu/libraft.so.2(+0x1d706)",
    "/work/main/build/evidence_node(evidenceDocsetWith+0x2a)[0x55f87da9111a]\n"
    "/lib/x86_64-linux-gnu/libraft.so.2(+0x1d706)",
)


# A real crash in libdqlite 1.11.1's leader__close, on this machine.
_LIBDQLITE_CRASH = """evidence_node: node 1 ready
evidence_node: node 1 crashed: SIGSEGV at 0x18; stack (innermost first):
/work/main/build/evidence_node(+0x502a)[0x56248e45102a]
/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f9250143050]
/lib/x86_64-linux-gnu/libdqlite.so.0(+0x10867)[0x7f9250458867]
/lib/x86_64-linux-gnu/libdqlite.so.0(leader__close+0x5f)[0x7f925045ef8f]
/lib/x86_64-linux-gnu/libuv.so.1(uv_run+0xa1)[0x7f92500e69c1]
"""


@pytest.mark.parametrize(
    "log, known",
    [
        (_LIBDQLITE_CRASH, True),
        # SQLite innermost (called by dqlite, or by pyevidence's functions): not excused
        (
            _LIBDQLITE_CRASH.replace(
                "/lib/x86_64-linux-gnu/libdqlite.so.0(+0x10867)",
                "/lib/x86_64-linux-gnu/libsqlite3.so.0(sqlite3_value_text+0x9)[0x7f92501111]\n"
                "/lib/x86_64-linux-gnu/libdqlite.so.0(+0x10867)",
            ),
            False,
        ),
        (_LIBRAFT_CRASH, True),
        (_OWN_CRASH, False),  # pyevidence's code is innermost: a bug of ours, never excused
        (_LIBRAFT_CRASH.replace("SIGSEGV at 0x0", "SIGABRT"), False),
        # the stack walk faulted: a jump into the first page passes, any other address does not
        (_LIBRAFT_CRASH.split("/work")[0].replace("0x0;", "0x4c;"), True),
        (_LIBRAFT_CRASH.split("/work")[0].replace("0x0;", "0x55f87da9001d;"), False),
        # an old crash, then a restart: the node's last end left no report of its own
        (_LIBRAFT_CRASH + "evidence_node: node 3 listening on 127.0.0.1:1 (restarted)\n", False),
        ("evidence_node: node 3 ready\n", False),  # killed without a word: no report to read
    ],
)
def test_only_the_known_crashes_of_dqlite_are_restarted_by_the_harness(log: str, known: bool) -> None:
    assert _crashed_in_dqlite(log) is known


def test_many_writes_pass_the_checkpoint(cluster: Cluster) -> None:
    """Past the WAL's checkpoint (a few hundred puts), writes go on: dqlite's VFS refuses
    fsync, so the cluster connection must not ask SQLite for one (synchronous stays OFF)."""
    with EvidenceStore(cluster.url()) as store:
        for i in range(400):
            store.put(**record(i))
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=1).eligible_count == 400
        assert store.verify(tenant="team-a").ok


def _chain(store: EvidenceStore, tenant: str) -> list[tuple[Any, ...]]:
    """Every version of the tenant, hashes included, in chain order."""
    from pyevidence.storage import versions

    return list(store._engine.select(versions.CHAIN_SQL, (tenant,)))


def test_a_large_put_many_writes_what_a_file_writes(cluster: Cluster, tmp_path: Path) -> None:
    """A put_many goes to the leader 36 records a statement (dqlite 1.11 takes 255 parameters
    at most), not one request a record. Across those statements, records that come again (the
    same ids, in two tenants) chain and hash as on a file, and a statement that fails after
    others ran leaves nothing written."""
    batch = [record(i % 50, tenant=f"team-{'ab'[i % 2]}", body=f"queue lag {i}") for i in range(110)]
    with (
        EvidenceStore(cluster.url()) as on_cluster,
        EvidenceStore(tmp_path / "f.db", engine="python") as on_file,
    ):
        engine = on_cluster._engine
        real = engine._execute
        inserts: list[str] = []

        def counted(sql: str, params: Any = ()) -> Any:
            if sql.startswith("INSERT"):
                inserts.append(sql)
            return real(sql, params)

        engine._execute = counted
        for store in (on_cluster, on_file):
            assert store.put_many(batch) == 110
        assert len(inserts) == 4  # 36 + 36 + 36 + 2
        for tenant in ("team-a", "team-b"):
            assert _chain(on_cluster, tenant) == _chain(on_file, tenant)
            assert len(_chain(on_cluster, tenant)) == 55

        def third_fails(sql: str, params: Any = ()) -> Any:
            if sql.startswith("INSERT"):
                inserts.append(sql)
                if len(inserts) == 7:
                    raise StoreError("injected failure of the third statement")
            return real(sql, params)

        engine._execute = third_fails
        with pytest.raises(StoreError, match="injected failure"):
            on_cluster.put_many([record(200 + i, body="disk full") for i in range(100)])
        engine._execute = real
        assert on_cluster.retrieve(tenant="team-a", revision="v1", query="disk", now=1).eligible_count == 25
        assert _chain(on_cluster, "team-a") == _chain(on_file, "team-a")
        assert on_cluster.verify(tenant="team-a").ok and on_cluster.verify(tenant="team-b").ok
        # the index check reads a page at a time through the cluster as through a file
        assert on_cluster.check_index() == on_file.check_index()
        assert on_file.check_index().ok and on_file.check_index().records_checked == 50  # ids 0-49, once each


def test_a_put_many_is_cut_into_short_statements() -> None:
    """36 records a statement (255 parameters), fewer when their bodies pass 64 KiB, one when a
    record alone does; in order, every record once."""
    from pyevidence.core import validation
    from pyevidence.storage.engines.cluster_engine import _statement_chunks

    def made(i: int, body_chars: int) -> Any:
        return validation.record(**record(i, body="x" * body_chars))

    def sizes(records: list[Any]) -> list[int]:
        chunks = list(_statement_chunks(records))
        assert [r for chunk in chunks for r in chunk] == records
        return [len(chunk) for chunk in chunks]

    assert sizes([made(i, 100) for i in range(80)]) == [36, 36, 8]
    assert sizes([made(i, 30_000) for i in range(5)]) == [2, 2, 1]
    assert sizes([made(0, 100), made(1, 200_000), made(2, 100), made(3, 100)]) == [1, 1, 2]
    assert sizes([]) == []


def test_leader_killed_again_and_again_under_load_loses_nothing(cluster: Cluster, tmp_path: Path) -> None:
    """Two client processes write (puts and put_manys) while the leader is SIGKILLed
    CLUSTER_KILLS times (make test: 4) and restarted. Then: every acknowledged write is on
    every node, a write whose outcome the client could not know is there whole or not at
    all, nothing failed is there, each tenant's chain verifies, and the cluster holds exactly
    what a file store given the same writes holds, hashes included."""
    import json
    import random

    kills = int(os.environ.get("CLUSTER_KILLS", "4"))
    url = cluster.url()
    EvidenceStore(url).close()  # the schema, before two writers race to create it
    stop = tmp_path / "stop"
    writers = {name: start_writer(url, name, stop, tmp_path) for name in ("w1", "w2")}
    rng = random.Random(19)
    try:
        for _ in range(kills):
            time.sleep(rng.uniform(0.3, 0.8))
            leader = cluster.leader()
            leader.kill()
            time.sleep(rng.uniform(0.2, 0.6))
            leader.start(join=[])
        time.sleep(0.5)
    finally:
        stop.touch()
        for process in writers.values():
            process.wait(timeout=60)
    for name, process in writers.items():
        assert process.returncode == 0, (tmp_path / f"{name}.err").read_text()

    file_path = tmp_path / "replayed.db"
    with EvidenceStore(url) as on_cluster, EvidenceStore(file_path, engine="python") as on_file:
        counts = {"ok": 0, "in_doubt": 0, "failed": 0}
        for name in writers:
            tenant = f"tenant-{name}"
            bodies = [row[8] for row in _chain(on_cluster, tenant)]
            assert len(bodies) == len(set(bodies)), "a write was stored twice"
            present = set(bodies)
            for line in (tmp_path / f"{name}.jsonl").read_text().splitlines():
                op = json.loads(line)
                counts[op["outcome"]] += 1
                there = [r["body"] in present for r in op["records"]]
                if op["outcome"] == "ok":
                    assert all(there), f"acknowledged write {name} op {op['op']} is missing"
                elif op["outcome"] == "failed":
                    assert not any(there), f"failed write {name} op {op['op']} is there: {op['error']}"
                else:
                    assert all(there) or not any(there), f"write {name} op {op['op']} is half there"
                if all(there):
                    on_file.put_many(op["records"])
            assert on_cluster.verify(tenant=tenant).ok
            assert _chain(on_cluster, tenant) == _chain(on_file, tenant)
            for revision in ("v1", "v2"):
                for now in (0, 20, 45):
                    asked = dict(tenant=tenant, revision=revision, query="queue lag disk worker", now=now)
                    assert on_cluster.retrieve(**asked, limit=10) == on_file.retrieve(**asked, limit=10)
        assert counts["ok"] > 50, counts
        expected = {name: _chain(on_cluster, f"tenant-{name}") for name in writers}
    for node in cluster.nodes:
        cluster.transfer(node)
        with EvidenceStore(url) as store:
            assert {name: _chain(store, f"tenant-{name}") for name in writers} == expected
    print(f"\n{kills} leader kills under load: {counts}")


def test_a_node_joins_through_any_seed_and_may_join_again(tmp_path: Path) -> None:
    """A dead seed is passed over for the next one; a restarted node given --join finds
    itself a voter already and changes nothing; both stop cleanly."""
    _needs_cluster()
    first = Node(1, f"127.0.0.1:{_free_port()}", tmp_path / "n1", tmp_path / "n1.log")
    second = Node(2, f"127.0.0.1:{_free_port()}", tmp_path / "n2", tmp_path / "n2.log")
    dead = f"127.0.0.1:{_free_port()}"
    two = Cluster([first, second])
    try:
        first.start(join=[])
        second.start(join=[dead, first.address])
        assert "node 2 is a voter of the cluster" in second.log.read_text()
        with EvidenceStore(two.url("joined")) as store:
            store.put(**record(1))
        assert second.stop() == 0
        second.start(join=[first.address])
        assert second.log.read_text().count("node 2 is a voter of the cluster") == 2
        assert "(restarted)" in second.log.read_text()
        two.transfer(second)  # it votes and can lead: it is a full member
        with EvidenceStore(two.url("joined")) as store:
            assert [
                h.record_id for h in store.retrieve(tenant="team-a", revision="v1", query="queue", now=1).hits
            ] == ["r1"]
    finally:
        two.stop_all()


def _members(cluster: Cluster) -> list[int]:
    """The ids of the cluster's members, as its leader lists them (through dqlite-dbapi's own
    client, not the code under test)."""
    from dqliteclient import ClusterClient, MemoryNodeStore

    async def ask() -> Any:
        client = ClusterClient(MemoryNodeStore([n.address for n in cluster.running()]))
        return await client.cluster_info()

    return sorted(n.node_id for n in asyncio.run(ask()))


def _listed(cluster: Cluster) -> dict[str, Any]:
    """What `pyevidence node --members` prints, asked through the first running node."""
    run = _node("--members", "--cluster", cluster.running()[0].address)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert run.stdout.endswith("\n") and run.stdout.count("\n") == 1  # one line
    listed: dict[str, Any] = json.loads(run.stdout)
    assert run.stdout == json.dumps(listed, sort_keys=True) + "\n"  # keys sorted, as the CLI's JSON
    return listed


def test_a_member_that_is_down_is_removed_and_its_address_taken_again(tmp_path: Path) -> None:
    """docs/cluster.md, "Removing a member": a member whose machine was gone kept its vote and its
    address for ever (no command removed it), so the cluster tolerated one failure fewer and no
    node could join at that address."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path)
    first, second, third = three.nodes
    try:
        three.start()
        url = three.url("removal")
        with EvidenceStore(url) as store:
            store.put(**record(1))
        for running in (third, three.leader()):  # a member that answers, the leader included
            run = _node("--remove", str(running.node_id), "--cluster", first.address)
            assert run.returncode == 1, run.stderr
            assert (
                f"cannot remove node {running.node_id}: node {running.node_id} still answers at "
                f"{running.address}, so it was not removed: stop it first (SIGTERM)" in run.stderr
            ), run.stderr
        assert _members(three) == [1, 2, 3]
        listed = _listed(three)
        assert listed == {
            "leader": three.leader().node_id,
            "members": [
                {"address": n.address, "answers": True, "id": n.node_id, "role": "voter"} for n in three.nodes
            ],
        }
        third.kill()  # its machine is gone
        assert [m["answers"] for m in _listed(three)["members"]] == [True, True, False]
        run = _node("--id", "4", "--address", third.address, "--data", str(tmp_path / "n4"), "--join",
                    first.address)  # fmt: skip
        assert run.returncode == 1, run.stderr
        advice = "if node 3 is down for good, remove it first: pyevidence node --remove 3 --cluster "
        assert advice + first.address in run.stderr, run.stderr
        shutil.rmtree(tmp_path / "n4")  # the refused start's state: node 4 starts afresh below
        run = _node("--remove", "3", "--cluster", third.address, "--cluster", second.address)
        assert run.returncode == 0, run.stderr
        assert run.stdout == (
            f"node 3 removed from the cluster; its members: 1 at {first.address} (voter), "
            f"2 at {second.address} (voter)\n"
        )
        assert _members(three) == [1, 2]
        run = _node("--remove", "3", "--cluster", first.address)  # asked again: nothing to do
        assert run.returncode == 0 and run.stdout == "", run.stderr
        assert "node 3 is not a member of the cluster, so nothing was removed; its members: 1 at" in (
            run.stderr
        )
        # Its address is free: a new node joins at it, under a new id, from an empty directory.
        fourth = Node(4, third.address, tmp_path / "n4", tmp_path / "n4.log")
        three.nodes.append(fourth)
        fourth.start(join=[first.address])
        assert _members(three) == [1, 2, 4]
        assert [(m["id"], m["address"], m["answers"]) for m in _listed(three)["members"]] == [
            (1, first.address, True), (2, second.address, True), (4, third.address, True)
        ]  # fmt: skip
        # Node 3 no longer votes: with node 2 down as well, nodes 1 and 4 are a majority of the
        # three voters (of four, with node 3 still a member, they would not be).
        assert second.stop() == 0
        with EvidenceStore(url) as store:
            store.put(**record(2))
            hits = store.retrieve(tenant="team-a", revision="v1", query="queue", now=1).hits
        assert [h.record_id for h in hits] == ["r1", "r2"]
    finally:
        three.stop_all()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--remove", "3"], "--remove needs --cluster HOST:PORT of a running member"),
        (["--remove", "0", "--cluster", "127.0.0.1:1"], "--remove must be a member's id, a positive integer"),
        (["--remove", "3", "--remove", "4", "--cluster", "127.0.0.1:1"], "--remove is given twice"),
        (["--remove", "3", "--cluster", "nonsense"], "--cluster must be HOST:PORT"),
        (["--remove", "3", "--cluster", "127.0.0.1:1", "--id", "2"], "--remove runs no node and takes only"),
        (["--remove", "3", "--cluster", "127.0.0.1:1", "--join", "127.0.0.1:2"], "takes only --cluster"),
        (["--remove", "3", "--cluster", "127.0.0.1:1", "--new-cluster"], "takes only --cluster"),
        (["--members"], "--members needs --cluster HOST:PORT of a running member"),
        (["--members", "--cluster", "127.0.0.1:1", "--data", "D"], "--members runs no node and takes only"),
        (["--members", "--remove", "3", "--cluster", "127.0.0.1:1"], "are two commands; give one"),
        (["--members", "--members", "--cluster", "127.0.0.1:1"], "--members is given twice; give it once"),
        (["--members", "--cluster", "host name:1"], "--cluster must be HOST:PORT, a host of letters, digits"),
        (["--remove", "3", "--cluster", "127.0.0.1:1", "--cluster", "a/b:1"], "got a/b:1"),
        (["--members", "--cluster", "h\u00f6st:1"], "--cluster must be HOST:PORT, a host of letters"),
        (
            ["--id", "2", "--address", "127.0.0.1:1", "--data", "D", "--cluster", "127.0.0.1:1"],
            "--cluster names the cluster for --members or --remove; a node joins a cluster with --join",
        ),
    ],
)
def test_a_listing_or_removal_it_cannot_act_on_is_a_usage_error(
    tmp_path: Path, args: list[str], says: str
) -> None:
    run = _node(*[str(tmp_path / "D") if a == "D" else a for a in args])
    assert run.returncode == 2 and says in run.stderr, run.stderr
    assert run.stdout == "" and not (tmp_path / "D").exists()


def test_a_removal_stops_on_sigterm_and_says_it_is_unconfirmed() -> None:
    """No member answers (a port nothing listens on): it keeps trying, as a join does, until a
    stop signal, which ends it at once with nothing claimed."""
    program = _node_program()
    if program is None:
        _needs_cluster()
    env = {**os.environ, "PYEVIDENCE_NODE": str(program)}
    seed = f"127.0.0.1:{_free_port()}"
    removal = ["node", "--remove", "3", "--cluster", seed]
    process = subprocess.Popen(
        [sys.executable, "-m", "pyevidence", *removal], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    try:
        time.sleep(1.5)  # several attempts, each refused at once
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 1 and out == ""
    assert (
        f"stopped (SIGTERM; last: cannot connect to {seed}: Connection refused) before node 3's removal was "
        "confirmed; run the command again" in err
    ), err


def _remove_limited(node_id: int, seed: str, files: int) -> subprocess.CompletedProcess[str]:
    """--remove run with at most `files` file descriptors open (RLIMIT_NOFILE)."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    return subprocess.run(
        [str(_node_program()), "--remove", str(node_id), "--cluster", seed], capture_output=True, text=True,
        timeout=30, preexec_fn=limit,
    )  # fmt: skip


def test_a_member_that_may_still_run_is_not_removed(tmp_path: Path) -> None:
    """The check that the member is down failed open: any failure to get its answer counted as
    down. A running member was removed when this machine had no file descriptor left for the
    check (the cluster then lost its leader), and one that took the connection and never replied
    (paused, or no dqlite node) after the 60 s of the reply's wait. Only a refused, unreachable
    or closed connection counts as down now; anything else is "cannot tell", and refused."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path)
    first, second, third = three.nodes
    try:
        three.start()
        target = second if three.leader() is third else third  # the leader needs no check
        # stdin, stdout, stderr, the signalfd, the connection to the leader: none left for the check.
        run = _remove_limited(target.node_id, first.address, files=5)
        assert run.returncode == 1, run.stderr
        assert (
            f"cannot remove node {target.node_id}: cannot tell whether node {target.node_id} at "
            f"{target.address} is down: cannot connect to {target.address}: Too many open files; nothing "
            "was removed" in run.stderr
        ), run.stderr
        assert _members(three) == [1, 2, 3]
        third.kill()
        with socket.socket() as silent:  # at node 3's address: takes connections, never replies
            silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            silent.bind(("127.0.0.1", int(third.address.rsplit(":", 1)[1])))
            silent.listen(64)  # never accepted: the kernel completes the connections, no one answers
            started = time.monotonic()
            run = _node("--remove", "3", "--cluster", first.address)
            took = time.monotonic() - started
        assert run.returncode == 1, run.stderr
        assert (
            f"cannot remove node 3: cannot tell whether node 3 at {third.address} is down: {third.address} "
            "took the connection but sent no reply within 5 s" in run.stderr
        ), run.stderr
        assert run.stderr.rstrip().endswith("; nothing was removed"), run.stderr
        assert took < 20, took  # the check's 5 s, not the 60 s of a commit's wait
        assert _members(three) == [1, 2, 3]
        run = _node("--remove", "3", "--cluster", first.address)  # the address refuses now: down
        assert run.returncode == 0 and run.stdout.startswith("node 3 removed from the cluster"), run.stderr
        assert _members(three) == [1, 2]
    finally:
        three.stop_all()


def test_a_voter_is_not_removed_when_the_voters_left_that_answer_are_no_majority(tmp_path: Path) -> None:
    """The guard behind the check of the member itself: the other voters that answer (the leader
    counts) must be a majority of the voters left. With a leader elected and the member really
    down that always holds, so it is seen here in the window where a leader that lost both its
    followers still leads: 300 ms of latency, so 4.5 s before it notices."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path, latency_ms="300")
    try:
        three.start()
        leader = three.leader()
        down, other = (n for n in three.nodes if n is not leader)
        other.kill()
        down.kill()
        started = time.monotonic()
        run = _remove_limited(down.node_id, leader.address, files=1024)
        assert time.monotonic() - started < 3, run.stderr  # well inside the leader's last 4.5 s
        assert run.returncode == 1, run.stderr
        assert (
            f"cannot remove node {down.node_id}: only 1 of the 2 voters that would remain without node "
            f"{down.node_id} answers from this machine, not a majority (not answering: node {other.node_id} "
            f"(cannot connect to {other.address}: Connection refused)); removing node {down.node_id} could "
            "leave the cluster without a quorum, so nothing was removed" in run.stderr
        ), run.stderr
    finally:
        three.stop_all()


def wal_pages_written(side: Any, write: Callable[[], object]) -> int:
    """The pages write() adds to a file store's WAL, read through side (a second connection
    to the file): what a cluster's leader ships for the same write, in one Raft entry."""
    side.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    write()
    return int(side.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])


def _wal_pages_of_one_write(path: Path, records: list[dict[str, Any]]) -> int:
    """The pages a put_many of records writes into a new file store."""
    import sqlite3
    from contextlib import closing

    with EvidenceStore(path) as store, closing(sqlite3.connect(path)) as side:
        store.put(**record(0))
        return wal_pages_written(side, lambda: store.put_many(records))


def test_large_writes_commit_at_the_documented_latency(tmp_path: Path) -> None:
    """docs/cluster.md tells users to run nodes with --latency-ms 50 on loopback. Three put_many
    calls in a row, each over 10 MB of pages (one Raft entry), commit there and come back
    acknowledged, not in doubt. (With --latency-ms 5, the second and third came back in doubt:
    a node busy with such a write missed the 75 ms election timeout.)"""
    _needs_cluster()
    words = [f"w{n:05d}" for n in range(20_000)]

    def batch(round_: int) -> list[dict[str, Any]]:
        return [
            record(
                i,
                record_id=f"r{round_}-{i}",
                body=" ".join(words[(i * 7919 + k * 104_729) % 20_000] for k in range(7_000)),
            )
            for i in range(200)
        ]

    pages = _wal_pages_of_one_write(tmp_path / "file.db", batch(0))
    assert pages * 4096 > 10_000_000, pages  # a large write, not a few pages
    three = Cluster.of_three(tmp_path, latency_ms="50")
    try:
        three.start()
        with EvidenceStore(three.url("large")) as store:
            for round_ in range(3):
                store.put_many(batch(round_))  # StoreError("... may or may not ...") if the leader changed
            found = store.retrieve(tenant="team-a", revision="v1", query="w00000", now=1)
            assert found.eligible_count == 600
            assert store.verify(tenant="team-a").ok
    finally:
        three.stop_all()


def test_an_export_reads_a_cluster_a_page_at_a_time_as_it_reads_a_file(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "_PAGE", 2)
    records = [record(i, tenant="export-a") for i in range(5)] + [record(1, tenant="export-a", body="again")]
    exports = []
    for where in (cluster.url(), tmp_path / "file.db"):
        with EvidenceStore(where) as store:
            store.put_many(records)
            store.forget(tenant="export-a", record_id="r3")
            one, history = io.StringIO(), io.StringIO()
            bulk.export_jsonl(store, one, tenant="export-a")
            bulk.export_jsonl(store, history, tenant="export-a", history=True)
            every = io.StringIO()
            reports = bulk.export_all_jsonl(store, every)
            assert "export-a" in [report.tenant for report in reports]
            assert one.getvalue() in every.getvalue()
            exports.append((one.getvalue(), history.getvalue()))
    assert exports[0] == exports[1]
    assert exports[0][0].count("\n") == 4


def test_a_cluster_export_lets_writes_in_while_it_writes_its_lines(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export's read transaction ends before its lines are written, where a cluster's open
    read transaction keeps every writer out ('database is locked' after the busy timeout):
    a slow reader of the output would stop the cluster's writes. The writes made meanwhile
    are not in the export, on a cluster as on a file."""
    monkeypatch.setattr(bulk, "_PAGE", 2)
    for where in (cluster.url(), tmp_path / "file.db"):
        with EvidenceStore(where) as store, EvidenceStore(where) as other:
            store.put_many([record(i, tenant="export-w") for i in range(5)])
            before = io.StringIO()
            bulk.export_all_jsonl(store, before)

            class WritesAtFirstLine(io.StringIO):
                def write(self, text: str) -> int:
                    if not self.tell():
                        other.put(**record(9, tenant="export-w", body="written meanwhile"))
                    return super().write(text)

            out = WritesAtFirstLine()
            bulk.export_all_jsonl(store, out)
            assert out.getvalue() == before.getvalue()
            assert other.history(tenant="export-w", record_id="r9")[-1].body == "written meanwhile"


def test_the_command_line_takes_a_cluster_url(cluster: Cluster) -> None:
    url = cluster.url()
    cli = [sys.executable, "-m", "pyevidence"]
    put = subprocess.run(
        [*cli, "put", "--db", url, "--tenant", "team-a", "--record-id", "q", "--revision", "v1",
         "--kind", "runbook", "--body", "queue lag: restart the worker", "--source", "rb://q",
         "--expires-at", "10"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert put.returncode == 0, put.stderr
    found = subprocess.run(
        [*cli, "retrieve", "--db", url, "--tenant", "team-a", "--revision", "v1", "--query", "queue lag",
         "--now", "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert '"record_id": "q"' in found.stdout
    verified = subprocess.run(
        [*cli, "verify", "--db", url, "--tenant", "team-a"], capture_output=True, text=True, timeout=60
    )
    assert verified.returncode == 0, verified.stderr
    assert '"ok": true' in verified.stdout
    sql = subprocess.run([*cli, "sql", url, "SELECT 1"], capture_output=True, text=True, timeout=60)
    assert sql.returncode == 2
    assert "pyevidence sql runs on a database file, not on a cluster" in sql.stderr


def test_vectors_rank_on_a_cluster_as_on_a_file(cluster: Cluster, tmp_path: Path) -> None:
    """Puts with an embedder store each version's vector in the same transaction; vector and
    hybrid ranking give what the python engine gives on a file."""
    import hashlib

    from pyevidence import Embedder, HybridScorer, VectorScorer

    def hashed(text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [(digest[i] - 127.5) / 128 for i in range(8)]

    toy = Embedder("toy-sha256", hashed)
    bodies = ["queue lag on the consumer", "disk full on the db host", "restart the queue worker"]
    with (
        EvidenceStore(cluster.url(), embedder=toy) as on_cluster,
        EvidenceStore(tmp_path / "v.db", engine="python", embedder=toy) as on_file,
    ):
        for store in (on_cluster, on_file):
            store.put_many([record(i, body=body) for i, body in enumerate(bodies)])
            store.put(**record(1, body="disk full again"))
        for scorer in (VectorScorer(toy, min_similarity=-1.0), HybridScorer(toy, min_similarity=-1.0)):
            asked = dict(tenant="team-a", revision="v1", query="queue lag", now=1, scorer=scorer)
            assert on_cluster.retrieve(**asked) == on_file.retrieve(**asked)
            assert on_cluster.retrieve(**asked).hits


def test_a_foreign_database_is_refused_and_no_connection_is_left(cluster: Cluster) -> None:
    import threading

    import dqlitedbapi

    from pyevidence.core.errors import SchemaError

    url = cluster.url()
    conn = dqlitedbapi.connect(cluster.addresses[0], database=url.rsplit("/", 1)[1])
    conn.cursor().execute("CREATE TABLE someone_elses (x)")
    conn.close()

    def loops() -> int:
        return sum(t.name.startswith("dqlitedbapi-") for t in threading.enumerate())

    before = loops()
    with pytest.raises(SchemaError, match="is not a pyevidence database: it already holds someone_elses"):
        EvidenceStore(url)
    assert loops() == before


@pytest.mark.parametrize(
    ("failing", "code", "commits_first", "outcome"),
    [
        ("INSERT", None, False, "retried"),  # the connection broke before COMMIT: nothing committed
        ("COMMIT", 10250, False, "retried"),  # "not leader": refused before replicating anything
        ("COMMIT", 10506, True, "in doubt"),  # leadership lost while replicating: it did commit here
        ("COMMIT", None, True, "in doubt"),  # the connection broke during COMMIT
        ("COMMIT", None, False, "in doubt"),  # ... and here it did not commit: nobody can tell
    ],
)
def test_a_write_is_retried_only_when_it_certainly_did_not_commit(
    cluster: Cluster, failing: str, code: int | None, commits_first: bool, outcome: str
) -> None:
    import dqlitedbapi

    with EvidenceStore(cluster.url()) as store:
        engine = store._engine
        real = engine._execute
        armed = [True]

        def execute(sql: str, params: Any = ()) -> Any:
            if armed[0] and sql.startswith(failing):
                armed[0] = False
                if commits_first:
                    real(sql, params)
                raise engine._classified(dqlitedbapi.OperationalError("injected failure", code=code))
            return real(sql, params)

        engine._execute = execute
        if outcome == "retried":
            store.put(**record(1))
        else:
            with pytest.raises(
                StoreError, match=r"^put may or may not have been written: .*injected failure"
            ) as raised:
                store.put(**record(1))
            # Only a lost leadership points at --latency-ms: a broken connection is another matter.
            assert ("larger --latency-ms" in str(raised.value)) == (code == 10506)
        engine._execute = real
        assert not armed[0]
        stored = len(store.history(tenant="team-a", record_id="r1"))
        assert stored == (1 if outcome == "retried" or commits_first else 0)


def test_an_editable_install_finds_the_node_program_of_its_checkout() -> None:
    """It looked in pyevidence/build/, where nothing is ever built, and said "not built"."""
    from pyevidence.interfaces import cluster_node

    assert cluster_node.BUILT == ROOT / "build" / "evidence_node"


def test_a_mistyped_cluster_database_is_not_created_by_a_command_that_reads(tmp_path: Path) -> None:
    """retrieve, forget and check created the database a typo named, and answered from it: an
    empty result that read as "no evidence found"."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path)
    try:
        three.start()
        with EvidenceStore(three.url("real")) as store:
            store.put(**record(1))
        typo = three.url("reel")
        for args in (
            ["retrieve", "--tenant", "team-a", "--revision", "v1", "--query", "queue", "--now", "0"],
            ["forget", "--tenant", "team-a", "--record-id", "r1"],
            ["check"],
            ["verify", "--tenant", "team-a"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "pyevidence", *args, "--db", typo],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 1, done.stderr
            assert done.stderr == (
                f"pyevidence: error: no database 'reel' on the cluster at {typo}; create one with "
                "'pyevidence put' or 'pyevidence import' (or check the name)\n"
            )
        # A dry run of an import checks against the new database without making it.
        lines = "".join(json.dumps(record(i)) + "\n" for i in range(3))
        (tmp_path / "records.jsonl").write_text(lines)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pyevidence",
                "import",
                "--db",
                typo,
                "--dry-run",
                str(tmp_path / "records.jsonl"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["import"] == {"dry_run": True, "read": 3, "unchanged": 0, "written": 0}
        with pytest.raises(SchemaError, match="has no pyevidence schema"):
            EvidenceStore(typo, read_only=True)
    finally:
        three.stop_all()


def test_a_nul_is_refused_as_bad_input_on_a_cluster_and_reads_still_answer(tmp_path: Path) -> None:
    """dqlite's text ends at a NUL: its driver refused such text with advice about BLOB columns,
    a store error (exit 1), where a file store keeps it."""
    _needs_cluster()
    three = Cluster.of_three(tmp_path)
    try:
        three.start()
        with EvidenceStore(three.url("nul")) as store:
            store.put(**record(1))
            with pytest.raises(ValidationError) as refused:
                store.put(**record(2, body="queue\0lag"))
            assert refused.value.field == "body"
            assert str(refused.value).startswith("body: holds a NUL character, which a cluster cannot store")
            with pytest.raises(ValidationError) as refused:
                store.put_many([record(3), record(4, source="s\0")])
            assert refused.value.field == "records[1].source"
            assert store.history(tenant="team-a", record_id="r3") == ()  # nothing was written
            spaced = store.retrieve(tenant="team-a", revision="v1", query="queue lag", now=0)
            nul = store.retrieve(tenant="team-a", revision="v1", query="queue\0lag", now=0)
            assert nul.to_dict() == spaced.to_dict() and len(nul.hits) == 1
            assert store.history(tenant="team-a", record_id="r1\0") == ()
            assert store.forget(tenant="team-a", record_id="r1\0") is False
            assert store.retrieve(tenant="team-a\0", revision="v1", query="queue", now=0).eligible_count == 0
    finally:
        three.stop_all()
