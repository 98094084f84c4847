"""Worker process for tests/test_load.py: threads writing and retrieving on one file.

Prints one JSON line at the end: the operations done, the errors seen, every
acknowledged put and forget, and every scope violation found in a retrieve.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time

from pyevidence import EvidenceStore

TENANTS = ["t0", "t1", "t2"]
REVISIONS = ["v1", "v2"]


def work(path: str, engine: str, name: str, seconds: float, out: dict[str, list]) -> None:
    rng = random.Random(name)
    deadline = time.monotonic() + seconds
    n = 0
    with EvidenceStore(path, engine=engine) as store:
        while time.monotonic() < deadline:
            n += 1
            try:
                if rng.random() < 0.5:
                    tenant, revision = rng.choice(TENANTS), rng.choice(REVISIONS)
                    expires = rng.randrange(100)
                    record_id = f"{name}-{n}"
                    store.put(
                        tenant=tenant,
                        record_id=record_id,
                        revision=revision,
                        kind="working",
                        body=f"queue lag scope {tenant} {revision} {expires}",
                        source=f"load://{name}/{n}",
                        expires_at=expires,
                    )
                    out["puts"].append([tenant, record_id])
                    if rng.random() < 0.2:
                        if not store.forget(tenant=tenant, record_id=record_id):
                            out["violations"].append(f"forget of own {record_id} deleted nothing")
                        out["forgets"].append([tenant, record_id])
                else:
                    tenant, revision, now = rng.choice(TENANTS), rng.choice(REVISIONS), rng.randrange(100)
                    for hit in store.retrieve(
                        tenant=tenant, revision=revision, query="queue lag", now=now, limit=10
                    ):
                        _, _, _, t, r, e = hit.body.split()
                        if (t, r) != (tenant, revision) or int(e) <= now or hit.revision != revision:
                            out["violations"].append(f"{hit.record_id} outside {tenant}/{revision}/{now}")
                out["ops"].append(1)
            except Exception as exc:  # counted and reported: the test wants zero
                out["errors"].append(f"{type(exc).__name__}: {exc}")


def main(path: str, engine: str, worker: str, threads: int, seconds: float) -> None:
    out: dict[str, list] = {"ops": [], "errors": [], "puts": [], "forgets": [], "violations": []}
    pool = [
        threading.Thread(target=work, args=(path, engine, f"{worker}.{k}", seconds, out))
        for k in range(threads)
    ]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    out["ops"] = [len(out["ops"])]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
