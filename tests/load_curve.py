"""One load of the benchmark corpus, and how its rate changes as the store grows (not part of
the test suite).

    PYTHONPATH=/tmp/v8 .venv/bin/python tests/load_curve.py 1000000 /tmp/v8.db
    .venv/bin/python tests/load_curve.py 1000000 /tmp/v9.db

Loads N eligible records and the distractors into a new file with put_many, in batches of
10,000 (--batch), and prints the rate of each 100,000 records, the whole load's rate, the
file's size and the bytes the process passed to write() (WAL, checkpoint and temporary files: what the
file system was asked to write). Put the tree to measure first on PYTHONPATH, and run one tree
after the other, not at once: the machine is shared. --engine fts5 or plain loads the same
batches with the write benchmark's FTS5 or plain insert instead.

With --wal-autocheckpoint N the store's connections checkpoint the WAL once it holds N pages
instead of SQLite's 1,000 (a what-if: pyevidence does not set it), so a page that several
batches change is copied into the database file once per checkpoint, not once per batch.

With --ids in-order each record id is rewritten so that ids sort in the order the records are
put (rec-<the record's place, 10 hex digits>-<n>, the same length and shape as the corpus's
random ids): what a store whose ids grow with time, such as ULIDs or incident numbers, costs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

BATCH = 10_000
STEP = 100_000


def _written() -> int:
    """Bytes this process has passed to write() and its kin so far (Linux)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["wchar"])


@contextmanager
def _writer(name: str, path: Path) -> Iterator[Callable[[list[Any]], object]]:
    """A function that writes one batch of records in one transaction: put_many of an engine,
    or the write benchmark's FTS5 or plain insert (pyevidence/bench/writes.py)."""
    if name in ("native", "python"):
        from pyevidence import EvidenceStore

        with EvidenceStore(path, engine=name) as store:
            yield store.put_many
        return
    from pyevidence.bench import writes

    with writes.sqlite_writer(path, writes.FTS5_DDL if name == "fts5" else writes.PLAIN_DDL) as write:
        yield write


def main() -> None:
    from pyevidence.bench.corpus import Corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eligible", type=int)
    parser.add_argument("path", type=Path, help="a new file")
    parser.add_argument(
        "--engine",
        default="native",
        choices=("native", "python", "fts5", "plain"),
        help="put_many of an engine, or the write benchmark's FTS5 or plain insert",
    )
    parser.add_argument("--ids", choices=("random", "in-order"), default="random")
    parser.add_argument("--batch", type=int, default=BATCH, help=f"records a put_many (default {BATCH:,})")
    parser.add_argument("--wal-autocheckpoint", type=int, metavar="PAGES", help="a what-if (see above)")
    args = parser.parse_args()
    if args.wal_autocheckpoint is not None:
        if args.engine not in ("native", "python"):
            parser.error("--wal-autocheckpoint applies to the engines' stores")
        from pyevidence.storage import schema

        # The settings prepare() applies on every connection of both engines, plus this one.
        schema._AFTER_CHECK += (f"PRAGMA wal_autocheckpoint = {args.wal_autocheckpoint};",)
    if args.path.exists():
        parser.error(f"{args.path} exists; give a new file")
    records = list(Corpus.make().records(args.eligible))
    if args.ids == "in-order":
        records = [
            replace(r, record_id=f"rec-{place:010x}-{r.record_id.rsplit('-', 1)[1]}")
            for place, r in enumerate(records)
        ]
    steps: list[str] = []
    written = _written()
    started = step_started = time.perf_counter()
    step_from = 0
    with _writer(args.engine, args.path) as write:
        for at in range(0, len(records), args.batch):
            write(records[at : at + args.batch])
            done = min(at + args.batch, len(records))
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
