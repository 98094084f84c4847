"""Child process for tests/test_crash.py: streams puts and forgets until it is killed.

Before each operation it prints "begin <op> <id> <seq>", after the call returns
(the write is committed) "ack"; each line is flushed, so whatever the parent
has read was said before the kill.
"""

from __future__ import annotations

import random
import sys

from pyevidence import EvidenceStore


def main(path: str, engine: str, seed: int, start: int) -> None:
    rng = random.Random(seed)
    with EvidenceStore(path, engine=engine) as store:
        seq = start
        while True:
            seq += 1
            record_id = f"r{rng.randrange(60)}"
            op = "forget" if rng.random() < 0.25 else "put"
            print(f"begin {op} {record_id} {seq}", flush=True)
            if op == "put":
                store.put(
                    tenant="crash",
                    record_id=record_id,
                    revision="v1",
                    kind="working",
                    body=f"seq {seq} " + "queue lag " * rng.randrange(1, 40),
                    source=f"crash://{seq}",
                    expires_at=10**9,
                )
            else:
                store.forget(tenant="crash", record_id=record_id)
            print("ack", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
