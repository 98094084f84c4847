"""pyevidence serve, in process (Starlette's TestClient): the scope comes from the operator only,
hostile text stays text, and every page's JSON is the CLI's output for the same question.

The real-browser test is tests/test_web_browser.py."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
import markupsafe
from helpers import tamper
from starlette.testclient import TestClient

from pyevidence import EvidenceStore, tool
from pyevidence.core import jsonout
from pyevidence.interfaces import cli
from pyevidence.interfaces.clock import Clock
from pyevidence.interfaces.web import app as web_app
from pyevidence.interfaces.web.app import create_app
from pyevidence.tool import NO_EVIDENCE

NOW = 100
HOSTILE_BODY = '<img src=x onerror="window.__pwned=1"> queue <script>window.__pwned=1</script>'
BIDI_ID = "runbook-\u202eexe.queue"
TEMPLATES = Path(web_app.__file__).parent / "templates"


def fill(path: Path, engine: str) -> dict[str, str]:
    """Two tenants, two revisions, a forgotten record, hostile text; the version ids to cite."""
    with EvidenceStore(path, engine=engine) as store:

        def put(tenant: str, record_id: str, body: str, *, revision: str = "v1", source: str = "") -> None:
            store.put(
                tenant=tenant,
                record_id=record_id,
                revision=revision,
                kind="runbook",
                body=body,
                source=source or f"runbook://{record_id}",
                expires_at=1000,
            )

        put("team-a", "runbook-queue", "Check consumer lag.\nThen scale workers.", source="https://ex.org/q")
        put("team-a", "runbook-queue", "Check consumer lag.\nDrain the dead-letter queue first.")
        put("team-a", "hostile", HOSTILE_BODY, source="javascript:window.__pwned=1")
        put("team-a", BIDI_ID, "queue notes", source="runbook://\u202equeue")
        put("team-a", "incident-7", "queue lag after deploy 42")
        put("team-a", "only-v2", "queue lag in the next revision", revision="v2")
        put("team-b", "secret-b", "team-b queue lag secret")
        put("team-b", "runbook-queue", "team-b's own queue runbook")
        cited = {
            "first": store.history(tenant="team-a", record_id="runbook-queue")[0].version,
            "second": store.history(tenant="team-a", record_id="runbook-queue")[1].version,
            "incident": store.history(tenant="team-a", record_id="incident-7")[0].version,
            "only-v2": store.history(tenant="team-a", record_id="only-v2")[0].version,
            "secret-b": store.history(tenant="team-b", record_id="secret-b")[0].version,
            "b-runbook": store.history(tenant="team-b", record_id="runbook-queue")[0].version,
        }
        store.forget(tenant="team-a", record_id="incident-7")
    return cited


@pytest.fixture
def served(engine: str, tmp_path: Path) -> Iterator[tuple[TestClient, Path, dict[str, str]]]:
    """A TestClient over team-a at v1, on a store opened read-only as pyevidence serve opens it."""
    path = tmp_path / "evidence.db"
    cited = fill(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", NOW))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            yield client, path, cited


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(list(args)) == 0
    return capsys.readouterr().out


def with_expired(printed: str, now: int) -> str:
    """The CLI's history or get-version output with each version's ``expired`` at ``now``, as the
    page adds it (the CLI has no clock for those commands)."""

    def mark(version: dict[str, Any]) -> dict[str, Any]:
        expires_at = version["expires_at"]
        return {**version, "expired": expires_at is not None and expires_at <= now}

    value = json.loads(printed)
    if "versions" in value:
        value["versions"] = [mark(v) for v in value["versions"]]
    elif value.get("version") is not None:
        value["version"] = mark(value["version"])
    return jsonout.dumps(value)


def test_every_page_as_json_is_what_the_cli_prints(
    served: tuple[TestClient, Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    client, path, cited = served
    db = ["--db", str(path)]
    retrieve = ["retrieve", *db, "--tenant", "team-a", "--revision", "v1", "--now", str(NOW)]
    pairs = [
        ("/?q=consumer+lag+queue&format=json", [*retrieve, "--query", "consumer lag queue"]),
        # no hits: the CLI's note, "No evidence found in scope. This does not mean ...", too
        ("/?q=zebra+unicorn&format=json", [*retrieve, "--query", "zebra unicorn"]),
        (
            f"/version?record_id=runbook-queue&version={cited['first']}&format=json",
            [
                "get-version",
                *db,
                "--tenant",
                "team-a",
                "--record-id",
                "runbook-queue",
                "--version",
                cited["first"],
            ],
        ),
        (
            "/record?record_id=runbook-queue&format=json",
            ["history", *db, "--tenant", "team-a", "--record-id", "runbook-queue"],
        ),
        ("/verify?format=json", ["verify", *db, "--tenant", "team-a"]),
    ]
    for url, args in pairs:
        response = client.get(url)
        assert (url, response.status_code, response.headers["content-type"]) == (url, 200, "application/json")
        expected = cli_json(capsys, *args)
        if args[0] in ("history", "get-version"):  # the same, and each version says if it expired
            expected = with_expired(expected, NOW)
        assert response.text == expected, url  # the same bytes, not just the same data
    found = client.get("/?q=consumer+lag+queue&format=json").json()
    assert found["scope"] == {"tenant": "team-a", "revision": "v1", "now": NOW}
    assert found["hits"][0]["record_id"] == "runbook-queue"
    assert "note" not in found
    nothing = client.get("/?q=zebra+unicorn&format=json").json()
    assert nothing["hits"] == [] and nothing["note"] == NO_EVIDENCE


def test_the_request_never_chooses_the_tenant_or_the_revision(
    served: tuple[TestClient, Path, dict[str, str]],
) -> None:
    client, _, _ = served
    plain = client.get("/?q=queue+lag+secret+revision&format=json")
    ids = {hit["record_id"] for hit in plain.json()["hits"]}
    assert plain.json()["eligible_count"] == 3  # team-a at v1: incident-7 was forgotten
    assert not ids & {"secret-b", "only-v2"}
    for name in ("tenant", "revision", "now", "db"):
        refused = client.get(f"/?q=queue+lag&{name}=team-b")
        assert refused.status_code == 400
        assert f"unknown parameter(s) {name}" in refused.text
        assert "fixed by whoever started the server" in refused.text
        assert "secret" not in refused.text
    hostile_headers = {"X-Tenant": "team-b", "Tenant": "team-b", "X-Revision": "v2", "Revision": "v2"}
    client.cookies.set("tenant", "team-b")
    client.cookies.set("revision", "v2")
    for url in ("/?q=queue+lag+secret+revision", "/record?record_id=runbook-queue", "/verify"):
        for fmt in ("", "&format=json" if "?" in url else "?format=json"):
            assert client.get(url + fmt, headers=hostile_headers).text == client.get(url + fmt).text
    assert client.get("/?q=queue&q=other").status_code == 400  # one value per parameter


@pytest.mark.parametrize(
    "limit", ["0", "11", "-1", "x", "\u00b2", "1e3", "1_0", "+3", "", "9" * 101, "1" * 4301, "1" * 5000]
)
def test_a_bad_limit_is_a_clear_400_saying_what_the_cli_says(
    served: tuple[TestClient, Path, dict[str, str]], capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    """The page takes what the CLI's --limit takes and refuses the rest in the CLI's words; a
    number too long for int() (over 4,300 digits) is a 400 like any other, not a 500."""
    client, path, _ = served
    response = client.get("/", params={"q": "queue", "limit": limit, "format": "json"})
    assert response.status_code == 400, response.text
    refused = response.json()
    assert refused["field"] == "limit"
    args = ["retrieve", "--db", str(path), "--tenant", "team-a", "--revision", "v1", "--query", "queue"]
    with pytest.raises(SystemExit) if "must be a whole number" in refused["error"] else nullcontext():
        assert cli.main([*args, "--now", str(NOW), "--limit", limit]) == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    # argparse names the option (argument --limit: ...), the store the argument (limit: ...)
    assert said.endswith(refused["error"]), (said, refused)
    page = client.get("/", params={"q": "queue", "limit": limit})
    assert page.status_code == 400 and str(markupsafe.escape(refused["error"])) in page.text


@pytest.mark.parametrize("limit", ["3", " 3 ", "03", "10"])
def test_a_limit_the_cli_takes_the_page_takes(
    served: tuple[TestClient, Path, dict[str, str]], limit: str
) -> None:
    client, _, _ = served
    response = client.get("/", params={"q": "queue", "limit": limit, "format": "json"})
    plain = client.get("/", params={"q": "queue", "limit": str(int(limit)), "format": "json"})
    assert response.status_code == 200 and response.text == plain.text


def test_another_scopes_record_gets_the_same_404_as_none(
    served: tuple[TestClient, Path, dict[str, str]],
) -> None:
    client, _, cited = served
    nowhere = client.get("/record?record_id=no-such-record")
    assert nowhere.status_code == 404
    for record_id in ("secret-b", "only-v2"):  # another tenant's; this tenant's at another revision
        response = client.get(f"/record?record_id={record_id}")
        assert (response.status_code, response.text) == (404, nowhere.text)
        as_json = client.get(f"/record?record_id={record_id}&format=json")
        assert (as_json.status_code, as_json.json()["versions"]) == (404, [])
    made_up = "1-" + "0" * 64
    nowhere = client.get(f"/version?record_id=secret-b&version={made_up}")
    assert nowhere.status_code == 404
    others = (("secret-b", "secret-b"), ("runbook-queue", "b-runbook"), ("only-v2", "only-v2"))
    for record_id, version in others:
        response = client.get(f"/version?record_id={record_id}&version={cited[version]}")
        assert (response.status_code, response.text) == (404, nowhere.text)
        as_json = client.get(f"/version?record_id={record_id}&version={cited[version]}&format=json")
        assert (as_json.status_code, as_json.json()) == (404, {"status": "unknown", "version": None})
    diff = client.get(f"/diff?record_id=runbook-queue&from={cited['first']}&to={cited['b-runbook']}")
    assert (diff.status_code, diff.text) == (404, nowhere.text)
    assert "team-b" not in nowhere.text


def test_every_page_renders(served: tuple[TestClient, Path, dict[str, str]]) -> None:
    client, _, cited = served
    search = client.get("/?q=consumer+lag")
    assert search.status_code == 200
    assert "<mark>lag</mark>" in search.text and "<mark>consumer</mark>" in search.text
    assert "2 hit(s) among 3 eligible record(s)" not in search.text  # only runbook-queue shares a word
    assert "1 hit(s) among 3 eligible record(s)." in search.text
    assert f'href="/version?record_id=runbook-queue&amp;version={cited["second"]}"' in search.text
    assert f"runbook://runbook-queue@{cited['second']}" in search.text
    empty = client.get("/?q=kubernetes")
    assert NO_EVIDENCE in empty.text and "does not mean there is no problem" in empty.text
    assert "3 eligible record(s) in this scope, none sharing a word" in empty.text
    assert "<mark>" not in client.get("/").text  # the query box alone
    version = client.get(f"/version?record_id=runbook-queue&version={cited['first']}")
    assert "Then scale workers." in version.text and "Drain" not in version.text
    assert 'href="https://ex.org/q"' in version.text
    record = client.get("/record?record_id=runbook-queue")
    assert "Drain the dead-letter queue first." in record.text
    assert cited["first"].split("-")[1] in record.text and cited["second"].split("-")[1] in record.text
    diff = client.get(f"/diff?record_id=runbook-queue&from={cited['first']}&to={cited['second']}")
    assert '<span class="del">-Then scale workers.</span>' in diff.text
    assert '<span class="add">+Drain the dead-letter queue first.</span>' in diff.text
    diff_url = f"/diff?record_id=runbook-queue&from={cited['first']}&to={cited['second']}"
    as_json = client.get(diff_url + "&format=json")
    assert "+Drain the dead-letter queue first." in as_json.json()["diff"]
    verify = client.get("/verify")
    assert "Verified: 7 version(s)" in verify.text  # team-a: 6 puts and incident-7's tombstone
    assert "someone who can write the database file" in verify.text


def answers(client: TestClient, urls: list[str]) -> dict[str, tuple[int, str]]:
    return {url: (response.status_code, response.text) for url in urls for response in [client.get(url)]}


def scope_urls(record_id: str, first: str, second: str) -> list[str]:
    """Every page that names a record, as HTML and as JSON."""
    urls = [
        f"/record?record_id={record_id}",
        f"/version?record_id={record_id}&version={first}",
        f"/diff?record_id={record_id}&from={first}&to={second}",
    ]
    return urls + [url + "&format=json" for url in urls]


def test_a_record_of_another_revision_is_not_found_before_or_after_a_forget(
    served: tuple[TestClient, Path, dict[str, str]], engine: str
) -> None:
    """A forget erases the revision of every version of the record: the page must not then take
    a revision it cannot read for its own, and show another revision's hashes and chain."""
    client, path, _ = served
    with EvidenceStore(path, engine=engine) as store:
        for body in ("the other revision's secret", "the other revision's secret, again"):
            store.put(tenant="team-a", record_id="secret", revision="other", kind="runbook", body=body,
                      source="runbook://secret", expires_at=1000)  # fmt: skip
        first, second = (v.version for v in store.history(tenant="team-a", record_id="secret"))
    urls = scope_urls("secret", first, second)
    before = answers(client, urls)
    # the same 404, byte for byte, as for a record id that was never put anywhere
    nowhere = answers(client, scope_urls("never-put", first, second))
    assert [(status, text.replace("never-put", "secret")) for status, text in nowhere.values()] == list(
        before.values()
    )
    assert {status for status, _ in before.values()} == {404}
    with EvidenceStore(path, engine=engine) as store:
        assert store.forget(tenant="team-a", record_id="secret")
    assert answers(client, urls) == before
    assert all(first.split("-")[1] not in text for _, text in before.values())


