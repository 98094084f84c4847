"""Where a store's bytes go, tree by tree, beside an FTS5 table of the same records
(not part of the test suite).

    .venv/bin/python tests/file_figures.py 30000
    PYTHONPATH=/tmp/variant .venv/bin/python tests/file_figures.py 30000 --dir /tmp/files

Writes the benchmark corpus's records for ``eligible`` eligible records (plus its
distractors) with the native put_many and with an FTS5 insert, the way the write
benchmark does (pyevidence/bench/writes.py: batches of 10,000, WAL checkpointed), then
reads SQLite's dbstat table of each file and prints, per tree, its pages (leaf and
interior), the bytes of its rows (payload) and the bytes left unused in its pages.
Put the tree to measure first on PYTHONPATH to compare a changed schema with this one.
dbstat needs a SQLite built with SQLITE_ENABLE_DBSTAT_VTAB, as Debian's is.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

_TREES_SQL = (
    "SELECT name, count(*), sum(pagetype = 'leaf'), sum(pagetype = 'internal'), sum(pagetype = 'overflow'),"
    " sum(ncell), sum(payload), sum(unused), sum(pgsize) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC"
)


def _trees(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(_TREES_SQL).fetchall()
    finally:
        conn.close()


def main() -> None:
    import pyevidence
    from pyevidence.bench.corpus import Corpus
    from pyevidence.bench.writes import WRITE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eligible", type=int)
    parser.add_argument("--dir", type=Path, help="where the two files go (default: a temporary directory)")
    args = parser.parse_args()
    records = list(Corpus.make().records(args.eligible))
    batches = [records[i : i + 10_000] for i in range(0, len(records), 10_000)]
    print(f"pyevidence from {Path(pyevidence.__file__).parent}; {len(records):,} records")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.dir or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for writer in ("native", "fts5"):
            path = where / f"{writer}.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            WRITE[writer](path, batches)
            print(f"\n{writer}: {path.stat().st_size / 1e6:.1f} MB\n")
            print("| tree | pages | leaf | interior | overflow | cells | payload MB | unused MB | MB |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            for name, pages, leaf, interior, overflow, cells, payload, unused, size in _trees(path):
                print(
                    f"| {name} | {pages:,} | {leaf:,} | {interior:,} | {overflow:,} | {cells:,}"
                    f" | {payload / 1e6:.2f} | {unused / 1e6:.2f} | {size / 1e6:.2f} |"
                )


if __name__ == "__main__":
    main()
