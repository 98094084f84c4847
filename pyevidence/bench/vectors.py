"""The vector ranking benchmark: VectorScorer on the Python and the native engine, side by side.

The corpus is the lexical benchmark's (Corpus: the same eligible rows and
distractors), each record with a seeded random unit vector of 384 dimensions,
the size of all-MiniLM-L6-v2's. The two engines run interleaved (their order
alternates every round); each figure is the median over rounds of the mean
time per query, and every query's hits are compared between the engines: a
mismatch fails the benchmark.
"""

from __future__ import annotations

import math
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from ..core.vectors import Embedder
from ..ranking.vector_scoring import VectorScorer
from ..store import EvidenceStore
from .corpus import NOW, REVISION, TENANT, Corpus
from .run import LIMIT, BenchmarkFailed, Progress, _timed, machine

DIMS = 384
MODEL = "bench-random-384"
ENGINES = ("python", "native")


def unit_vector(seed: str) -> list[float]:
    rng = random.Random(seed)
    values = [rng.gauss(0.0, 1.0) for _ in range(DIMS)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def _rounds(size: int) -> tuple[int, int]:
    return (5, 5) if size <= 2_000 else (3, 3)


def build(path: Path, corpus: Corpus, size: int, seed: int) -> None:
    embedder = Embedder(MODEL, unit_vector)
    with EvidenceStore(path, engine="native", embedder=embedder) as store:
        records = list(corpus.records(size))
        for i in range(0, len(records), 5_000):
            batch = records[i : i + 5_000]
            store.put_many(batch, embeddings=[unit_vector(f"{seed}-{r.record_id}") for r in batch])


def measure(path: Path, size: int, seed: int, progress: Progress) -> dict[str, Any]:
    rounds, per_set = _rounds(size)
    queries = [f"query {seed}-{i}" for i in range(per_set)]
    embedder = Embedder(MODEL, unit_vector)  # the query text seeds the query vector
    scorer = VectorScorer(embedder, min_similarity=-1.0)
    stores = {engine: EvidenceStore(path, engine=engine) for engine in ENGINES}
    try:
        per_round: dict[str, list[float]] = {engine: [] for engine in ENGINES}
        for r in range(rounds):
            order = ENGINES if r % 2 == 0 else ENGINES[::-1]
            spent = dict.fromkeys(ENGINES, 0.0)
            for q in queries:
                results = {}
                for engine in order:
                    ms, results[engine] = _timed(
                        lambda s, q: s.retrieve(
                            tenant=TENANT, revision=REVISION, query=q, now=NOW, limit=LIMIT, scorer=scorer
                        ),
                        stores[engine],
                        q,
                    )
                    spent[engine] += ms
                if results["python"] != results["native"]:
                    raise BenchmarkFailed(
                        f"vector ranking differs between the engines for {q!r} at {size:,} rows"
                    )
                progress.step(f"vectors: {size:,} rows, round {r + 1}/{rounds}")
            for engine in ENGINES:
                per_round[engine].append(spent[engine] / len(queries))
    finally:
        for store in stores.values():
            store.close()
    medians = {engine: statistics.median(per_round[engine]) for engine in ENGINES}
    return {
        "eligible_rows": size,
        "dims": DIMS,
        "rounds": rounds,
        "queries": per_set,
        "ms_per_query": medians,
        "us_per_eligible_row": {e: 1000 * medians[e] / size for e in ENGINES},
        "native_speedup_over_python": medians["python"] / medians["native"],
        "all_rounds_ms": per_round,
    }


def run(sizes: list[int], seed: int = 7) -> dict[str, Any]:
    corpus = Corpus.make(seed)
    progress = Progress(sum(_rounds(s)[0] * _rounds(s)[1] for s in sizes))
    results: dict[str, Any] = {"machine": machine(), "seed": seed, "limit": LIMIT, "sizes": []}
    with tempfile.TemporaryDirectory(prefix="pyevidence-bench-vectors-") as tmp:
        for size in sizes:
            path = Path(tmp) / f"vectors-{size}.db"
            build(path, corpus, size, seed)
            results["sizes"].append(measure(path, size, seed, progress))
            path.unlink()
    return results


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"Vector ranking (VectorScorer, {DIMS} dims, limit {results['limit']}, seed {results['seed']}): "
        f"{m['processor']}, {m['cpus']} CPUs; Python {m['python']}; pyevidence {m['pyevidence']}.",
        "",
        "| eligible rows | python ms/query | native ms/query | native speed-up over python |",
        "|---:|---:|---:|---:|",
    ]
    for size in results["sizes"]:
        ms = size["ms_per_query"]
        lines.append(
            f"| {size['eligible_rows']:,} | {ms['python']:.1f} | {ms['native']:.2f} "
            f"| {size['native_speedup_over_python']:.1f}x |"
        )
    return "\n".join(lines) + "\n"