def test_a_forgotten_record_of_the_served_revision_is_not_found_as_the_mcp_tools_say(
    served: tuple[TestClient, Path, dict[str, str]], engine: str
) -> None:
    """incident-7 was the served revision's, but its forget erased that: the page cannot tell it
    from another revision's forgotten record, so it answers what the MCP tools answer, nothing."""
    client, path, cited = served
    urls = scope_urls("incident-7", cited["incident"], cited["incident"])
    nowhere = answers(client, scope_urls("never-put", cited["incident"], cited["incident"]))
    expected = [(status, text.replace("never-put", "incident-7")) for status, text in nowhere.values()]
    assert list(answers(client, urls).values()) == expected
    assert {status for status, _ in expected} == {404}
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        scoped = store.scoped(tenant="team-a")
        asked = {"record_id": "incident-7", "version": cited["incident"]}
        cited_version = tool.run_tool("get_cited_version", scoped, asked, revision="v1", now=NOW)
        history = tool.run_tool("record_history", scoped, {"record_id": "incident-7"}, revision="v1", now=NOW)
    assert cited_version["status"] == "unknown" and history["versions"] == []
    assert client.get(urls[1] + "&format=json").json() == {"status": "unknown", "version": None}
    assert "A forgotten record is not shown either" in client.get(urls[1]).text
    # put again after its forget: the page shows the new version alone, as record_history does
    with EvidenceStore(path, engine=engine) as store:
        store.put(tenant="team-a", record_id="incident-7", revision="v1", kind="incident", body="new",
                  source="incident://7", expires_at=1000)  # fmt: skip
        scoped = store.scoped(tenant="team-a")
        history = tool.run_tool("record_history", scoped, {"record_id": "incident-7"}, revision="v1", now=NOW)
    shown = client.get("/record?record_id=incident-7&format=json").json()
    assert [v["seq"] for v in shown["versions"]] == [3] and shown["versions"] == history["versions"]
    page = client.get("/record?record_id=incident-7").text
    assert "forget" not in page and cited["incident"] not in page


