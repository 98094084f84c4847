"""A client process of tests/test_cluster.py's load test: writes to a cluster until told to stop.

    python tests/cluster_writer.py URL NAME STOP_FILE

Writes to its own tenant, tenant-NAME: puts and put_manys (1..4 records) of record ids
r0..r7, each version's body unique (it names the operation), so the test can tell which
operations the cluster holds. Prints one JSON line per operation once it returned:
{"op": n, "records": [...], "outcome": "ok" | "in_doubt" | "failed", "error": "..."}.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from pyevidence import EvidenceStore
from pyevidence.core.errors import StoreError


def main(url: str, name: str, stop_file: str) -> None:
    rng = random.Random(name)
    with EvidenceStore(url) as store:
        op = 0
        while not os.path.exists(stop_file):
            op += 1
            records = [
                dict(
                    tenant=f"tenant-{name}",
                    record_id=f"r{rng.randrange(8)}",
                    revision=rng.choice(["v1", "v2"]),
                    kind="incident",
                    body=f"{name} op {op} record {j}: queue lag {rng.choice(['disk', 'worker', 'db'])}",
                    source=f"inc://{name}/{op}/{j}",
                    expires_at=rng.randrange(5, 50),
                )
                for j in range(1 if rng.random() < 0.3 else rng.randrange(2, 5))
            ]
            line: dict[str, object] = {"op": op, "records": records}
            try:
                if len(records) == 1:
                    store.put(**records[0])
                else:
                    store.put_many(records)
                line["outcome"] = "ok"
            except StoreError as exc:
                line["outcome"] = "in_doubt" if "may or may not have been written" in str(exc) else "failed"
                line["error"] = str(exc)
            print(json.dumps(line), flush=True)
            time.sleep(0.002)


if __name__ == "__main__":
    main(*sys.argv[1:4])
