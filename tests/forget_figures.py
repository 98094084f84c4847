"""What forget's checkpoint costs (not part of the test suite).

    .venv/bin/python tests/forget_figures.py --rounds 3

Puts 2,000 records into a new file, then times 1,000 forgets, once as forget runs (the WAL
checkpointed after each: docs/python-api.md, "What forget keeps") and once with that step
left out, alternating, on each engine; prints ms a forget for every round and the medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def _ms_a_forget(engine: str, checkpoint: bool) -> float:
    from pyevidence import EvidenceStore

    with tempfile.TemporaryDirectory() as tmp, EvidenceStore(Path(tmp) / "s.db", engine=engine) as store:
        store.put_many(
            [
                dict(tenant="t", record_id=f"r{i}", revision="v", kind="runbook", source="s", expires_at=10,
                     body=f"record {i}: queue lag, restart the consumer " * 5)
                for i in range(2000)
            ]
        )  # fmt: skip
        if not checkpoint:
            store._erase_from_journal = lambda engine: None  # type: ignore[method-assign]
        started = time.perf_counter()
        for i in range(1000):
            store.forget(tenant="t", record_id=f"r{i}")
        return (time.perf_counter() - started) / 1000 * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", default="native,python")
    args = parser.parse_args()
    for engine in args.engines.split(","):
        timings: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            for checkpoint in (False, True):
                timings[checkpoint].append(_ms_a_forget(engine, checkpoint))
        for checkpoint, label in ((False, "without the checkpoint"), (True, "as forget runs")):
            rounds = " / ".join(f"{t:.3f}" for t in timings[checkpoint])
            print(f"{engine} {label}: {statistics.median(timings[checkpoint]):.3f} ms a forget ({rounds})")


if __name__ == "__main__":
    main()
