"""check_index's time and memory on an existing store (not part of the test suite).

    PYTHONPATH=/tmp/old .venv/bin/python tests/check_figures.py /tmp/store.db
    .venv/bin/python tests/check_figures.py /tmp/store.db --engine python
    .venv/bin/python tests/check_figures.py /tmp/store.db --verify

With --verify it then runs verify(tenant=...) for each of the store's tenants and prints their
seconds: on a store of many small tenants, the time of the engine's own small queries.

Opens the store (read-only), runs check_index once, and prints its result, its seconds and the
peak of the process's anonymous memory (RssAnon, sampled every 0.2 s): the memory of its own,
without the file's pages that SQLite maps, which count in the RSS but are the page cache's. Put
the tree to measure first on PYTHONPATH, and run one tree after the other, not at once.
"""

from __future__ import annotations

import argparse
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path


class _PeakAnonymousMemory(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kib = 0

    def run(self) -> None:
        while True:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    self.peak_kib = max(self.peak_kib, int(line.split()[1]))
            time.sleep(0.2)


def main() -> None:
    import pyevidence
    from pyevidence import EvidenceStore

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--engine", default="native")
    parser.add_argument("--verify", action="store_true", help="also verify every tenant")
    args = parser.parse_args()
    memory = _PeakAnonymousMemory()
    memory.start()
    with EvidenceStore(args.path, engine=args.engine, read_only=True) as store:
        started = time.perf_counter()
        checked = store.check_index()
        seconds = time.perf_counter() - started
        if args.verify:
            with closing(sqlite3.connect(f"file:{args.path}?mode=ro", uri=True)) as conn:  # either engine
                tenants = [row[0] for row in conn.execute("SELECT DISTINCT tenant FROM evidence_current")]
            started = time.perf_counter()
            intact = sum(store.verify(tenant=tenant).ok for tenant in tenants)
            verify_seconds = time.perf_counter() - started
    print(f"{pyevidence.__file__}, {args.engine} engine")
    print(f"ok={checked.ok} scopes={checked.scopes_checked:,} records={checked.records_checked:,}", end=" ")
    print(f"problems={checked.problems_found}")
    print(f"{seconds:.2f} s, peak RssAnon {memory.peak_kib / 1024:,.0f} MB")
    if args.verify:
        print(f"verify: {len(tenants):,} tenants, {intact:,} intact, {verify_seconds:.2f} s")


if __name__ == "__main__":
    main()
