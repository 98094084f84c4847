"""Hostile input against the MCP tools and the web page, found by a review: each test failed
before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyevidence import EvidenceStore, ValidationError, tool

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
from starlette.testclient import TestClient

from pyevidence.interfaces.clock import Clock
from pyevidence.interfaces.mcp_server import render
from pyevidence.interfaces.web.app import create_app

FAR = 10**12
# Queries in which the token rule finds no word: non-ASCII letters (a Russian or a fullwidth
# "queue", which a Russian runbook shares word for word) and punctuation.
NO_WORD = ("очередь", "ｑｕｅｕｅ", "!!!", "\x00")


def _russian_runbook(path: Path, engine: str) -> None:
    with EvidenceStore(path, engine=engine) as store:
        store.put(tenant="team-a", record_id="queue-ru", revision="v1", kind="runbook",
                  expires_at=FAR, source="runbook://queue-ru", body="очередь переполнена")  # fmt: skip


def test_a_query_with_no_word_the_search_matches_is_refused_not_answered_no_evidence(
    engine: str, tmp_path: Path
) -> None:
    """The token rule matches runs of ASCII letters and digits only, so a query with none finds
    nothing whatever the records say. retrieve_evidence answered it "no evidence found (1 record(s)
    in scope, none sharing a word with the query)", which is false when a record holds the very
    word: the tool says what was wrong with the query instead."""
    path = tmp_path / "e.db"
    _russian_runbook(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        scoped = store.scoped(tenant="team-a")
        for query in NO_WORD:
            with pytest.raises(ValidationError) as refused:
                tool.run_tool("retrieve_evidence", scoped, {"query": query}, revision="v1", now=100)
            assert refused.value.field == "query"
            assert "no word this search can match" in str(refused.value)
            assert "ASCII letters and digits" in str(refused.value)
        # A query with one word still searches, and the text says what a word is here.
        found = tool.run_tool("retrieve_evidence", scoped, {"query": "очередь disk"}, revision="v1", now=100)
        assert found["hits"] == [] and found["eligible_count"] == 1
        text = render("retrieve_evidence", found)
        assert "none sharing a word with the query (a word here is a run of ASCII letters and digits" in text


def test_the_search_page_says_a_query_with_no_word_can_match_nothing(engine: str, tmp_path: Path) -> None:
    """The page's "N eligible record(s) in this scope, none sharing a word with the query" was
    false for a Russian query over a Russian runbook: it says the query has no word it matches."""
    path = tmp_path / "e.db"
    _russian_runbook(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", 100))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            for query in NO_WORD:
                page = client.get("/", params={"q": query})
                assert page.status_code == 200
                assert tool.NO_EVIDENCE in page.text
                assert "none sharing a word" not in page.text
                assert "The query has no word this search can match" in page.text
            page = client.get("/", params={"q": "очередь disk"})
            assert "none sharing a word with the query (a word here is a run of ASCII letters" in page.text
            # the JSON (the CLI's retrieve output) says it too, and only for such a query
            for query, noted in ((NO_WORD[0], True), ("очередь disk", False)):
                answer = client.get("/", params={"q": query, "format": "json"}).json()
                assert answer["hits"] == [] and answer["note"] == tool.NO_EVIDENCE
                assert ("query_note" in answer) is noted


def test_a_literal_escape_on_the_page_never_reads_as_an_invisible_character(
    engine: str, tmp_path: Path
) -> None:
    """The page shows a right-to-left override as the six characters \\u202e. A record id that
    holds those six characters themselves was drawn the same, so a second record could pass for
    the first one's citation. A run of backslashes before what reads as an escape is doubled
    (as the MCP text rendering doubles every backslash); any other backslash, a Windows path's,
    is shown as it is."""
    from pyevidence.interfaces.web.text import visible

    real, literal = "runbook-\u202eexe.queue", "runbook-\\u202eexe.queue"
    assert visible(real) == "runbook-\\u202eexe.queue"
    assert visible(literal) == "runbook-\\\\u202eexe.queue"
    assert visible("\\\u202e") == "\\\\\\u202e" != visible("\\\\u202e") == "\\\\\\\\u202e"
    assert visible("\\U000e0041 \\U000e004") == "\\\\U000e0041 \\U000e004"
    assert visible("C:\\Users\\ops\\run.cmd \\n") == "C:\\Users\\ops\\run.cmd \\n"
    path = tmp_path / "e.db"
    with EvidenceStore(path, engine=engine) as store:
        for record_id in (real, literal):
            store.put(tenant="team-a", record_id=record_id, revision="v1", kind="runbook",
                      expires_at=FAR, source="runbook://" + record_id, body="queue")  # fmt: skip
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", 100))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            search = client.get("/", params={"q": "queue"}).text
            assert "runbook-\\u202eexe.queue</code>" in search
            assert "runbook-\\\\u202eexe.queue</code>" in search
            pages = [client.get("/record", params={"record_id": r}).text for r in (real, literal)]
            assert "<code>runbook-\\u202eexe.queue</code>" in pages[0]
            assert "<code>runbook-\\\\u202eexe.queue</code>" in pages[1]


def test_a_literal_escape_split_by_a_marked_token_still_reads_as_text() -> None:
    """The search page draws a body in pieces, each through the filter: a backslash that ends a
    piece before the marked token u202e is doubled as well."""
    from pyevidence.interfaces.web.text import marked, visible

    def drawn(body: str, query: str) -> str:
        return "".join(visible(piece) for piece, _ in marked(body, query))

    assert drawn("x \\u202e y", "u202e") == "x \\\\u202e y" != drawn("x \u202e y", "u202e")
    assert drawn("x \\\\U000E0041", "U000E0041") == "x \\\\\\\\U000E0041"
    assert drawn("C:\\run queue", "run") == "C:\\run queue"


def test_an_unknown_name_that_is_blank_or_odd_is_shown_quoted(engine: str, tmp_path: Path) -> None:
    """An empty or blank argument or parameter name read as nothing ("unknown field(s) ; allowed:
    ..."), one holding a comma as two names, and /verify said "this page takes  (...)": each odd
    name is shown quoted, and a page that takes no parameter says so."""
    path = tmp_path / "e.db"
    _russian_runbook(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        scoped = store.scoped(tenant="team-a")
        for name, named in (("", "''"), (" ", "' '"), ("tenant, revision", "'tenant, revision'")):
            with pytest.raises(ValidationError) as refused:
                tool.run_tool("retrieve_evidence", scoped, {"query": "x", name: 1}, revision="v1", now=1)
            assert str(refused.value) == f"arguments: unknown field(s) {named}; allowed: query, limit"
        app = create_app(scoped, revision="v1", clock=Clock("logical", 100))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            page = client.get("/?=1&q=queue&format=json")
            assert page.status_code == 400
            assert page.json()["error"].startswith(
                "parameters: unknown parameter(s) ''; this page takes q, limit"
            )
            page = client.get("/verify?x=1&format=json")
            assert page.json()["error"].startswith(
                "parameters: unknown parameter(s) x; this page takes only format"
            )


def test_a_line_that_starts_with_a_byte_order_mark_is_refused_by_its_id_saying_so() -> None:
    """Windows tools write a UTF-8 byte order mark before the first line. It was refused as "the
    text stops being JSON here at line 1, column 1" with the id null, though the line shows its
    id: the client's initialize waited for ever. The refusal names the mark and carries the id."""
    pytest.importorskip("mcp_types", reason="the mcp extra is not installed")
    from pyevidence.interfaces.mcp_wire import PARSE_ERROR, Refusal, read_message

    for line, request_id in (
        (b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}\n', 1),
        (b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": "a", "method": "ping"}', "a"),
        (b'\xef\xbb\xbf {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}', 1),
    ):
        refusal = read_message(line)
        assert isinstance(refusal, Refusal) and refusal.code == PARSE_ERROR and refusal.reply
        assert refusal.request_id == request_id
        assert "byte order mark (U+FEFF)" in refusal.message and "without one" in refusal.message
    notification = read_message(b'\xef\xbb\xbf{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert isinstance(notification, Refusal) and not notification.reply


def test_an_initialize_with_bad_params_is_refused_naming_the_field_and_initializes_nothing(
    tmp_path: Path,
) -> None:
    """An initialize whose params were not an initialize's got the SDK's bare "Invalid request
    parameters", yet counted as the session's start: a tools/call after it got that same bare
    error, which sends a client to mend its tool arguments. The initialize is refused naming
    its field, and the session starts only with a valid one."""
    pytest.importorskip("mcp_types", reason="the mcp extra is not installed")
    import json
    import subprocess

    from test_mcp_wire import _server  # `pyevidence mcp` over a store of team-a's one record

    good = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    call = {"name": "retrieve_evidence", "arguments": {"query": "queue"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {**good, "protocolVersion": 5}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
        {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": good},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call},
    ]
    done = subprocess.run(
        _server(tmp_path),
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert sorted(replies) == [1, 2, 3, 4, 5]
    assert replies[1]["error"] == {
        "code": -32602,
        "message": "the message's params.protocolVersion: Field required",
    }
    assert (
        replies[2]["error"]["message"]
        == "the message's params.protocolVersion: Input should be a valid string"
    )
    assert replies[3]["error"]["code"] == -32600
    assert "came before the session was initialized" in replies[3]["error"]["message"]
    assert "result" in replies[4] and replies[5]["result"]["isError"] is False


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": 5}}', "params.cursor"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": 5}}', "params._meta"),
    ],
)
def test_bad_params_of_every_method_served_are_refused_naming_the_field(line: bytes, message: str) -> None:
    """tools/list and ping with params of the wrong shape got the SDK's bare "Invalid request
    parameters", as tools/call and initialize did before: the refusal names the field."""
    pytest.importorskip("mcp_types", reason="the mcp extra is not installed")
    from pyevidence.interfaces.mcp_wire import INVALID_PARAMS, Refusal, read_message

    refusal = read_message(line)
    assert isinstance(refusal, Refusal) and refusal.code == INVALID_PARAMS and refusal.request_id == 1
    assert refusal.message.startswith(f"the message's {message}: ")


def test_a_bad_limit_is_refused_with_an_empty_query_too(engine: str, tmp_path: Path) -> None:
    """/?limit=abc (the query box left empty) showed the empty search page, the bad limit
    ignored without a word: it is the same 400 as with a query."""
    path = tmp_path / "e.db"
    _russian_runbook(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", 100))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            for query in ("", "   "):
                page = client.get("/", params={"q": query, "limit": "abc"})
                assert (
                    page.status_code == 400
                    and "limit: must be a whole number, got &#39;abc&#39;" in page.text
                )
                assert client.get("/", params={"q": query, "limit": "11"}).status_code == 400
            assert client.get("/?limit=abc").status_code == 400
            assert client.get("/?limit=3").status_code == 200


def test_the_cli_says_a_query_with_no_word_can_match_nothing(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "e.db"
    _russian_runbook(path, "python")
    for query, note in (
        (
            "очередь",
            [f"the query has no word this search can match ({tool.WORD_RULE}), so it could find nothing"],
        ),
        ("queue", []),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", "retrieve", "--db", str(path), "--tenant", "team-a",
             "--revision", "v1", "--query", query, "--now", "100"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        answer = json.loads(done.stdout)
        assert (done.returncode, answer["hits"], answer["note"]) == (0, [], tool.NO_EVIDENCE)
        assert [answer[key] for key in answer if key == "query_note"] == note