class Ticking(Clock):
    """A clock a second later at each reading, as the wall clock may be between two readings."""

    def __init__(self, start: int) -> None:
        super().__init__("logical", start)
        self.readings = iter(range(start, start + 1000))

    def now(self) -> int:
        return next(self.readings)


def test_the_search_page_shows_the_now_its_search_used(tmp_path: Path, engine: str) -> None:
    """The header's now is the one the hits were judged by, not the clock read again to render."""
    path = tmp_path / "evidence.db"
    fill(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Ticking(999))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            used = client.get("/?q=queue&format=json").json()["scope"]["now"]  # reads 999
            assert used == 999
            page = client.get("/?q=queue").text  # the search reads 1000: every record has expired
            assert "now <code>1000</code>" in page and "No evidence found in scope" in page


def test_hostile_text_stays_text(served: tuple[TestClient, Path, dict[str, str]]) -> None:
    client, _, _ = served
    for url in ("/?q=queue", "/record?record_id=hostile"):
        page = client.get(url)
        assert "<img" not in page.text and "<script" not in page.text
        assert "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;" in page.text
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page.text
        hrefs = re.findall(r'href="([^"]*)"', page.text)
        assert hrefs and not [h for h in hrefs if not h.startswith(("/", "https://"))], hrefs
    assert "javascript:window.__pwned=1" in client.get("/record?record_id=hostile").text  # shown, not linked


