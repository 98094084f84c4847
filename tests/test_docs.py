"""The documentation runs: every code block of README.md and docs/*.md, and every relative link.

One test per block, in page order; the blocks of a page share a temporary directory and one
Python namespace, like one session. Conventions: docs/development.md, "Docs that run".
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import embeddings_installed, mcp_installed
from docblocks import (
    PAGES,
    REPO,
    RUNNABLE,
    Block,
    all_blocks,
    console_commands,
    matches,
    sql_expected,
)

import pyevidence
from pyevidence import EngineUnavailableError, EvidenceStore, native_available

BLOCKS = all_blocks()
README_LIMIT = 12 * 1024

# The blocks that do not run, by page and reason. A new one is a deliberate change here.
KNOWN_NOT_RUN = {
    ("README.md", "make test runs this very suite, and make demo is the demo shown below"),
    (
        "docs/ranking.md",
        "needs a reranking service at that address; the block after it runs the failure path",
    ),
    ("docs/ranking.md", "a wire format, not a program; tests/test_remote.py serves it on 127.0.0.1"),
    ("docs/ranking.md", "installs packages (make test installs the extra itself)"),
    ("README.md", "an MCP host's configuration file, not a command"),
    ("docs/agents.md", "an MCP host's configuration file, not a command"),
    (
        "docs/sql.md",
        "JavaScript: tests/node/example.js, which tests/test_node.py runs and keeps equal to this block",
    ),
    ("docs/performance.md", "a measurement that writes a 25 MB file and a store, not a check"),
    ("docs/upgrading.md", "needs a store of an earlier release"),
    (
        "docs/development.md",
        "installs system packages as root; tests/test_deps.py checks what tools/deps prints",
    ),
    ("README.md", "starts long-running servers; tests/test_cluster.py starts three such nodes"),
    # The cluster page: servers on one or three machines; tests/test_cluster.py runs the same steps.
    ("docs/cluster.md", "installs packages"),
    ("docs/cluster.md", "installs system packages and builds in the source tree"),
    ("docs/cluster.md", "starts long-running servers"),
    ("docs/cluster.md", "runs on three machines"),
    ("docs/cluster.md", "needs a cluster with node 3 down; tests/test_cluster.py runs the same removal"),
    ("docs/cluster.md", "needs a cluster with node 3 down; tests/test_cluster.py runs the same listing"),
    ("docs/cluster.md", "needs a running cluster and Python 3.13"),
    ("docs/cluster.md", "a systemd unit file, not a command"),
    ("docs/cluster.md", "a node's log, not a command; tests/test_cluster.py reads such reports"),
    (
        "docs/web.md",
        "serves until Ctrl-C; tests/test_web_browser.py starts it as a subprocess and drives it in Chromium",
    ),
}


@dataclass
class PageSession:
    """What the blocks of one page share: a directory, a namespace, whether one failed."""

    directory: Path
    namespace: dict[str, Any] = field(default_factory=dict)
    failed: str | None = None


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, PageSession]]:
    opened: dict[Path, PageSession] = {}
    yield opened
    for session in opened.values():
        for value in session.namespace.values():
            if isinstance(value, EvidenceStore):
                value.close()


def session_for(
    block: Block, sessions: dict[Path, PageSession], factory: pytest.TempPathFactory
) -> PageSession:
    if block.page not in sessions:
        directory = factory.mktemp(block.page.stem)
        # Like a checkout after `make ext`: the pages say `.load build/evidence` and
        # `sqlite3 evidence.db < pyevidence/storage/schema.sql`.
        (directory / "build").mkdir()
        (directory / "pyevidence" / "storage").mkdir(parents=True)
        with contextlib.suppress(EngineUnavailableError):
            suffix = "dylib" if sys.platform == "darwin" else "so"
            (directory / "build" / f"evidence.{suffix}").symlink_to(pyevidence.loadable_path())
        (directory / "pyevidence" / "storage" / "schema.sql").symlink_to(
            Path(pyevidence.__file__).parent / "storage" / "schema.sql"
        )
        sessions[block.page] = PageSession(directory)
    return sessions[block.page]


def missing_need(need: str) -> str | None:
    """Why ``need`` is not met here, or None."""
    if need == "native":
        if not native_available():
            return "the native engine is not built in this installation"
        try:
            pyevidence.loadable_path()
        except EngineUnavailableError:
            return "the loadable extension is not built in this installation"
    if need == "sqlite-vec" and importlib.util.find_spec("sqlite_vec") is None:
        return "sqlite-vec is not installed (pip install sqlite-vec)"
    if need == "embeddings" and not embeddings_installed():
        return "the embeddings extra is not installed (pip install -e '.[embeddings]')"
    if need == "mcp" and not mcp_installed():
        return "the mcp extra is not installed (pip install -e '.[mcp]')"
    return None


def require(block: Block) -> None:
    """Skip a block whose needs are not met, or fail where make test says they must be.

    A sql block needs the compiled parts (the extension is built with the native engine)."""
    for need in sorted(block.needs | ({"native"} if block.language == "sql" else set())):
        reason = missing_need(need)
        if reason is None:
            continue
        required = {
            "native": "PYEVIDENCE_REQUIRE_NATIVE",
            "embeddings": "PYEVIDENCE_REQUIRE_EMBEDDINGS",
            "mcp": "PYEVIDENCE_REQUIRE_MCP",
        }
        variable = required.get(need, "PYEVIDENCE_REQUIRE_NATIVE")
        if os.environ.get(variable) == "1":
            pytest.fail(f"{block.name} needs {need}, and {variable}=1: {reason}")
        pytest.skip(f"{block.name} needs {need}: {reason}")


def shell_environment() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    return environment


def sqlite3_shell() -> str:
    shell = shutil.which("sqlite3")
    if shell is None:
        if os.environ.get("PYEVIDENCE_REQUIRE_NATIVE") == "1":
            pytest.fail("the sqlite3 shell is needed to run the docs' sql blocks (apt-get install sqlite3)")
        pytest.skip("no sqlite3 shell to run the docs' sql blocks")
    return shell


def run_python(block: Block, session: PageSession) -> None:
    # Blank lines first, so a traceback's line numbers are the page's.
    code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
    printed = io.StringIO()
    # A block may start the commands of .venv (an MCP client starts `pyevidence mcp`), as a
    # console block can: they come first on PATH here too.
    path = os.environ.get("PATH")
    os.environ["PATH"] = shell_environment()["PATH"]
    try:
        with contextlib.redirect_stdout(printed):
            exec(code, session.namespace)
    finally:
        if path is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = path
    if block.output is not None:
        assert matches(block.output, printed.getvalue()), (
            f"{block.name} printed:\n{printed.getvalue()}\nthe page shows:\n{block.output}"
        )
    else:
        assert printed.getvalue() == "", (
            f"{block.name} printed, with no output block after it:\n{printed.getvalue()}"
        )


def run_console(block: Block, session: PageSession) -> None:
    for command, expected in console_commands(block.code):
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=session.directory,
            env=shell_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, f"{block.name}: `{command}` exited {done.returncode}:\n{done.stdout}"
        assert matches(expected, done.stdout), (
            f"{block.name}: `{command}` printed:\n{done.stdout}\nthe page shows:\n{expected}"
        )


def run_sh(block: Block, session: PageSession) -> None:
    done = subprocess.run(
        ["bash", "-e", "-c", block.code],
        cwd=session.directory,
        env=shell_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{done.stdout}"


def run_sql(block: Block, session: PageSession) -> None:
    done = subprocess.run(
        [sqlite3_shell(), "-bail", "evidence.db"],
        cwd=session.directory,
        input=block.code,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"{block.name}: the sqlite3 shell exited {done.returncode}:\n{done.stdout}"
    expected = sql_expected(block.code)
    assert matches(expected, done.stdout), (
        f"{block.name} printed:\n{done.stdout}\nthe page shows:\n{expected}"
    )


RUNNERS = {"python": run_python, "console": run_console, "sh": run_sh, "sql": run_sql}
assert set(RUNNERS) == RUNNABLE


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.not_run is None], ids=lambda b: b.name)
def test_block_runs_as_shown(
    block: Block, sessions: dict[Path, PageSession], tmp_path_factory: pytest.TempPathFactory
) -> None:
    require(block)
    session = session_for(block, sessions, tmp_path_factory)
    if session.failed is not None:
        pytest.fail(f"not run: {session.failed} failed before it, and the blocks of a page share their state")
    assert block.language in RUNNERS, (
        f"{block.name}: a ```{block.language} block cannot run; use one of {sorted(RUNNERS)}, "
        "or say why it does not run with <!-- not-run: reason --> on the line before it"
    )
    session.failed = block.name
    cwd = Path.cwd()
    os.chdir(session.directory)
    try:
        RUNNERS[block.language](block, session)
    finally:
        os.chdir(cwd)
    session.failed = None


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.not_run is not None], ids=lambda b: b.name)
def test_block_not_run_says_why(block: Block) -> None:
    assert block.not_run is not None and len(block.not_run) > 10, f"{block.name}: say why it does not run"
    pytest.skip(f"{block.name} is not run: {block.not_run}")


def test_blocks_not_run_are_the_known_few() -> None:
    not_run = {(str(b.page.relative_to(REPO)), b.not_run) for b in BLOCKS if b.not_run is not None}
    counted = sum(1 for b in BLOCKS if b.not_run is not None)
    assert not_run == KNOWN_NOT_RUN
    assert counted == len(KNOWN_NOT_RUN), "each reason is given once"
    print(f"{counted} of {len(BLOCKS)} code blocks do not run:")
    for b in BLOCKS:
        if b.not_run is not None:
            print(f"  {b.name}: {b.not_run}")


def test_the_mcp_host_entries_shown_start_the_server() -> None:
    # The host configuration is not run as a block; its entry is checked here instead: it parses,
    # the README and docs/agents.md show the same one, and its arguments start `pyevidence mcp`
    # as far as opening the (absent) database, so they are all options the server takes.
    shown = [b for b in BLOCKS if b.language == "json"]
    assert {str(b.page.relative_to(REPO)) for b in shown} == {"README.md", "docs/agents.md"}
    entries = [json.loads(b.code)["mcpServers"] for b in shown]
    assert all(entry == entries[0] for entry in entries)
    for server in entries[0].values():
        assert server["command"] == "pyevidence"
        done = subprocess.run(
            [str(Path(sys.executable).parent / "pyevidence"), *server["args"]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert (done.returncode, done.stderr) == (
            1,
            f"pyevidence: error: no database at {server['args'][2]}; create one with 'pyevidence put'\n",
        )


def test_every_page_has_blocks_that_run() -> None:
    pages_with_code = {b.page for b in BLOCKS if b.not_run is None}
    assert {REPO / "README.md", REPO / "docs/python-api.md", REPO / "docs/sql.md"} <= pages_with_code


def test_readme_starts_with_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```")[1]
    assert "make demo" in first_block and "make test" in first_block
    assert readme.index("make demo") < readme.index("## ")


def test_readme_is_a_short_tour() -> None:
    size = len((REPO / "README.md").read_bytes())
    assert size < README_LIMIT, f"README.md is {size:,} bytes; the reference belongs in docs/"


def test_readme_says_what_it_is_not() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "is not** a search engine that understands meaning" in readme
    assert 'An empty result means "no evidence found"**, never "no problem exists"' in readme


def test_every_page_is_listed_in_the_index() -> None:
    index = (REPO / "docs/index.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        if page.parent.name == "docs" and page.name != "index.md":
            assert f"]({page.name})" in index, f"docs/index.md does not link {page.name}"
            assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


def github_anchor(heading: str, seen: dict[str, int]) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces to hyphens."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


def prose(text: str) -> str:
    """The text outside code blocks and code spans, where links are links."""
    text = re.sub(r"^(`{3,}).*?^\1$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    headings = re.findall(r"^#{1,6} (.+)$", prose_keeping_headings(page), flags=re.M)
    return {github_anchor(heading.replace("`", ""), seen) for heading in headings}


def prose_keeping_headings(page: Path) -> str:
    return re.sub(r"^(`{3,}).*?^\1$", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)


def relative_links() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text(encoding="utf-8"))):
            if not re.match(r"[a-z]+:", target):
                found.append((page, target))
    return found


def test_relative_links_resolve() -> None:
    links = relative_links()
    assert len(links) > 20  # the pages link each other; an empty list would mean a broken parser
    broken = []
    for page, target in links:
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
        elif anchor and anchor not in anchors(destination):
            broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_the_link_checker_knows_github_anchors() -> None:
    seen: dict[str, int] = {}
    heading = "Versions and citations: `history`, `get_version`, `verify`".replace("`", "")
    assert github_anchor(heading, seen) == "versions-and-citations-history-get_version-verify"
    assert github_anchor("A local embedding model, offline: pyevidence[embeddings]", seen) == (
        "a-local-embedding-model-offline-pyevidenceembeddings"
    )
    assert github_anchor("Versions and citations: history, get_version, verify", seen).endswith("-1")
