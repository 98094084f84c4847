"""put_many's rate, one tree against another (not part of the test suite).

    .venv/bin/python tests/write_figures.py --trees /tmp/base . --engines native,python

Loads the benchmark corpus (N eligible records and the distractors, as mappings, made once by
this checkout) into a new file with put_many, in batches, once per tree, engine and round.
Each load runs in its own process with that tree's pyevidence first on the path, the trees
interleaved; it prints every round and the medians, and the size of each tree's file. A
tree is a checkout with its extension built in place (`python setup.py build_ext --inplace`).
Without --trees it measures this checkout alone.
With --switch it times batches on either side of the size from which put_many runs unchecked
(docs/performance.md, "Unchecked batches").
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _load(corpus: Path, batch: int, engine: str) -> tuple[float, int]:
    """records/s of one load of the pickled records into a new file, in this process, and
    the file's size in bytes once the store is closed (its WAL checkpointed)."""
    from pyevidence import EvidenceStore

    records = pickle.loads(corpus.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.db"
        with EvidenceStore(path, engine=engine) as store:
            started = time.perf_counter()
            for i in range(0, len(records), batch):
                store.put_many(records[i : i + batch])
            rate = len(records) / (time.perf_counter() - started)
        return rate, path.stat().st_size


def _around_the_switch(engine: str, rounds: int) -> None:
    """Batches of UNCHECKED_BATCH_MIN - 1 records (checked) and UNCHECKED_BATCH_MIN
    (unchecked) alternating into a store of 12,500 records: µs a record, medians."""
    from pyevidence import EvidenceStore
    from pyevidence.bench.corpus import Corpus
    from pyevidence.storage.engines.python_engine import UNCHECKED_BATCH_MIN

    sizes = (UNCHECKED_BATCH_MIN - 1, UNCHECKED_BATCH_MIN)
    records = list(Corpus.make().records(10_000 + rounds * 2 * UNCHECKED_BATCH_MIN))
    timings: dict[int, list[float]] = {size: [] for size in sizes}
    with tempfile.TemporaryDirectory() as tmp, EvidenceStore(Path(tmp) / "s.db", engine=engine) as store:
        store.put_many(records[:12_500])
        at = 12_500
        for _ in range(rounds):
            for size in sizes:
                started = time.perf_counter()
                store.put_many(records[at : at + size])
                timings[size].append((time.perf_counter() - started) / size * 1e6)
                at += size
    for size, found in timings.items():
        print(f"{engine}, batches of {size}: {statistics.median(found):.1f} µs a record (median of {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trees", nargs="+", default=["."], help="checkouts to compare (default: this one)")
    parser.add_argument("--engines", default="native,python", help="comma-separated (default: both)")
    parser.add_argument("--eligible", type=int, default=100_000, help="eligible records (default 100,000)")
    parser.add_argument("--batch", type=int, default=10_000, help="records per put_many (default 10,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--switch", action="store_true", help="only this checkout: batches either side of the unchecked size"
    )
    parser.add_argument("--one", nargs=2, metavar=("CORPUS", "ENGINE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.switch:
        for engine in args.engines.split(","):
            _around_the_switch(engine, 4 * args.rounds)
        return
    if args.one:
        print(*_load(Path(args.one[0]), args.batch, args.one[1]))
        return
    # The records are made here, by this checkout, and handed to every tree as the same
    # plain mappings: an older tree may not have the corpus module, or the same one.
    from dataclasses import asdict

    from pyevidence.bench.corpus import Corpus

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.pickle"
        corpus.write_bytes(pickle.dumps([asdict(r) for r in Corpus.make().records(args.eligible)]))
        rates = _rounds(corpus, args)
    print("\n| tree | engine | median records/s | rounds | file MB |\n| --- | --- | ---: | --- | ---: |")
    for (tree, engine), found in rates.items():
        shown = " / ".join(f"{r:,.0f}" for r, _ in found)
        rate, size = statistics.median(r for r, _ in found), statistics.median(b for _, b in found) / 1e6
        print(f"| {tree} | {engine} | {rate:,.0f} | {shown} | {size:,.1f} |")


def _rounds(corpus: Path, args: argparse.Namespace) -> dict[tuple[str, str], list[tuple[float, int]]]:
    """(records/s, file bytes) of each load, by tree and engine."""
    rates: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for round_ in range(args.rounds):
        for tree in args.trees:
            for engine in args.engines.split(","):
                env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
                command = [sys.executable, __file__, "--one", str(corpus), engine, "--batch", str(args.batch)]
                out = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=tree)
                rate, size = out.stdout.split()[-2:]
                rates.setdefault((tree, engine), []).append((float(rate), int(size)))
                shown = f"{float(rate):,.0f} records/s, {int(size):,} bytes"
                print(f"round {round_ + 1}: {tree} {engine} {shown}", flush=True)
    return rates


if __name__ == "__main__":
    main()