def test_bidi_controls_are_shown_not_obeyed(served: tuple[TestClient, Path, dict[str, str]]) -> None:
    client, _, _ = served
    search = client.get("/?q=notes")
    assert "\u202e" not in search.text
    assert "runbook-\\u202eexe.queue" in search.text and "runbook://\\u202equeue@" in search.text
    record = client.get("/record", params={"record_id": BIDI_ID})
    assert record.status_code == 200 and "\u202e" not in record.text
    # JSON is data: the same escape as the CLI's (ASCII JSON), and the exact id when decoded.
    hits = json.loads(client.get("/?q=notes&format=json").text)["hits"]
    assert hits[0]["record_id"] == BIDI_ID


def test_every_response_forbids_script(served: tuple[TestClient, Path, dict[str, str]]) -> None:
    client, _, _ = served
    urls = (
        "/",
        "/?q=queue",
        "/verify",
        "/record?record_id=nowhere",
        "/?bad=1",
        "/no-page",
        "/static/style.css",
    )
    for url in urls:
        policy = client.get(url).headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy, url
        assert "style-src 'self'" in policy and "unsafe-inline" not in policy
    for template in TEMPLATES.glob("*.html"):  # what the policy would break, never written
        source = template.read_text()
        assert not re.search(r"<script|\sstyle=|\son[a-z]+=", source, re.IGNORECASE), template.name
    assert client.post("/").status_code == 405  # read-only: GET only


def test_another_host_name_is_refused(served: tuple[TestClient, Path, dict[str, str]]) -> None:
    """A page that rebinds its own name to 127.0.0.1 sends its name as Host: refused."""
    client, _, _ = served
    assert client.get("/?q=queue", headers={"Host": "evil.example"}).status_code == 400
    for name in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000"):
        assert client.get("/?q=queue", headers={"Host": name}).status_code == 200


def test_a_broken_chain_shows_as_broken(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "evidence.db"
    fill(path, engine)
    tamper(path, "UPDATE evidence_versions SET body = 'edited' WHERE record_id = 'hostile'")
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", NOW))
        client = TestClient(app, base_url="http://127.0.0.1")
        page = client.get("/verify")
        assert "Broken at chain position 3" in page.text and "Verified" not in page.text
        assert client.get("/verify?format=json").json()["ok"] is False
        hostile = store.history(tenant="team-a", record_id="hostile")[0].version
        cited = client.get(f"/version?record_id=hostile&version={hostile}")
        assert cited.status_code == 500 and "edited" not in cited.text
        assert "no longer holds what was stored" in cited.text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--clock", "logical"], "now: is given with --clock logical, and only then"),
        (["--now", "5"], "now: is given with --clock logical, and only then"),
        (["--revision", " "], "revision: "),
    ],
)
def test_serve_refuses_a_bad_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = tmp_path / "evidence.db"
    fill(path, "python")
    revision = [] if "--revision" in args else ["--revision", "v1"]  # an option is given once
    base = ["serve", "--db", str(path), "--tenant", "team-a", *revision, "--port", "1"]
    assert cli.main(base + args) == 2
    assert message in capsys.readouterr().err


def test_serve_never_creates_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "typo.db"
    assert cli.main(["serve", "--db", str(missing), "--tenant", "a", "--revision", "v1"]) == 1
    assert "no database at" in capsys.readouterr().err and not missing.exists()


def test_the_test_extra_carries_the_web_extra() -> None:
    """make test-py and make test-web run pyevidence serve with the test extra's packages: the
    same pins as pyproject.toml's web extra, or the suite would test another stack than users get."""
    import tomllib

    extras = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["web"] and set(extras["web"]) <= set(extras["test"])


def test_the_web_benchmark_reports_what_the_page_adds(engine: str) -> None:
    from pyevidence.interfaces.web import bench

    results = bench.run([200], engine=engine)
    (size,) = results["sizes"]
    assert size["eligible_rows"] == 200 and size["queries"] == 20 and size["rounds"] == bench.ROUNDS
    assert set(size["median_ms"]) == {"retrieve", "html", "json"}
    assert 0 < size["median_added_ms"]["html"] < size["median_ms"]["html"]
    assert size["within_budget"] == all(v <= bench.BUDGET_MS for v in size["median_added_ms"].values())
    assert f"| 200 | {engine} |" in bench.markdown(results)


