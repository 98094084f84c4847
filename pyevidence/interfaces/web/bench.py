"""What the search page costs on top of retrieve: `pyevidence bench --web`.

The corpus is the benchmark's (bench.corpus: 100,000 eligible rows and the
distractors by default). For each query, in alternating order, it times
``retrieve`` itself and the search page answered by the app in process: the ASGI
call from the request to the last byte of the response (routing, the worker
thread, retrieve, marking the tokens and rendering the HTML, or the JSON), with
no network and no client in the figure. Each figure is a median over every query
of every round; the page's cost is the median of its per-query difference from
retrieve.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ...bench.corpus import DISTRACTOR_SHARE, NOW, REVISION, TENANT, Corpus
from ...bench.run import LIMIT, Progress, build, machine
from ...core.records import Retrieval
from ...store import EvidenceStore, ScopedStore
from ..clock import Clock
from .app import create_app

BUDGET_MS = 5.0  # what the page may add to the median retrieve (issue 22)
ROUNDS, QUERIES_PER_SET = 5, 10


class _TimedScope(ScopedStore):
    """A ScopedStore that keeps how long its last retrieve took."""

    last_ms = 0.0

    def retrieve(self, **arguments: Any) -> Retrieval:
        start = time.perf_counter_ns()
        result = super().retrieve(**arguments)
        self.last_ms = (time.perf_counter_ns() - start) / 1e6
        return result


async def _page_ms(app: Any, query_string: str) -> float:
    """Milliseconds from calling the app to the response's last byte, and its status checked."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": query_string.encode(),
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    start = time.perf_counter_ns()
    await app(scope, receive, send)
    spent = (time.perf_counter_ns() - start) / 1e6
    if status != [200]:
        raise RuntimeError(f"the search page answered {status} for {query_string!r}")
    return spent


def measure(path: Path, corpus: Corpus, size: int, engine: str, progress: Progress) -> dict[str, Any]:
    queries = corpus.queries("rare", QUERIES_PER_SET) + corpus.queries("common", QUERIES_PER_SET)
    samples: dict[str, list[float]] = {"retrieve": [], "html": [], "json": []}
    added: dict[str, list[float]] = {"html": [], "json": []}
    with EvidenceStore(path, engine=engine, read_only=True) as store:
        scope = _TimedScope(store, TENANT)
        app = create_app(scope, revision=REVISION, clock=Clock("logical", NOW))
        loop = asyncio.new_event_loop()
        try:
            for r in range(ROUNDS):
                for i, query in enumerate(queries):
                    paths = ["retrieve", "html", "json"]
                    for name in paths[(r + i) % 3 :] + paths[: (r + i) % 3]:  # rotate the order
                        if name == "retrieve":
                            start = time.perf_counter_ns()
                            store.retrieve(
                                tenant=TENANT, revision=REVISION, query=query, now=NOW, limit=LIMIT
                            )
                            samples[name].append((time.perf_counter_ns() - start) / 1e6)
                        else:
                            params = {
                                "q": query,
                                "limit": str(LIMIT),
                                **({"format": "json"} if name == "json" else {}),
                            }
                            page_ms = loop.run_until_complete(_page_ms(app, urlencode(params)))
                            samples[name].append(page_ms)
                            added[name].append(page_ms - scope.last_ms)
                progress.step(f"web: {size:,} rows, round {r + 1}/{ROUNDS}")
        finally:
            loop.close()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    added_median = {name: statistics.median(values) for name, values in added.items()}
    return {
        "eligible_rows": size,
        "engine": engine,
        "rounds": ROUNDS,
        "queries": len(queries),
        "median_ms": medians,
        "median_added_ms": added_median,
        "budget_ms": BUDGET_MS,
        "within_budget": all(value <= BUDGET_MS for value in added_median.values()),
    }


def run(sizes: list[int], seed: int = 7, engine: str = "native") -> dict[str, Any]:
    corpus = Corpus.make(seed)
    rows = sum(size + round(size * DISTRACTOR_SHARE / (1 - DISTRACTOR_SHARE)) for size in sizes)
    progress = Progress(rows + ROUNDS * len(sizes))  # build() steps once per row stored
    results: dict[str, Any] = {"machine": machine(), "seed": seed, "limit": LIMIT, "sizes": []}
    with tempfile.TemporaryDirectory(prefix="pyevidence-bench-web-") as tmp:
        for size in sizes:
            path = Path(tmp) / f"web-{size}.db"
            build(path, corpus, size, progress)
            results["sizes"].append(measure(path, corpus, size, engine, progress))
            path.unlink()
    return results


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"The search page's server time beside retrieve (limit {results['limit']}, seed {results['seed']}): "
        f"{m['processor']}, {m['cpus']} CPUs; Python {m['python']}; pyevidence {m['pyevidence']}.",
        "",
        "| eligible rows | engine | retrieve ms | page (HTML) ms | page (JSON) ms "
        f"| HTML adds ms | JSON adds ms | within {BUDGET_MS:g} ms |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for size in results["sizes"]:
        ms, added = size["median_ms"], size["median_added_ms"]
        lines.append(
            f"| {size['eligible_rows']:,} | {size['engine']} | {ms['retrieve']:.2f} | {ms['html']:.2f} "
            f"| {ms['json']:.2f} | {added['html']:.2f} | {added['json']:.2f} "
            f"| {'yes' if size['within_budget'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"
