"""retrieve's latency on an existing store, for the benchmark corpus's queries (not part of
the test suite).

    PYTHONPATH=/tmp/v8 .venv/bin/python tests/read_figures.py /tmp/v8.db
    .venv/bin/python tests/read_figures.py /tmp/v9.db --engine python

For a store loaded from the corpus (tests/load_curve.py): opens it read-only, runs 40 "rare"
and 40 "common" queries of the corpus once to warm the page cache, then five times each, and
prints the median milliseconds of a retrieve (limit 10, in the corpus's scope and time). Put
the tree to measure first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

QUERIES = 40
REPEATS = 5


def main() -> None:
    from pyevidence import EvidenceStore
    from pyevidence.bench.corpus import NOW, REVISION, TENANT, Corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--engine", default="native")
    args = parser.parse_args()
    corpus = Corpus.make()
    with EvidenceStore(args.path, engine=args.engine, read_only=True) as store:
        for which in ("rare", "common"):
            queries = corpus.queries(which, QUERIES)
            timings = []
            for repeat in range(REPEATS + 1):
                for query in queries:
                    started = time.perf_counter()
                    store.retrieve(tenant=TENANT, revision=REVISION, query=query, now=NOW, limit=10)
                    if repeat:  # the first pass warms the cache
                        timings.append(time.perf_counter() - started)
            print(f"{args.path} {args.engine} {which}: p50 {statistics.median(timings) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