def test_a_version_another_revision_superseded_is_not_shown_as_current(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "moved.db"
    with EvidenceStore(path, engine=engine) as store:
        for revision, body in (("v1", "queue moved in v1"), ("v2", "queue moved on to v2")):
            store.put(
                tenant="team-a", record_id="moved", revision=revision, kind="runbook", body=body,
                source="runbook://moved", expires_at=1000,
            )  # fmt: skip
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        for revision, current in (("v1", None), ("v2", "queue moved on to v2")):
            app = create_app(store.scoped(tenant="team-a"), revision=revision, clock=Clock("logical", NOW))
            with TestClient(app, base_url="http://127.0.0.1") as client:
                page = client.get("/record?record_id=moved")
                assert page.status_code == 200
                if current is None:  # retrieve at v1 finds nothing: the page must not call v1 current
                    assert "No current version in this scope." in page.text
                    assert client.get("/?q=moved&format=json").json()["hits"] == []
                else:
                    assert f'<pre class="body">{current}</pre>' in page.text


def test_every_character_that_draws_nothing_is_shown_escaped() -> None:
    import sys
    import unicodedata

    from pyevidence.interfaces.web.text import link_target, visible

    format_characters = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    draw_nothing = [0x034F, 0x115F, 0x1160, 0x17B4, 0x3164, 0xFE0F, 0xFFA0, 0xE0100, 0x180B]
    for code in [*format_characters, *draw_nothing, 0x00, 0x1B, 0x7F, 0x85]:
        char = chr(code)
        shown = visible(f"runbook://q{char}ueue")
        assert char not in shown, hex(code)
        assert shown == f"runbook://q\\u{code:04x}ueue" if code <= 0xFFFF else f"runbook://q\\U{code:08x}ueue"
        assert link_target(f"https://a.example/{char}x") is None, hex(code)
    assert visible("queue\tlag\nrunbook é ✓") == "queue\tlag\nrunbook é ✓"
    assert link_target("https://a.example/queue") == "https://a.example/queue"


def test_a_limit_asked_for_stays_in_the_json_link_and_the_form(
    served: tuple[TestClient, Path, dict[str, str]],
) -> None:
    client, _, _ = served
    page = client.get("/?q=queue&limit=1")
    assert 'href="/?q=queue&amp;limit=1&amp;format=json"' in page.text
    assert '<input type="hidden" name="limit" value="1">' in page.text
    assert len(client.get("/?q=queue&limit=1&format=json").json()["hits"]) == 1
    default = client.get("/?q=queue")
    assert 'href="/?q=queue&amp;format=json"' in default.text and 'name="limit"' not in default.text


def expiring(path: Path, engine: str) -> dict[str, str]:
    """team-a at v1: "old", whose versions expire at 500 and then 1000, and "fresh", at 5000."""
    with EvidenceStore(path, engine=engine) as store:
        for record_id, expires_at in (("old", 500), ("old", 1000), ("fresh", 5000)):
            store.put(
                tenant="team-a", record_id=record_id, revision="v1", kind="incident",
                body=f"queue backlog: restart consumer ({record_id}, {expires_at})",
                source=f"runbook://{record_id}", expires_at=expires_at,
            )  # fmt: skip
        old = [v.version for v in store.history(tenant="team-a", record_id="old")]
        return {
            "old-500": old[0],
            "old-1000": old[1],
            "fresh": store.history(tenant="team-a", record_id="fresh")[0].version,
        }


def client_at(store: EvidenceStore, now: int) -> TestClient:
    app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", now))
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.mark.parametrize("now", [999, 1000])  # a version has expired once now reaches its expires_at
def test_an_expired_version_is_never_shown_as_current_evidence(engine: str, tmp_path: Path, now: int) -> None:
    path = tmp_path / "expiring.db"
    expiring(path, engine)
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        client = client_at(store, now)
        found = client.get("/?q=backlog+restart&format=json").json()
        assert sorted(hit["record_id"] for hit in found["hits"]) == (
            ["fresh"] if now == 1000 else ["fresh", "old"]
        )
        page = client.get("/record?record_id=old")
        assert page.status_code == 200 and f"now <code>{now}</code>" in page.text
        if now == 1000:  # retrieve finds nothing of "old": the page must not call it current
            assert '<pre class="body">' not in page.text
            assert "No current version in this scope: the latest version" in page.text
            assert "expired at 1000 (now is 1000), so it is no longer evidence" in page.text
        else:
            assert '<pre class="body">queue backlog: restart consumer (old, 1000)</pre>' in page.text
            assert "No current version" not in page.text


@pytest.mark.parametrize("now", [999, 1000, 5000])
def test_every_page_that_shows_a_version_says_whether_it_expired(
    engine: str, tmp_path: Path, now: int
) -> None:
    path = tmp_path / "expiring.db"
    cited = expiring(path, engine)
    expired = {"old-500": 500 <= now, "old-1000": 1000 <= now, "fresh": 5000 <= now}
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        client = client_at(store, now)
        for name, version in cited.items():
            record_id = name.split("-")[0]
            url = f"/version?record_id={record_id}&version={version}"
            assert client.get(url + "&format=json").json()["version"]["expired"] is expired[name], (name, now)
            page = client.get(url).text
            shown = '<dd class="expired">yes</dd>' if expired[name] else '<dd class="unexpired">no</dd>'
            assert f"<dt>expired</dt>{shown}" in page, (name, now)
            assert ("Expired: this version stopped being evidence" in page) is expired[name]
        for record_id in ("old", "fresh"):
            names = [name for name in cited if name.startswith(record_id)]
            listed = client.get(f"/record?record_id={record_id}&format=json").json()["versions"]
            assert [v["expired"] for v in listed] == [expired[name] for name in names]
            page = client.get(f"/record?record_id={record_id}").text
            cells = re.findall(r'<td data-label="expired"(?: class="expired")?>(yes|no)</td>', page)
            assert cells == ["yes" if expired[name] else "no" for name in names]
        diff_url = f"/diff?record_id=old&from={cited['old-500']}&to={cited['old-1000']}"
        compared = client.get(diff_url + "&format=json").json()
        assert (compared["from"]["expired"], compared["to"]["expired"]) == (
            expired["old-500"],
            expired["old-1000"],
        )
        marks = client.get(diff_url).text.count('<span class="expired">(expired)</span>')
        assert marks == expired["old-500"] + expired["old-1000"]


# Every parameter of every page that can be wrong, and the field the 400 names. {first} is a version
# of runbook-queue; "1-" and 64 zeros is well formed.
BAD_PARAMETERS = [
    ("/?format=json", "q"),
    ("/?q=queue&limit=0", "limit"),
    ("/?q=queue&format=xml", "format"),
    ("/verify?format=xml", "format"),
    ("/record", "record_id"),
    ("/record?record_id=", "record_id"),
    ("/record?record_id=%20", "record_id"),
    ("/version?version={first}", "record_id"),
    ("/version?record_id=&version={first}", "record_id"),
    ("/version?record_id=runbook-queue", "version"),
    ("/version?record_id=runbook-queue&version=", "version"),
    ("/version?record_id=runbook-queue&version=zzz", "version"),
    ("/diff", "record_id"),
    ("/diff?from={first}&to={first}", "record_id"),
    ("/diff?record_id=&from={first}&to={first}", "record_id"),
    ("/diff?record_id=runbook-queue", "from"),
    ("/diff?record_id=runbook-queue&to={first}", "from"),
    ("/diff?record_id=runbook-queue&from=1&to=2", "from"),
    ("/diff?record_id=runbook-queue&from=1-{zeros}x&to={first}", "from"),
    ("/diff?record_id=runbook-queue&from={first}", "to"),
    ("/diff?record_id=runbook-queue&from={first}&to=2", "to"),
    ("/diff?record_id=runbook-queue&from={first}&to=", "to"),
]


@pytest.mark.parametrize(("url", "field"), BAD_PARAMETERS)
def test_every_bad_parameter_is_a_400_naming_it(
    served: tuple[TestClient, Path, dict[str, str]], url: str, field: str
) -> None:
    client, _, cited = served
    url = url.format(first=cited["first"], zeros="0" * 64)
    both = [url] if "format=" in url else [url, url + ("&" if "?" in url else "?") + "format=json"]
    for asked in both:
        response = client.get(asked)
        if asked.endswith("format=json"):
            assert (response.status_code, response.json()["field"]) == (400, field), asked
        else:
            assert (response.status_code, f'<p class="broken">{field}: ' in response.text) == (400, True), (
                asked
            )


def test_a_well_formed_request_for_nothing_in_scope_is_the_one_404(
    served: tuple[TestClient, Path, dict[str, str]],
) -> None:
    client, _, cited = served
    nowhere = client.get("/record?record_id=no-such-record")
    made_up = "1-" + "0" * 64
    urls = (
        f"/version?record_id=no-such-record&version={made_up}",
        f"/version?record_id=runbook-queue&version={made_up}",
        f"/diff?record_id=no-such-record&from={made_up}&to={made_up}",
        f"/diff?record_id=runbook-queue&from={cited['first']}&to={made_up}",
        f"/diff?record_id=secret-b&from={cited['secret-b']}&to={cited['secret-b']}",
        f"/diff?record_id=only-v2&from={cited['only-v2']}&to={cited['only-v2']}",
    )
    for url in urls:
        response = client.get(url)
        assert (response.status_code, response.text) == (404, nowhere.text), url


@pytest.fixture
def never_serves(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """uvicorn's server returns at once; the list gets the addresses of the sockets it was given."""
    import uvicorn

    bound: list[tuple[str, int]] = []

    def run(self: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
        assert sockets, "pyevidence serve binds its sockets itself, before the banner"
        bound.extend(sock.getsockname()[:2] for sock in sockets)

    monkeypatch.setattr(uvicorn.Server, "run", run)
    return bound


def serve_args(path: Path, *args: str) -> list[str]:
    return ["serve", "--db", str(path), "--tenant", "team-a", "--revision", "v1", *args]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--port", "99999"], "port"),
        (["--port", "65536"], "port"),
        (["--port", "-1"], "port"),
        (["--host", "not a host!"], "host"),
        (["--host", ""], "host"),
        (["--host", "[::1]"], "host"),
    ],
)
def test_a_bad_port_or_host_is_a_one_line_usage_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    never_serves: list[tuple[str, int]],
    args: list[str],
    field: str,
) -> None:
    path = tmp_path / "evidence.db"
    fill(path, "python")
    assert cli.main(serve_args(path, *args)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pyevidence: error: {field}: ") and err.count("\n") == 1, err  # no banner
    assert never_serves == []


def test_a_port_that_cannot_be_bound_is_a_one_line_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], never_serves: list[tuple[str, int]]
) -> None:
    path = tmp_path / "evidence.db"
    fill(path, "python")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(serve_args(path, "--port", str(port))) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"pyevidence: error: cannot listen on 127.0.0.1:{port}: ") and err.count("\n") == 1
    assert "in use" in err and never_serves == []
    with socket.socket() as probe:  # TEST-NET-1 is no machine's, unless this one binds any address
        try:
            probe.bind(("192.0.2.1", 0))
        except OSError:
            pass
        else:
            return
    assert cli.main(serve_args(path, "--host", "192.0.2.1")) == 1
    err = capsys.readouterr().err
    assert err.startswith("pyevidence: error: cannot listen on 192.0.2.1:8000: ") and err.count("\n") == 1


