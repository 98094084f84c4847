"""pyevidence mcp end to end: the MCP SDK's own stdio client against the server in a real subprocess.

Skipped only where the mcp extra is missing and PYEVIDENCE_REQUIRE_MCP is not 1 (make test sets
it, and then a missing extra fails the run instead).
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import mcp_installed
from hypothesis import given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceStore, ValidationError, bulk, native_available, tool

if not mcp_installed():
    pytest.skip("the mcp extra is not installed (pip install -e '.[mcp]')", allow_module_level=True)

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

READ_TOOLS = {"retrieve_evidence", "get_cited_version", "record_history"}
WRITE_TOOLS = {"put_evidence", "forget_evidence"}
FAR = 10**12  # an expiry the wall clock does not reach


def populate(path: Path, engine: str) -> None:
    """team-a at v1 (the server's scope), team-a at v2, and team-b: all three about queue lag."""
    with EvidenceStore(path, engine=engine) as store:
        put = dict(kind="runbook", expires_at=FAR)
        store.put(tenant="team-a", record_id="queue", revision="v1", body="queue lag: restart the consumer",
                  source="runbook://queue/v1", **put)  # fmt: skip
        store.put(tenant="team-a", record_id="queue", revision="v1", body="queue lag: restart the consumer, "
                  "then watch the lag", source="runbook://queue/v1", **put)  # fmt: skip
        store.put(tenant="team-a", record_id="queue-v2", revision="v2", body="queue lag in v2: scale out",
                  source="runbook://queue/v2", **put)  # fmt: skip
        store.put(tenant="team-b", record_id="queue", revision="v1", body="queue lag secret of team b",
                  source="runbook://b/queue", **put)  # fmt: skip
        store.put(tenant="team-a", record_id="old", revision="v1", body="queue lag note that expired",
                  source="note://old", kind="working", expires_at=1)  # fmt: skip


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@asynccontextmanager
async def connect(
    db: Path, *extra: str, engine: str = "auto", errlog: Any = None
) -> AsyncIterator[ClientSession]:
    args = ["-m", "pyevidence", "mcp", "--db", str(db), "--engine", engine, "--tenant", "team-a"]
    args += ["--revision", "v1", *extra]
    params = StdioServerParameters(command=sys.executable, args=args)
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> tuple[bool, str, Any]:
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.is_error, result.content[0].text, result.structured_content


def test_tools_are_listed_with_pyevidence_tools_schemas_and_wording(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")

    async def check() -> None:
        async with connect(db) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listed) == READ_TOOLS
        for spec in tool.READ_TOOLS:
            served = listed[spec["name"]]
            assert served.description == spec["description"]
            assert served.input_schema == spec["input_schema"]
            assert served.input_schema["additionalProperties"] is False
            assert not {"tenant", "revision"} & set(served.input_schema["properties"])

    run(check)


def test_each_read_tool_answers_from_the_bound_tenant_and_revision(tmp_path: Path, engine: str) -> None:
    db = tmp_path / "e.db"
    populate(db, engine)

    async def check() -> None:
        async with connect(db, engine=engine) as session:
            error, text, found = await call(session, "retrieve_evidence", {"query": "queue lag", "limit": 10})
            assert not error
            assert [hit["citation"] for hit in found["hits"]] == ["runbook://queue/v1"]
            assert found["eligible_count"] == 1  # team-b, v2 and the expired note were never in scope
            hit = found["hits"][0]
            assert "runbook://queue/v1" in text and hit["version"] in text

            cited = {"record_id": hit["record_id"], "version": hit["version"]}
            error, text, resolved = await call(session, "get_cited_version", cited)
            assert not error and resolved["status"] == "found"
            assert (
                resolved["version"]["body"]
                == hit["body"]
                == "queue lag: restart the consumer, then watch the lag"
            )
            assert resolved["version"]["expired"] is False

            error, text, history = await call(session, "record_history", {"record_id": "queue"})
            assert not error and [v["seq"] for v in history["versions"]] == [1, 2]
            assert history["versions"][-1]["version"] == hit["version"]

            error, text, empty = await call(session, "retrieve_evidence", {"query": "disk full"})
            assert not error and empty == {"hits": [], "eligible_count": 1, "note": tool.NO_EVIDENCE}
            why = f"1 record(s) in scope, none sharing a word with the query ({tool.WORD_RULE})"
            assert text == f"{tool.NO_EVIDENCE} ({why}.)"

    run(check)


def test_no_argument_reaches_another_tenant_or_revision(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")
    with EvidenceStore(db, engine="python") as store:
        team_b = store.history(tenant="team-b", record_id="queue")[0]
        other_revision = store.history(tenant="team-a", record_id="queue-v2")[0]
    before = digest(db)

    async def check() -> None:
        async with connect(db) as session:
            for name, arguments in [
                ("retrieve_evidence", {"query": "queue lag", "tenant": "team-b"}),
                ("retrieve_evidence", {"query": "queue lag", "revision": "v2"}),
                ("retrieve_evidence", {"query": "queue lag", "scope": {"tenant": "team-b"}}),
                ("get_cited_version", {"record_id": "queue", "version": team_b.version, "tenant": "team-b"}),
                ("record_history", {"record_id": "queue", "tenant": "team-b"}),
                ("record_history", {"record_id": "queue-v2", "revision": "v2"}),
            ]:
                error, text, found = await call(session, name, arguments)
                assert error, (name, arguments)
                assert text.startswith("error: arguments: unknown field(s) ")
                assert found["field"] == "arguments"
            # A version of team-b's record, and one of team-a's v2: not found from here.
            for record_id, version in [("queue", team_b.version), ("queue-v2", other_revision.version)]:
                error, text, found = await call(
                    session, "get_cited_version", {"record_id": record_id, "version": version}
                )
                assert not error and found == {
                    "status": "unknown",
                    "version": None,
                    "note": tool.NOT_IN_SCOPE,
                }
            error, _, found = await call(session, "record_history", {"record_id": "queue-v2"})
            assert not error and found == {"record_id": "queue-v2", "versions": []}
            error, _, found = await call(session, "retrieve_evidence", {"query": "secret scale out"})
            assert not error and found["hits"] == []

    run(check)
    assert digest(db) == before


BAD_CALLS = [
    ("retrieve_evidence", {}, "error: arguments.query: is required"),
    ("retrieve_evidence", {"query": "  "}, "error: query: must not be empty or only whitespace"),
    (
        "retrieve_evidence",
        {"query": "queue", "limit": 11},
        "error: limit: must be between 1 and 10, got 11",
    ),
    (
        "retrieve_evidence",
        {"query": "queue", "limit": True},
        "error: limit: must be an integer, got bool",
    ),
    ("retrieve_evidence", {"query": 7}, "error: query: must be a string, got int"),
    ("get_cited_version", {"record_id": "queue", "version": "2"}, "error: version: must be a version"),
    ("put_evidence", {"record_id": "x", "kind": "runbook"}, "error: arguments.body: is required"),
    (
        "put_evidence",
        {"record_id": "x", "kind": "note", "body": "b", "source": "s", "expires_at": 5},
        "error: kind: must be one of working, incident, runbook",
    ),
    (
        "put_evidence",
        {"record_id": "x", "kind": "working", "body": "b", "source": "s", "expires_at": -1},
        "error: expires_at: must be between 0 and",
    ),
    ("forget_evidence", {"record_id": " "}, "error: record_id: must not be empty"),
    ("record_history", {"record_id": ""}, "error: record_id: must not be empty"),
    ("no_such_tool", {}, "error: name: no tool named 'no_such_tool' here"),
]


def test_bad_arguments_are_tool_errors_that_change_nothing(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")
    before = digest(db)

    async def check() -> None:
        async with connect(db, "--allow-writes") as session:
            for name, arguments, message in BAD_CALLS:
                error, text, found = await call(session, name, arguments)
                assert error and text.startswith(message), (name, arguments, text)
                assert found["error"] == text.removeprefix("error: ")
            # the session goes on
            assert not (await call(session, "retrieve_evidence", {"query": "queue"}))[0]

    run(check)
    assert digest(db) == before


def test_a_read_only_server_offers_no_write_tool_and_refuses_write_calls(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")
    before = digest(db)
    put = {"record_id": "new", "kind": "working", "body": "b", "source": "s", "expires_at": FAR}

    async def check() -> None:
        async with connect(db) as session:
            assert not WRITE_TOOLS & {t.name for t in (await session.list_tools()).tools}
            for name, arguments in [("put_evidence", put), ("forget_evidence", {"record_id": "queue"})]:
                error, text, _ = await call(session, name, arguments)
                assert error and text.startswith(f"error: name: no tool named '{name}' here")

    run(check)
    assert digest(db) == before


def test_write_tools_with_allow_writes_stay_in_scope(tmp_path: Path, engine: str) -> None:
    db = tmp_path / "e.db"
    populate(db, engine)
    put = {
        "record_id": "disk",
        "kind": "incident",
        "body": "disk full on db-3",
        "source": "inc://42",
        "expires_at": FAR,
    }

    async def check() -> None:
        async with connect(db, "--allow-writes", engine=engine) as session:
            assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS | WRITE_TOOLS
            error, _, stored = await call(session, "put_evidence", put)
            assert not error and stored["record_id"] == "disk"
            _, _, found = await call(session, "retrieve_evidence", {"query": "disk full"})
            assert [(h["citation"], h["version"]) for h in found["hits"]] == [("inc://42", stored["version"])]
            for refused, text in [
                ({**put, "tenant": "team-b"}, "error: arguments: unknown field(s) tenant"),
                ({**put, "revision": "v2"}, "error: arguments: unknown field(s) revision"),
                (
                    {**put, "record_id": "queue-v2"},
                    "error: record_id: 'queue-v2' has versions in another revision",
                ),
                ({**put, "kind": "rumour"}, "error: kind: must be one of working, incident, runbook"),
                ({**put, "expires_at": "soon"}, "error: expires_at: must be an integer, got str"),
            ]:
                error, message, _ = await call(session, "put_evidence", refused)
                assert error and message.startswith(text)
            error, message, _ = await call(session, "forget_evidence", {"record_id": "queue-v2"})
            assert error and message.startswith(
                "error: record_id: 'queue-v2' has versions in another revision"
            )
            error, _, forgot = await call(session, "forget_evidence", {"record_id": "disk"})
            assert not error and forgot == {"forgotten": True, "record_id": "disk"}
            _, _, found = await call(session, "retrieve_evidence", {"query": "disk full"})
            assert found["hits"] == []

    run(check)
    with EvidenceStore(db, engine=engine) as store:
        assert store.verify(tenant="team-a").ok and store.verify(tenant="team-b").ok
        assert [v.revision for v in store.history(tenant="team-a", record_id="queue-v2")] == ["v2"]
        assert len(store.history(tenant="team-b", record_id="queue")) == 1
        assert [v.operation for v in store.history(tenant="team-a", record_id="disk")] == ["put", "forget"]


def test_now_is_the_wall_clock_or_the_logical_time_given(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")
    with EvidenceStore(db, engine="python") as store:
        store.put(tenant="team-a", record_id="soon", revision="v1", kind="working", body="queue lag soon",
                  source="note://soon", expires_at=int(time.time()) + 3600)  # fmt: skip

    async def eligible(*extra: str) -> int:
        async with connect(db, *extra) as session:
            return int((await call(session, "retrieve_evidence", {"query": "queue"}))[2]["eligible_count"])

    async def check() -> None:
        assert await eligible() == 2  # wall clock: "old" (expires_at 1) has expired, "soon" has not
        assert await eligible("--clock", "wall") == 2
        assert await eligible("--clock", "logical", "--now", "0") == 3  # at 0 nothing has expired
        assert await eligible("--clock", "logical", "--now", str(FAR)) == 0  # at FAR everything has

    run(check)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--clock", "logical"], "now: is given with --clock logical, and only then"),
        (["--now", "5"], "now: is given with --clock logical, and only then"),
        (["--revision", " "], "revision: must not be empty or only whitespace"),
    ],
)
def test_bad_server_configuration_exits_2_before_serving(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")
    revision = [] if "--revision" in extra else ["--revision", "v1"]  # an option is given once
    args = ["--db", str(db), "--tenant", "team-a", *revision, *extra]
    done = subprocess.run([sys.executable, "-m", "pyevidence", "mcp", *args], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"pyevidence: error: {message}\n")


def test_a_missing_database_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    args = ["--db", str(db), "--tenant", "team-a", "--revision", "v1"]
    done = subprocess.run([sys.executable, "-m", "pyevidence", "mcp", *args], capture_output=True, text=True)
    assert done.returncode == 1 and f"no database at {db}" in done.stderr and not db.exists()


def test_a_scope_with_no_record_is_noted_when_the_server_starts(tmp_path: Path) -> None:
    """A mistyped --tenant served "no evidence found" to every query, and nothing said why."""
    db = tmp_path / "e.db"
    populate(db, "python")
    notes = {}
    for tenant in ("team-a", "team-A"):
        args = ["--db", str(db), "--tenant", tenant, "--revision", "v1"]
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", "mcp", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0
        notes[tenant] = done.stderr
    assert "note" not in notes["team-a"]
    assert notes["team-A"] == (
        "pyevidence mcp: note: this store holds no record of tenant 'team-A' in revision 'v1'; every "
        "query will find nothing until records are put there (check --tenant and --revision)\n"
    )


def slow_store(path: Path) -> str:
    """A store where one call takes a good part of a second on the python engine: the
    history of a record with 40,000 versions (a retrieve is no longer slow: the token
    index answers it in milliseconds). Returns that record's id."""
    with EvidenceStore(path, engine="python") as store:
        store.put_many(
            {"tenant": "team-a", "record_id": "busy", "revision": "v1", "kind": "working",
             "body": f"note {i}", "source": f"s://{i}", "expires_at": FAR}
            for i in range(40_000)
        )  # fmt: skip
        store.put(tenant="team-a", record_id="r00007", revision="v1", kind="runbook", body="queue",
                  source="s://7", expires_at=FAR)  # fmt: skip
    return "busy"


def test_the_server_survives_a_cancelled_call_and_a_client_gone_mid_call(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    busy = slow_store(db)
    errlog = (tmp_path / "server.log").open("w")

    async def check() -> None:
        async with connect(db, engine="python", errlog=errlog) as session:
            # A call the client gives up on (the SDK sends notifications/cancelled) ...
            with anyio.move_on_after(0.2) as scope:
                await session.call_tool("record_history", {"record_id": busy})
            assert scope.cancelled_caught, "the call finished before the client gave up: make it slower"
            # ... leaves the session answering.
            error, _, found = await call(session, "record_history", {"record_id": "r00007"})
            assert not error and len(found["versions"]) == 1
        # And a client that leaves while a call is running.
        async with (
            connect(db, engine="python", errlog=errlog) as session,
            anyio.create_task_group() as tasks,
        ):
            done = anyio.Event()

            async def slow_call() -> None:
                await session.call_tool("record_history", {"record_id": busy})
                done.set()

            tasks.start_soon(slow_call)
            await anyio.sleep(0.2)
            assert not done.is_set(), "the call finished before the client left: make it slower"
            tasks.cancel_scope.cancel()

    run(check)
    errlog.close()
    assert "Traceback" not in (tmp_path / "server.log").read_text()
    with EvidenceStore(db, engine="native") as store:
        assert store.verify(tenant="team-a").ok


def test_the_server_process_exits_cleanly_when_stdin_closes_mid_call(tmp_path: Path) -> None:
    """The same leave-mid-call, watched from outside: the call still running is answered, then
    the process ends on its own, exit status 0."""
    db = tmp_path / "e.db"
    busy = slow_store(db)
    args = ["--db", str(db), "--engine", "python", "--tenant", "team-a", "--revision", "v1"]
    server = subprocess.Popen(
        [sys.executable, "-m", "pyevidence", "mcp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
         "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "record_history", "arguments": {"record_id": busy}}},
    ]  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1  # initialized: the call is under way
    time.sleep(0.2)
    server.stdin.close()
    stop = threading.Timer(60, server.kill)  # a bound on the reads below, which cannot time out
    stop.start()
    try:
        stdout = server.stdout.read()  # to its end: the reply is larger than a pipe holds
        stderr = server.stderr.read() if server.stderr else b""
        server.wait()
    finally:
        stop.cancel()
        server.kill()
    assert server.returncode == 0 and b"Traceback" not in stderr, stderr.decode()
    reply = json.loads(stdout)
    assert reply["id"] == 2 and len(reply["result"]["structuredContent"]["versions"]) == 40_000
    with EvidenceStore(db, engine="native") as store:
        assert store.verify(tenant="team-a").ok


def test_without_the_mcp_extra_the_command_says_how_to_get_it(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    populate(db, "python")
    hide_mcp = (
        "import sys; sys.modules['mcp'] = None; from pyevidence.interfaces.cli import main; sys.exit(main())"
    )
    args = ["mcp", "--db", str(db), "--tenant", "team-a", "--revision", "v1"]
    done = subprocess.run(
        [sys.executable, "-c", hide_mcp, *args], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr == "pyevidence: error: pyevidence mcp needs the MCP SDK 2.x, the mcp extra: "
        "in the pyevidence checkout, pip install '.[mcp]'\n"
    )


ARGUMENT_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.sampled_from(["queue", "runbook", "incident", " ", "1-" + "0" * 64]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


@pytest.mark.parametrize("engine_name", ["python", "native"])
def test_what_a_tool_accepts_its_published_schema_accepts(engine_name: str, tmp_path: Path) -> None:
    """The schemas a host shows the model and run_tool's own checks are two statements of one
    rule: run_tool may be stricter (whitespace-only text, the store's limits), never looser.
    A refused call changes nothing."""
    import jsonschema

    if engine_name == "native" and not native_available():
        pytest.skip("native engine not built in this installation")
    db = tmp_path / "e.db"
    populate(db, engine_name)
    specs = (*tool.READ_TOOLS, *tool.WRITE_TOOLS)
    with EvidenceStore(db, engine=engine_name) as store:
        scoped = store.scoped(tenant="team-a")

        versions = [v.version for v in scoped.history(record_id="queue")] + ["1-" + "0" * 64]
        valid = {
            "query": st.sampled_from(["queue lag", "disk", "restart"]),
            "limit": st.integers(min_value=1, max_value=10),
            "record_id": st.sampled_from(["queue", "queue-v2", "old", "new"]),
            "version": st.sampled_from(versions),
            "kind": st.sampled_from(["working", "incident", "runbook"]),
            "body": st.text(min_size=1, max_size=6),
            "source": st.text(min_size=1, max_size=6),
            "expires_at": st.integers(min_value=0, max_value=2**63 - 1),
        }
        accepted = []

        @settings(max_examples=300)
        @given(spec=st.sampled_from(specs), data=st.data())
        def check(spec: dict[str, Any], data: st.DataObject) -> None:
            schema = spec["input_schema"]
            mostly_valid = {name: mostly(valid[name]) for name in schema["properties"]}
            required = {name: mostly_valid[name] for name in schema["required"]}
            optional = {name: mostly_valid[name] for name in schema["properties"] if name not in required}
            arguments = data.draw(st.fixed_dictionaries(required, optional=optional))
            if arguments and data.draw(st.integers(0, 9)) == 0:
                del arguments[data.draw(st.sampled_from(sorted(arguments)))]
            arguments |= data.draw(
                st.dictionaries(
                    st.sampled_from(["tenant", "revision", "now", "x"]), ARGUMENT_VALUES, max_size=1
                )
                | st.just({})
            )
            before = export(store)
            try:
                tool.run_tool(spec["name"], scoped, arguments, revision="v1", now=0, allow_writes=True)
            except ValidationError:
                assert export(store) == before
                return
            accepted.append(spec["name"])
            jsonschema.validate(arguments, spec["input_schema"], cls=jsonschema.Draft202012Validator)

        check()
    assert len(set(accepted)) == len(specs), "every tool accepted some calls: the property was exercised"


def mostly(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``strategy`` nine times in ten, any JSON-ish value otherwise."""
    return st.integers(0, 9).flatmap(lambda pick: strategy if pick else ARGUMENT_VALUES)


def export(store: EvidenceStore) -> str:
    out = io.StringIO()
    for tenant in ("team-a", "team-b"):
        bulk.export_jsonl(store, out, tenant=tenant, history=True)
    return out.getvalue()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.text(min_size=1), st.text(min_size=1), st.text(min_size=1)), min_size=1, max_size=3)
)
def test_the_text_rendering_gives_each_hit_one_line_with_every_character_visible(
    hits: list[tuple[str, str, str]],
) -> None:
    """A body holding a newline added lines that read as hits of their own, and a right-to-left
    override reversed the text a host showed: stored text is someone else's."""
    from pyevidence.core.visible import INVISIBLE
    from pyevidence.interfaces.mcp_server import render

    result = {
        "eligible_count": len(hits),
        "hits": [
            {"citation": citation, "record_id": record_id, "version": "1-ab", "body": body}
            for citation, record_id, body in hits
        ],
    }
    text = render("retrieve_evidence", result)
    lines = text.splitlines()
    assert len(lines) == 1 + len(hits) and all(line.startswith("- ") for line in lines[1:])
    assert INVISIBLE.search(text) is None and "\r" not in text
    version = {"source": hits[0][0], "version": "1-ab", "body": hits[0][2], "expired": False}
    found = render("get_cited_version", {"status": "found", "version": version})
    assert len(found.splitlines()) == 1 and INVISIBLE.search(found) is None


def test_a_put_that_is_expired_already_says_so(tmp_path: Path) -> None:
    """The model is not told the server's clock: a put it made with a past expiry was "stored",
    and never found."""
    with EvidenceStore(tmp_path / "e.db") as store:
        scoped = store.scoped(tenant="team-a")
        arguments = {"record_id": "r", "kind": "working", "body": "b", "source": "s"}
        late = tool.run_tool("put_evidence", scoped, {**arguments, "expires_at": 100}, revision="v1",
                             now=100, allow_writes=True)  # fmt: skip
        assert late["stored"] and late["expired"] is True
        assert late["note"] == (
            "stored, but expires_at 100 is not after the server's time now (100), so retrieve_evidence "
            "will not find it; put it again with a later expires_at"
        )
        fine = tool.run_tool("put_evidence", scoped, {**arguments, "expires_at": 101}, revision="v1",
                             now=100, allow_writes=True)  # fmt: skip
        assert "expired" not in fine and "note" not in fine
        cited = tool.run_tool("get_cited_version", scoped, {"record_id": "r", "version": late["version"]},
                              revision="v1", now=100)  # fmt: skip
        from pyevidence.interfaces.mcp_server import render

        assert render("get_cited_version", cited).startswith("found: s version 1-")
        assert "(expired: not current evidence)" in render("get_cited_version", cited)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12), st.text(max_size=12))
def test_two_bodies_render_alike_only_when_they_are_alike(first: str, second: str) -> None:
    """A body holding the two characters \\n read as one holding a line break: a hit could be
    forged in a single line. one_line must tell every text apart."""
    from pyevidence.core.visible import one_line

    assert (one_line(first) == one_line(second)) == (first == second)
