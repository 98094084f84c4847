"""pyevidence serve in a real browser: Playwright drives Debian's chromium against the command,
started as a real subprocess on a free loopback port.

It searches, clicks a citation, opens the history and the diff, runs verify, shows that hostile
bodies execute nothing and that another tenant's record is unreachable by URL, and takes the
screenshot docs/web.md shows (PYEVIDENCE_SCREENSHOT names where; make test-web writes
docs/web-search.png). Without playwright or /usr/bin/chromium it skips, saying why; with
PYEVIDENCE_REQUIRE_BROWSER=1 (make test-web) it fails instead. PYEVIDENCE_CHROMIUM names another
chromium binary.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyevidence import EvidenceStore

CHROMIUM = os.environ.get("PYEVIDENCE_CHROMIUM", "/usr/bin/chromium")  # Debian's; another one here
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOSTILE = ('<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=1</script>")


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (make test-web installs it)"
    if not os.path.exists(CHROMIUM):
        return f"no chromium at {CHROMIUM} (apt-get install chromium; make test-web does)"
    if importlib.util.find_spec("uvicorn") is None:
        return "the web extra is not installed: pip install -e '.[web]'"
    return None


if _missing() is not None:
    if os.environ.get("PYEVIDENCE_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"PYEVIDENCE_REQUIRE_BROWSER=1 but {_missing()}")
    pytest.skip(f"the browser test cannot run here: {_missing()}", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


def _put(store: EvidenceStore, tenant: str, record_id: str, body: str, source: str, kind: str) -> None:
    store.put(
        tenant=tenant,
        record_id=record_id,
        revision="v1",
        kind=kind,
        body=body,
        source=source,
        expires_at=1000,
    )


def _fill(path: Path) -> None:
    with EvidenceStore(path) as store:
        a = "team-a"
        _put(
            store,
            a,
            "runbook-queue",
            "When the queue depth alarm fires, check consumer lag first.\n"
            "If lag grows for 10 minutes, scale the workers.",
            "https://wiki.example/runbooks/queue",
            "runbook",
        )
        _put(
            store,
            a,
            "runbook-queue",
            "When the queue depth alarm fires, check consumer lag first.\n"
            "Drain the dead-letter queue, then scale the workers.",
            "https://wiki.example/runbooks/queue",
            "runbook",
        )
        _put(
            store,
            a,
            "incident-42",
            "Consumer lag after deploy 42: stuck consumers on partition 7, restarted them.",
            "incident://42",
            "incident",
        )
        _put(
            store,
            a,
            "runbook-deploy",
            "Before a deploy, pause the queue consumers; resume them after the health check passes.",
            "runbook://deploy/v3",
            "runbook",
        )
        _put(store, a, "note-cache", "Cache hit ratio fell; no action needed.", "note://cache", "working")
        _put(store, a, "hostile", " ".join(HOSTILE) + " pwned", "javascript:window.__pwned=1", "working")
        _put(store, "team-b", "secret-b", "team-b's secret queue runbook", "runbook://b", "runbook")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "evidence.db"
    _fill(db)
    port = _free_port()
    command = [sys.executable, "-m", "pyevidence", "serve", "--db", str(db), "--tenant", "team-a"]
    command += ["--revision", "v1", "--port", str(port), "--clock", "logical", "--now", "100"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"pyevidence serve exited: {process.communicate()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("pyevidence serve did not listen within 30 s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stdout is not None and process.stdout.read() == ""  # stdout stays empty


def _pwned(page: Page) -> Any:
    return page.evaluate("() => window.__pwned")


def test_the_page_in_a_real_browser(server: str, tmp_path: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(java_script_enabled=True, viewport={"width": 960, "height": 720})
            page = context.new_page()

            # Search: hits, scores, marked tokens, the eligible count.
            page.goto(server + "/")
            page.fill("#q", "queue consumer lag")
            page.click("button[type=submit]")
            expect(page.locator(".count")).to_have_text("3 hit(s) among 5 eligible record(s).")
            first = page.locator("article.hit").first
            expect(first.locator(".score")).to_have_text("score 3")
            expect(first.locator("mark").first).to_have_text("queue")
            screenshot = Path(os.environ.get("PYEVIDENCE_SCREENSHOT", tmp_path / "web-search.png"))
            page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.stat().st_size > 10_000

            # Click the citation: exactly the cited version.
            first.locator(".citation a").click()
            expect(page.locator("h1")).to_have_text("Cited version")
            expect(page.locator("pre.body")).to_contain_text("Drain the dead-letter queue")
            expect(page.locator("a[href='https://wiki.example/runbooks/queue']")).to_be_visible()

            # The record: its history, then the diff of its two versions.
            page.click("dd a")
            expect(page.locator("tbody tr")).to_have_count(2)
            page.click("text=Show the diff")
            expect(page.locator(".diff .del").last).to_have_text(
                "-If lag grows for 10 minutes, scale the workers."
            )
            expect(page.locator(".diff .add")).to_have_text(
                ["+Drain the dead-letter queue, then scale the workers."]
            )

            # Verify.
            page.click("nav >> text=Verify")
            expect(page.locator(".ok")).to_contain_text("Verified: 6 version(s) and 5 current record(s)")
            expect(page.locator("body")).to_contain_text("someone who can write the database file")

            # Hostile bodies are text, and run nothing.
            page.goto(server + "/?q=pwned")
            expect(page.locator("pre.body")).to_contain_text(HOSTILE[0])
            expect(page.locator("pre.body")).to_contain_text(HOSTILE[1])
            assert page.locator("pre.body img, pre.body script").count() == 0
            assert page.locator("a[href^='javascript']").count() == 0
            assert _pwned(page) is None
            page.goto(server + "/record?record_id=hostile")
            expect(page.locator("body")).to_contain_text("javascript:window.__pwned=1")
            assert _pwned(page) is None

            # Another tenant's record: the same 404 as no record at all.
            response = page.goto(server + "/record?record_id=secret-b")
            assert response is not None and response.status == 404
            expect(page.locator("h1")).to_have_text("Not found")
            assert "secret" not in page.content()
            response = page.goto(server + "/?q=secret&tenant=team-b")
            assert response is not None and response.status == 400

            # A phone: no sideways scrolling, with JavaScript off.
            phone = browser.new_context(java_script_enabled=False, viewport={"width": 375, "height": 740})
            small = phone.new_page()
            small.goto(server + "/?q=queue+consumer+lag")
            expect(small.locator("article.hit")).to_have_count(3)
            small.click(".citation a >> nth=0")
            expect(small.locator("h1")).to_have_text("Cited version")
            phone.close()
            mobile = browser.new_context(viewport={"width": 375, "height": 740})
            check = mobile.new_page()
            check.goto(server + "/?q=queue+consumer+lag")
            scroll, client = check.evaluate(
                "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            assert scroll <= client, (scroll, client)
            mobile.close()
        finally:
            browser.close()