def test_the_banner_names_the_port_really_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], never_serves: list[tuple[str, int]]
) -> None:
    path = tmp_path / "evidence.db"
    fill(path, "python")
    assert cli.main(serve_args(path, "--port", "0")) == 0
    ((host, port),) = never_serves
    assert host == "127.0.0.1" and port != 0
    assert capsys.readouterr().err == (
        f"pyevidence serve: http://127.0.0.1:{port}/ (tenant 'team-a', revision 'v1', read-only); "
        "Ctrl-C stops it\n"
    )


def test_serve_on_port_zero_answers_where_the_banner_says(tmp_path: Path) -> None:
    path = tmp_path / "evidence.db"
    fill(path, "python")
    command = [sys.executable, "-m", "pyevidence", *serve_args(path, "--port", "0")]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        found = re.fullmatch(r"pyevidence serve: http://127\.0\.0\.1:(\d+)/ .*Ctrl-C stops it\n", banner)
        assert found and found.group(1) != "0", banner
        with urllib.request.urlopen(
            f"http://127.0.0.1:{found.group(1)}/verify?format=json", timeout=10
        ) as page:
            assert json.load(page)["ok"] is True
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 0 and "Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()


PROBED_HOSTS = (
    "evil.example",
    "evil.example:8000",
    "evidence.lan:8000",
    "EVIDENCE.lan",
    "127.0.0.1:8000",
    "localhost:8000",
    "LocalHost",
    "[::1]:8000",
    "0.0.0.0:8000",
    "10.1.2.3:8000",
    "[fd00::5]:8000",
)


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, int]]:
    """uvicorn's server returns at once; the list gets, for each serve, the status the app it was
    given answers each of PROBED_HOSTS with (asked while the store is open)."""
    import uvicorn

    statuses: list[dict[str, int]] = []

    def run(self: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
        assert sockets
        with TestClient(self.config.app, base_url="http://127.0.0.1") as client:
            statuses.append(
                {h: client.get("/verify?format=json", headers={"Host": h}).status_code for h in PROBED_HOSTS}
            )

    monkeypatch.setattr(uvicorn.Server, "run", run)
    return statuses


def accepted(statuses: dict[str, int]) -> set[str]:
    assert set(statuses.values()) <= {200, 400}, statuses
    return {host for host, status in statuses.items() if status == 200}


LOOPBACK_ACCEPTED = {"127.0.0.1:8000", "localhost:8000", "LocalHost", "[::1]:8000"}


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.2", "127.1", "LOCALHOST", "localhost", "::ffff:127.0.0.1"]
)
def test_every_loopback_spelling_is_loopback_and_refuses_other_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answered: list[dict[str, int]], host: str
) -> None:
    """127.0.0.2, 127.1, LOCALHOST and ::ffff:127.0.0.1 are loopback too: no warning, and a page
    that rebinds its own name to them (DNS rebinding) sends that name as Host and is refused."""
    path = tmp_path / "evidence.db"
    fill(path, "python")
    assert cli.main(serve_args(path, "--host", host, "--port", "0")) == 0
    err = capsys.readouterr().err
    assert "not loopback" not in err and err.count("\n") == 1, err
    (statuses,) = answered
    assert accepted(statuses) == LOOPBACK_ACCEPTED


