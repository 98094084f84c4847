"""One load of the benchmark corpus, and how its rate changes as the store grows (not part of
the test suite).

    PYTHONPATH=/tmp/v8 .venv/bin/python tests/load_curve.py 1000000 /tmp/v8.db
    .venv/bin/python tests/load_curve.py 1000000 /tmp/v9.db

Loads N eligible records and the distractors into a new file with put_many, in batches of
10,000, and prints the rate of each 100,000 records, the whole load's rate, the file's size
and the bytes the process passed to write() (WAL, checkpoint and temporary files: what the
file system was asked to write). Put the tree to measure first on PYTHONPATH, and run one tree
after the other, not at once: the machine is shared.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

BATCH = 10_000
STEP = 100_000


def _written() -> int:
    """Bytes this process has passed to write() and its kin so far (Linux)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["wchar"])


def main() -> None:
    from pyevidence import EvidenceStore
    from pyevidence.bench.corpus import Corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eligible", type=int)
    parser.add_argument("path", type=Path, help="a new file")
    parser.add_argument("--engine", default="native")
    args = parser.parse_args()
    if args.path.exists():
        parser.error(f"{args.path} exists; give a new file")
    records = list(Corpus.make().records(args.eligible))
    steps: list[str] = []
    written = _written()
    started = step_started = time.perf_counter()
    step_from = 0
    with EvidenceStore(args.path, engine=args.engine) as store:
        for at in range(0, len(records), BATCH):
            store.put_many(records[at : at + BATCH])
            done = min(at + BATCH, len(records))
            if done % STEP == 0 or done == len(records):
                now = time.perf_counter()
                steps.append(f"{(done - step_from) / (now - step_started):,.0f}")
                step_started, step_from = now, done
    seconds = time.perf_counter() - started
    gigabytes = (_written() - written) / 1e9
    print(f"{args.path}: {len(records):,} records, {len(records) / seconds:,.0f} records/s")
    print(f"file {args.path.stat().st_size / 1e6:,.1f} MB; passed to write() {gigabytes:.1f} GB")
    print(f"records/s of each {STEP:,}: {' / '.join(steps)}")


if __name__ == "__main__":
    main()
