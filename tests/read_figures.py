"""retrieve's latency on an existing store, for the benchmark corpus's queries (not part of
the test suite).

    PYTHONPATH=/tmp/v8 .venv/bin/python tests/read_figures.py /tmp/v8.db
    .venv/bin/python tests/read_figures.py /tmp/v9.db --engine python
    .venv/bin/python tests/read_figures.py /tmp/v9.db --method scan --queries 3 --repeats 3

For a store loaded from the corpus (tests/load_curve.py): opens it read-only, runs 40 "rare"
and 40 "common" queries of the corpus (--queries) once to warm the page cache, then five times
each (--repeats), and prints the median milliseconds of a retrieve (limit 10, in the corpus's
scope and time) through the token index, or with --method scan by scoring every eligible row.
Put the tree to measure first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def main() -> None:
    from pyevidence import EvidenceStore
    from pyevidence.bench.corpus import NOW, REVISION, TENANT, Corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--engine", default="native")
    parser.add_argument("--method", default="index", choices=("index", "scan"))
    parser.add_argument("--queries", type=int, default=40, help="queries of each kind (default 40)")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes (default 5)")
    args = parser.parse_args()
    corpus = Corpus.make()
    with EvidenceStore(args.path, engine=args.engine, read_only=True) as store:
        for which in ("rare", "common"):
            queries = corpus.queries(which, args.queries)
            timings = []
            for repeat in range(args.repeats + 1):
                for query in queries:
                    started = time.perf_counter()
                    store.retrieve(
                        tenant=TENANT, revision=REVISION, query=query, now=NOW, limit=10, method=args.method
                    )
                    if repeat:  # the first pass warms the cache
                        timings.append(time.perf_counter() - started)
            p50 = statistics.median(timings) * 1000
            print(f"{args.path} {args.engine} {args.method} {which}: p50 {p50:.2f} ms")


if __name__ == "__main__":
    main()