def test_a_wildcard_binding_answers_only_to_this_machines_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answered: list[dict[str, int]]
) -> None:
    """0.0.0.0 listens on loopback too: any Host would let a rebinding page read the tenant."""
    path = tmp_path / "evidence.db"
    fill(path, "python")
    assert cli.main(serve_args(path, "--host", "0.0.0.0", "--port", "0")) == 0
    err = capsys.readouterr().err
    assert "not loopback" in err and "127.0.0.1, localhost, [::1], 0.0.0.0 (--allowed-host" in err
    assert accepted(answered[-1]) == {*LOOPBACK_ACCEPTED, "0.0.0.0:8000"}
    allowed = ("--allowed-host", "Evidence.LAN", "--allowed-host", "10.1.2.3", "--allowed-host", "fd00::5")
    assert cli.main(serve_args(path, "--host", "0.0.0.0", "--port", "0", *allowed)) == 0
    assert accepted(answered[-1]) == {
        *LOOPBACK_ACCEPTED,
        "0.0.0.0:8000",
        "evidence.lan:8000",
        "EVIDENCE.lan",
        "10.1.2.3:8000",
        "[fd00::5]:8000",
    }


def test_the_hosts_it_answers_to() -> None:
    from pyevidence.interfaces.web.serve import host_names

    loopback = ("127.0.0.1", "localhost", "[::1]")
    assert host_names("127.0.0.1", ["127.0.0.1"]) == loopback
    assert host_names("127.0.0.2", ["127.0.0.2"]) == (*loopback, "127.0.0.2")
    assert host_names("::", ["::"]) == (*loopback, "[::]")
    assert host_names("10.0.0.5", ["10.0.0.5"]) == ("10.0.0.5",)  # no loopback name reaches it
    assert host_names("Box.LAN.", ["10.0.0.5"], ["[FD00::1]"]) == (
        "10.0.0.5",
        "box.lan.",
        "box.lan",
        "[fd00::1]",
    )


@pytest.mark.parametrize("name", ["*", "*.example", "evil.example:80", "", "a b", "[evil]"])
def test_an_allowed_host_must_be_a_name_or_an_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], never_serves: list[tuple[str, int]], name: str
) -> None:
    path = tmp_path / "evidence.db"
    fill(path, "python")
    assert cli.main(serve_args(path, "--allowed-host", name)) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyevidence: error: allowed-host: ") and err.count("\n") == 1, err
    assert never_serves == []


