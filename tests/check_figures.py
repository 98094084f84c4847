"""check_index's time and memory on an existing store (not part of the test suite).

    PYTHONPATH=/tmp/old .venv/bin/python tests/check_figures.py /tmp/store.db
    .venv/bin/python tests/check_figures.py /tmp/store.db --engine python

Opens the store (read-only), runs check_index once, and prints its result, its seconds and the
peak of the process's anonymous memory (RssAnon, sampled every 0.2 s): the memory of its own,
without the file's pages that SQLite maps, which count in the RSS but are the page cache's. Put
the tree to measure first on PYTHONPATH, and run one tree after the other, not at once.
"""

from __future__ import annotations

import argparse
import threading
import time
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
    args = parser.parse_args()
    memory = _PeakAnonymousMemory()
    memory.start()
    with EvidenceStore(args.path, engine=args.engine, read_only=True) as store:
        started = time.perf_counter()
        checked = store.check_index()
        seconds = time.perf_counter() - started
    print(f"{pyevidence.__file__}, {args.engine} engine")
    print(f"ok={checked.ok} records={checked.records_checked:,} problems={checked.problems_found}")
    print(f"{seconds:.1f} s, peak RssAnon {memory.peak_kib / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
