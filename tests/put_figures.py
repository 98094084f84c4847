"""A single put's latency on a copy of an existing store (not part of the test suite).

    PYTHONPATH=/tmp/v8 .venv/bin/python tests/put_figures.py /tmp/v8.db
    .venv/bin/python tests/put_figures.py /tmp/v9.db --engine python

Copies the store (a corpus store of tests/load_curve.py) to a new file beside it, opens the
copy, and times --puts put() calls of new records of the corpus's eligible scope, as the
benchmark's single put does (pyevidence/bench/run.py), in --rounds rounds; prints the p50 of
each round in milliseconds, then removes the copy. Put the tree to measure first on
PYTHONPATH; run trees one after the other, each twice, not at once.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from dataclasses import asdict
from pathlib import Path


def main() -> None:
    import pyevidence
    from pyevidence import EvidenceStore
    from pyevidence.bench.corpus import Corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the store to copy (left as it is)")
    parser.add_argument("--engine", default="native")
    parser.add_argument("--puts", type=int, default=200, help="puts a round (default 200)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    copy = args.path.with_name(args.path.name + ".put-figures")
    shutil.copyfile(args.path, copy)
    records = list(Corpus.make().records(args.puts * args.rounds))
    try:
        with EvidenceStore(copy, engine=args.engine) as store:
            p50 = []
            for round_ in range(args.rounds):
                times = []
                for i, record in enumerate(records[round_ * args.puts : (round_ + 1) * args.puts]):
                    fields = asdict(record) | {"record_id": f"single-{round_}-{i}"}
                    started = time.perf_counter_ns()
                    store.put(**fields)
                    times.append((time.perf_counter_ns() - started) / 1e6)
                p50.append(statistics.median(times))
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)
    print(f"{pyevidence.__file__}, {args.engine} engine, {args.path}")
    print("single put p50 by round: " + " / ".join(f"{ms:.2f} ms" for ms in p50))


if __name__ == "__main__":
    main()