def test_a_hostile_body_cannot_make_the_diff_run_for_long(engine: str, tmp_path: Path) -> None:
    """difflib is quadratic on many alike lines: two bodies of 199,000 four-letter lines took
    minutes. Past DIFF_MAX_LINES or DIFF_MAX_BYTES the page says to compare them elsewhere."""
    import random
    import time

    path = tmp_path / "evidence.db"
    r = random.Random(7)
    bodies = {
        "long-lines": ["x" * (web_app.DIFF_MAX_BYTES + 1), "y"],
        "at-the-cap": ["a\n" * (web_app.DIFF_MAX_LINES - 10), "b\n" * (web_app.DIFF_MAX_LINES - 10)],
        # the audit's: minutes before, checked last so that the old code fails fast
        "many-lines": ["\n".join("".join(r.choice("abcd") for _ in range(4)) for _ in range(199_000))] * 2,
    }
    with EvidenceStore(path, engine=engine) as store:
        for record_id, (first, second) in bodies.items():
            for body in (first, second + "\nchanged"):
                store.put(
                    tenant="team-a",
                    record_id=record_id,
                    revision="v1",
                    kind="runbook",
                    body=body,
                    source="s",
                    expires_at=1000,
                )
        versions = {rid: [v.version for v in store.history(tenant="team-a", record_id=rid)] for rid in bodies}
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", NOW))
        client = TestClient(app, base_url="http://127.0.0.1")
        for record_id, (first, second) in versions.items():
            url = f"/diff?record_id={record_id}&from={first}&to={second}"
            started = time.perf_counter()
            page, as_json = client.get(url), client.get(url + "&format=json").json()
            assert time.perf_counter() - started < 10, record_id
            assert page.status_code == 200
            if record_id == "at-the-cap":
                assert "too large" not in page.text and "note" not in as_json
                assert len(as_json["diff"]) > web_app.DIFF_MAX_LINES
                continue
            assert "too large to compare here" in page.text and len(page.content) < 10_000, record_id
            assert "pyevidence get-version --db FILE" in page.text
            assert as_json["diff"] is None and "too large to compare here" in as_json["note"]


def test_another_sites_page_is_refused(served: tuple[TestClient, Path, dict[str, str]]) -> None:
    """A page the responder visits can fetch /diff or /verify with no-cors (it reads nothing, but
    the server does the work): what a browser marks as another site's is refused."""
    client, _, cited = served
    diff = f"/diff?record_id=runbook-queue&from={cited['first']}&to={cited['second']}"
    for url in ("/verify", diff, "/?q=queue", "/static/style.css"):
        for site in ("cross-site", "same-site"):
            refused = client.get(url, headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors"})
            assert refused.status_code == 403, (url, site)
            assert f"Sec-Fetch-Site: {site}" in refused.text
            assert refused.headers["content-security-policy"] == web_app.CONTENT_SECURITY_POLICY
            framed = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
            assert client.get(url, headers=framed).status_code == 403
            scripted = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
            assert client.get(url, headers=scripted).status_code == 403  # window.open without a click
        for site in ("same-origin", "none"):
            assert client.get(url, headers={"Sec-Fetch-Site": site}).status_code == 200, (url, site)
        assert client.get(url).status_code == 200  # curl sends no Sec-Fetch-Site
        clicked = {
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document",
            "Sec-Fetch-User": "?1",
        }
        assert client.get(url, headers=clicked).status_code == 200  # a link in a ticket, clicked


def test_a_body_line_cannot_pass_for_the_diffs_file_header(engine: str, tmp_path: Path) -> None:
    """Only the first two lines of a unified diff are its header: an added body line '++ rm -rf /'
    shows as '+++ rm -rf /', an addition, not as a grey header line."""
    path = tmp_path / "evidence.db"
    with EvidenceStore(path, engine=engine) as store:
        for body in ("keep\n-- old step", "keep\n++ rm -rf / on all hosts"):
            store.put(
                tenant="team-a",
                record_id="sneaky",
                revision="v1",
                kind="runbook",
                body=body,
                source="s",
                expires_at=1000,
            )
        first, second = (v.version for v in store.history(tenant="team-a", record_id="sneaky"))
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        app = create_app(store.scoped(tenant="team-a"), revision="v1", clock=Clock("logical", NOW))
        page = TestClient(app, base_url="http://127.0.0.1").get(
            f"/diff?record_id=sneaky&from={first}&to={second}"
        )
    assert '<span class="add">+++ rm -rf / on all hosts</span>' in page.text
    assert '<span class="del">--- old step</span>' in page.text
    assert f'<span class="file">--- {first}</span><span class="file">+++ {second}</span>' in page.text
    assert page.text.count('class="file"') == 2


def test_an_unexpected_error_carries_the_security_headers(
    served: tuple[TestClient, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """Starlette's outermost ServerErrorMiddleware answers an unhandled exception: SecurityHeaders
    wraps it too."""
    _, path, _ = served
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        scoped = store.scoped(tenant="team-a")

        def broken() -> None:
            raise RuntimeError("a bug, not the store's answer")

        monkeypatch.setattr(scoped, "verify", broken)
        app = create_app(scoped, revision="v1", clock=Clock("logical", NOW))
        client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
        failed = client.get("/verify")
    assert failed.status_code == 500 and "a bug" not in failed.text
    for name, value in web_app.SECURITY_HEADERS.items():
        assert failed.headers.get(name) == value, name


def test_a_trailing_slash_is_not_found_not_redirected(
    served: tuple[TestClient, Path, dict[str, str]],
) -> None:
    """A redirect to the path without its slash would build its Location from the Host header."""
    client, _, _ = served
    for url in ("/verify/", "/record/?record_id=hostile", "/static/style.css/"):
        answer = client.get(url, follow_redirects=False)
        assert answer.status_code == 404 and "location" not in answer.headers, url
        assert answer.headers["content-security-policy"] == web_app.CONTENT_SECURITY_POLICY
