"""pyevidence mcp's wire: every request line the client sends gets exactly one reply.

The class of bug: a line the MCP SDK's own reader could not parse (a lone surrogate escape,
which JSON.stringify writes for half of a cut emoji; bytes that are not UTF-8; text that is
not JSON) was dropped without a reply, and the client waited for ever.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import mcp_installed
from hypothesis import given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceStore

if not mcp_installed():
    pytest.skip("the mcp extra is not installed (pip install -e '.[mcp]')", allow_module_level=True)

import mcp_types

from pyevidence.interfaces.mcp_wire import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Refusal, read_message

FAR = 10**12
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
              "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def retrieve(request_id: Any, query: str) -> str:
    """A tools/call line as JSON.stringify writes it: non-ASCII escaped, lone surrogates too."""
    params = {"name": "retrieve_evidence", "arguments": {"query": query}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _line_within(stream: Any, seconds: float) -> bytes:
    """The next line of ``stream``, or a failure naming the wait instead of a hang."""
    ready, _, _ = select.select([stream], [], [], seconds)
    assert ready, f"no reply within {seconds} s"
    return bytes(stream.readline())


def _server(tmp_path: Path) -> list[str]:
    """The command of `pyevidence mcp` over a new store of one record of team-a, revision v1."""
    db = tmp_path / "e.db"
    with EvidenceStore(db, engine="python") as store:
        store.put(tenant="team-a", record_id="queue", revision="v1", kind="runbook", expires_at=FAR,
                  source="runbook://queue", body="queue lag: restart the consumer 🙂")  # fmt: skip
    return [
        sys.executable,
        "-m",
        "pyevidence",
        "mcp",
        "--db",
        str(db),
        "--tenant",
        "team-a",
        "--revision",
        "v1",
    ]


def _serve(tmp_path: Path) -> subprocess.Popen[bytes]:
    """`pyevidence mcp` over a new store of one record of team-a, revision v1, on pipes."""
    return subprocess.Popen(
        _server(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # no buffer beside the pipe's: select() sees every line not yet read
    )


def session(
    tmp_path: Path, lines: list[bytes], replies: int, handshake: bool = True
) -> tuple[dict[Any, dict[str, Any]], list[dict[str, Any]], str]:
    """Send ``lines`` after the handshake, read ``replies`` replies (the handshake's too), then
    close stdin: the replies by id, those with no id, and stderr."""
    first = [json.dumps(INITIALIZE).encode(), json.dumps(INITIALIZED).encode()] if handshake else []
    server = _serve(tmp_path)
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        server.stdin.write(b"\n".join(first + lines) + b"\n")
        server.stdin.flush()
        got = [json.loads(_line_within(server.stdout, 60)) for _ in range(replies)]
        server.stdin.close()
        assert server.wait(timeout=60) == 0
        assert server.stdout.read() == b"", "more replies than expected"
        stderr = server.stderr.read().decode()
    finally:
        server.kill()
    by_id = {reply["id"]: reply for reply in got if reply["id"] is not None}
    anonymous = [reply for reply in got if reply["id"] is None]
    assert len(by_id) + len(anonymous) == len(got), f"two replies share an id: {got}"
    return by_id, anonymous, stderr


def test_every_request_gets_one_reply_whatever_its_line_holds(tmp_path: Path) -> None:
    latin1 = retrieve("four", "café").encode().replace(b"\\u00e9", b"\xe9")
    lines = [
        retrieve(2, "queue lag \ud83d").encode(),  # a lone surrogate: the tool's own rule answers
        retrieve(3, "queue lag 🙂").encode(),  # the surrogate pair whole: a result
        latin1,  # é in Latin-1, not UTF-8
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": ',  # cut short after its id
        b'{"jsonrpc": "1.0", "id": 6, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 7, "id": 8, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 9.5, "method": "ping"}',
        b'{"jsonrpc": "2.0", "method": 10}',  # a notification: no reply, logged
        b"",
        b'{"jsonrpc": "2.0", "id": "\\ud83d", "method": "ping"}',  # an id no reply can carry
        b'{"jsonrpc": "2.0", "id": 12, "method": "x\\ud83d"}',  # a method the SDK would echo
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 13,
                "method": "tools/call",
                "params": {"name": "retrieve_evidence", "arguments": {"query": "q", "x\ud83d": 1}},
            }
        ).encode(),
        b'{"jsonrpc": "2.0", "id": 11, "method": "ping"}',  # the session goes on
    ]
    by_id, anonymous, stderr = session(tmp_path, lines, replies=12)
    assert set(by_id) == {1, 2, 3, "four", 5, 6, 11, 12, 13}
    assert by_id[5]["error"] == {
        "code": PARSE_ERROR,
        "message": "the message is not valid JSON: expected a value at line 1, column 63",
    }
    assert (
        by_id[12]["error"]["message"] == "the message's method is not valid Unicode text (a lone surrogate)"
    )
    assert by_id[13]["result"]["structuredContent"]["error"].startswith(
        "arguments: unknown field(s) 'x\\ud83d'"
    )
    assert by_id[2]["result"]["isError"] is True
    assert by_id[2]["result"]["structuredContent"] == {
        "error": "query: is not valid Unicode text (lone surrogate at index 10)",
        "field": "query",
    }
    assert by_id[3]["result"]["structuredContent"]["hits"][0]["record_id"] == "queue"
    assert by_id["four"]["error"] == {
        "code": PARSE_ERROR,
        "message": f"the message is not UTF-8 (byte {latin1.index(0xE9)} is 0xe9); send JSON text in UTF-8",
    }
    assert by_id[6]["error"]["code"] == INVALID_REQUEST
    assert "jsonrpc" in by_id[6]["error"]["message"]
    assert by_id[11]["result"] == {}
    # The lines with no id to be read (7-8, 9.5) are answered with id null, in their order.
    assert [reply["error"]["message"] for reply in anonymous] == [
        "the message repeats the key 'id' in one object",
        "the message's id must be a string or an integer, not a number with a fraction or an exponent",
        "the message's id is not valid Unicode text (a lone surrogate)",
    ]
    assert stderr.count("pyevidence mcp: refused:") == 8  # the notification's too
    assert "Traceback" not in stderr


NOT_JSON = "the message is not valid JSON: "
NOT_AN_ID = "the message's id must be a string or an integer, not "
NOT_A_STRING = "method: Input should be a valid string"
REFUSED_LINES = [
    (b"not json", Refusal(None, PARSE_ERROR, NOT_JSON + "expected a value at line 1, column 1")),
    # Python 3.13's json words a trailing comma its own way, at another column: the reply is
    # pyevidence's words, the same bytes on every Python.
    (
        b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"a": 1,}}',
        Refusal(7, PARSE_ERROR, NOT_JSON + "a trailing comma before '}' at line 1, column 64"),
    ),
    (b"[1,2,]", Refusal(None, PARSE_ERROR, NOT_JSON + "a trailing comma before ']' at line 1, column 5")),
    (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": NaN}',
        Refusal(1, PARSE_ERROR, NOT_JSON + "NaN is not a number JSON allows"),
    ),
    (b"[1, 2]", Refusal(None, INVALID_REQUEST, "the message is not a JSON object")),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', Refusal(None, INVALID_REQUEST, NOT_AN_ID + "null")),
    (
        b'{"jsonrpc": "2.0", "id": true, "method": "ping"}',
        Refusal(None, INVALID_REQUEST, NOT_AN_ID + "true or false"),
    ),
    (
        b'{"jsonrpc": "2.0", "id": 3, "method": ["ping"]}',
        Refusal(3, INVALID_REQUEST, "the message is not a JSON-RPC 2.0 request: " + NOT_A_STRING),
    ),
    (
        b'{"jsonrpc": "2.0", "method": 3}',
        Refusal(
            None, INVALID_REQUEST, "the message is not a JSON-RPC 2.0 notification: " + NOT_A_STRING, False
        ),
    ),
    (
        b'{"id": "x", "method": "ping"}\xff',
        Refusal(None, PARSE_ERROR, "the message is not UTF-8 (byte 29 is 0xff); send JSON text in UTF-8"),
    ),
    (
        b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "x", "arguments": "q"}}',
        Refusal(4, INVALID_PARAMS, "the message's params.arguments: Input should be a valid dictionary"),
    ),
    (
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"arguments": {}}}',
        Refusal(5, INVALID_PARAMS, "the message's params.name: Field required"),
    ),
    (b"   \r\n", None),
]


def _call(request_id: str, arguments: str) -> bytes:
    start = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
    return (start + f'"params": {{"name": "retrieve_evidence", "arguments": {arguments}}}}}').encode()


# Lines strict_json refuses, and the id their reply carries: every id a client can be sure of
# (the SDK's client waited for ever on an error with id null).
IDS_OF_REFUSED_LINES = [
    (_call("20", '{"query": "q", "limit": 1' + "0" * 200 + "}"), 20),  # a number of 201 digits
    (_call('"21"', '{"query": ' + "[" * 70 + "]" * 70 + "}"), "21"),  # nested past 64 levels
    (_call("22", '{"query": "a", "query": "b"}'), 22),  # a key repeated, not the id
    (_call("23", '{"query": "q", "limit": Infinity}'), 23),
    (_call("24", '{"query": "q", "limit": 1' + "0" * 5000 + "}"), 24),  # past Python's own int limit
    (b'{"method": "tools/call", "jsonrpc": "2.0", "id": "x", "params": {', "x"),  # cut short
    (b'{"jsonrpc": "2.0", "params": {"a": 1}, "id": 25', None),  # cut short, the id after a value
    (b'{"jsonrpc": "2.0", "id": 26, "id": 27, "method": "ping", "x": NaN}', None),  # which id?
    (b'{"jsonrpc": "2.0", "id": "\\ud83d", "method": "ping", "x": NaN}', None),  # no reply can carry it
    (b'{"jsonrpc": "2.0", "id": "a\tb", "method": "tools/list",', None),  # a raw tab: no JSON string
    (b'{"jsonrpc": "2.0", "id": 007, "method": "ping"}', None),  # leading zeros: no JSON number
]


@settings(max_examples=500, deadline=None)
@given(
    st.binary(max_size=60) | st.text(max_size=60).map(lambda t: ('{"jsonrpc": "2.0", "id": ' + t).encode())
)
def test_no_line_makes_the_reader_raise(line: bytes) -> None:
    """A line the lenient id reader met with a raw tab in its id made read_message raise, and
    the server died with the session: every line is a message, a refusal or blank."""
    outcome = read_message(line)
    assert outcome is None or isinstance(outcome, Refusal) or hasattr(outcome, "jsonrpc")


def test_a_refused_response_gets_no_reply() -> None:
    """JSON-RPC answers no response; one whose id matched a pending request of the client's
    would have been taken for the answer to it."""
    for line in (
        b'{"jsonrpc": "2.0", "id": 5, "result": {"x": NaN}}',
        b'{"jsonrpc": "2.0", "id": 5, "result": 1, "x": 2}',
    ):
        refusal = read_message(line)
        assert isinstance(refusal, Refusal) and not refusal.reply


@pytest.mark.parametrize(("line", "request_id"), IDS_OF_REFUSED_LINES)
def test_a_refused_line_is_answered_with_the_id_it_shows(line: bytes, request_id: int | str | None) -> None:
    refusal = read_message(line)
    assert isinstance(refusal, Refusal) and refusal.code == PARSE_ERROR and refusal.reply
    assert refusal.request_id == request_id


def test_a_refused_notification_gets_no_reply() -> None:
    refusal = read_message(b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": NaN}}')
    assert isinstance(refusal, Refusal) and not refusal.reply


def test_a_request_before_initialize_is_told_to_initialize_first(tmp_path: Path) -> None:
    lines = [
        retrieve(2, "queue"),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        json.dumps(INITIALIZE),
        json.dumps(INITIALIZED),
        retrieve(4, "queue"),
    ]
    by_id, anonymous, _ = session(tmp_path, [line.encode() for line in lines], replies=4, handshake=False)
    assert not anonymous
    assert by_id[2]["error"] == {
        "code": INVALID_REQUEST,
        "message": "the request came before the session was initialized: send 'initialize' first, "
        "then 'tools/call'",
    }
    assert by_id[3]["result"] == {}  # ping is allowed at any time
    assert by_id[4]["result"]["structuredContent"]["hits"][0]["record_id"] == "queue"


@pytest.mark.parametrize(("line", "expected"), REFUSED_LINES)
def test_a_line_that_is_not_a_message_is_refused_with_its_reason(
    line: bytes, expected: Refusal | None
) -> None:
    assert read_message(line) == expected


def test_a_lone_surrogate_reaches_the_server_as_it_was_sent() -> None:
    message = read_message(retrieve(7, "lag \udc00 x").encode())
    assert isinstance(message, mcp_types.JSONRPCRequest)
    assert message.id == 7 and message.params == {
        "name": "retrieve_evidence",
        "arguments": {"query": "lag \udc00 x"},
    }


requests = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": st.integers(-(2**53), 2**53) | st.text(max_size=5)},
    optional={"method": st.text(max_size=8) | st.integers(), "params": st.dictionaries(st.text(), st.text())},
)


@settings(max_examples=300, deadline=None)
@given(requests, st.binary(max_size=3), st.integers(min_value=0))
def test_a_request_is_passed_on_or_refused_with_its_own_id(
    request: dict[str, Any], junk: bytes, at: int
) -> None:
    """Whatever a request holds, and whatever bytes are spliced into it, its line is passed on
    with the id it shows or refused with a reply, never dropped; a line that still shows a
    request's id is answered with that id."""
    line = json.dumps(request).encode()
    cut = at % (len(line) + 1)
    for candidate in (line, line[:cut] + junk + line[cut:]):
        outcome = read_message(candidate)
        try:
            shown = json.loads(candidate)
        except ValueError:
            shown = None
        has_id = isinstance(shown, dict) and "id" in shown
        if isinstance(outcome, Refusal):
            assert outcome.message.startswith("the message")
            if has_id and candidate == line:
                assert outcome.reply and outcome.request_id == request["id"]
            elif has_id:
                assert outcome.reply
        else:
            assert outcome is not None
            assert getattr(outcome, "id", None) == (shown["id"] if has_id else None)


def test_every_request_read_before_the_end_of_input_is_answered(tmp_path: Path) -> None:
    """A client that pipes a batch of requests and closes stdin: the SDK cancelled the calls
    still running when its input ended, and they got "Connection closed" or no reply at all."""
    calls = [
        ("retrieve_evidence", {"query": "queue lag"}),
        ("retrieve_evidence", {"query": "nothing here"}),
        ("record_history", {"record_id": "queue"}),
        ("get_cited_version", {"record_id": "queue", "version": "1-" + "0" * 64}),  # unknown
        ("retrieve_evidence", {"query": "queue", "tenant": "team-b"}),  # a tool error, answered too
    ] * 4
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED)]
    for n, (name, arguments) in enumerate(calls):
        params = {"name": name, "arguments": arguments}
        lines.append(json.dumps({"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call", "params": params}))
    lines += [
        '{"jsonrpc": "2.0", "id": "ping", "method": "ping"}',
        '{"jsonrpc": "2.0", "id": "bad", "method": 1}',
    ]
    done = subprocess.run(
        _server(tmp_path), input="\n".join(lines).encode() + b"\n", capture_output=True, timeout=120
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert (done.returncode, done.stderr.count(b"Traceback")) == (0, 0), done.stderr.decode()
    assert sorted(map(str, (reply["id"] for reply in replies))) == sorted(
        map(str, [1, *range(100, 100 + len(calls)), "ping", "bad"])
    )
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id["ping"]["result"] == {} and by_id["bad"]["error"]["code"] == INVALID_REQUEST
    for n, (name, arguments) in enumerate(calls):
        result = by_id[100 + n]["result"]  # never "Connection closed"
        assert result["isError"] == ("tenant" in arguments), (name, result)
        if name == "retrieve_evidence" and arguments["query"] == "queue lag":
            assert result["structuredContent"]["hits"][0]["record_id"] == "queue"


def test_a_reply_that_cannot_be_written_fails_the_server(tmp_path: Path) -> None:
    """A client that stopped reading stdout: the requests it sent cannot all be answered, which
    the exit status and one line on stderr say (it was a traceback)."""
    server = subprocess.Popen(
        _server(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    server.stdout.close()  # before the first reply
    try:
        lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), retrieve(2, "queue")]
        server.stdin.write("\n".join(lines).encode() + b"\n")
        server.stdin.close()
        assert server.wait(timeout=60) == 1
        stderr = server.stderr.read().decode()
    finally:
        server.kill()
    assert stderr == (
        "pyevidence: error: could not write a reply to standard output ([Errno 32] Broken pipe): the "
        "client stopped reading, and the requests not answered by then are lost\n"
    )


def test_ctrl_c_ends_the_server_while_it_waits_for_input(tmp_path: Path) -> None:
    """The stdin reader is a daemon thread: a reader blocked in readline() kept the process
    alive after Ctrl-C until a line or the end of input came."""
    server = _serve(tmp_path)
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1  # serving, and waiting for a line
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) in (0, 130)
    finally:
        server.kill()


@pytest.mark.parametrize("over", [1, 1 << 20])  # ended in the read that passes the limit, or later
def test_a_line_over_the_limit_is_refused_by_its_id_and_dropped(tmp_path: Path, over: int) -> None:
    from pyevidence.interfaces.mcp_wire import MAX_LINE_BYTES

    padding = "x" * (MAX_LINE_BYTES + over)
    huge = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "' + padding + '"}}'
    then = {"jsonrpc": "2.0", "id": 8, "method": "tools/call"}
    then["params"] = {"name": "retrieve_evidence", "arguments": {"query": "queue lag"}}
    done = subprocess.run(
        _server(tmp_path),
        input=b"\n".join(
            [json.dumps(INITIALIZE).encode(), json.dumps(INITIALIZED).encode(), huge.encode(),
             json.dumps(then).encode()]
        ) + b"\n",
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert sorted(replies) == [1, 7, 8]
    assert "over 16,777,216 bytes" in replies[7]["error"]["message"]
    assert replies[8]["result"]["structuredContent"]["hits"][0]["record_id"] == "queue"
