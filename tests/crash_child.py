"""Child process for tests/test_crash.py: streams puts, forgets and batches until it is killed.

Before each operation it prints "begin <op> <id> <seq>", after the call returns
(the write is committed) "ack"; each line is flushed, so whatever the parent
has read was said before the kill. A batch ("begin batch - <seq>") is one put_many of
BATCH_RECORDS records b0, b1, ... (the same ids each time), large enough that it runs
with the schema's triggers and CHECKs off (docs/design.md, "Large batches run unchecked").
"""

from __future__ import annotations

import random
import sys

from pyevidence import EvidenceStore

BATCH_RECORDS = 300


def batch_source(seq: int, k: int) -> str:
    return f"crash://{seq}/{k}"


def main(path: str, engine: str, seed: int, start: int) -> None:
    rng = random.Random(seed)
    with EvidenceStore(path, engine=engine) as store:
        seq = start
        while True:
            seq += 1
            record_id = f"r{rng.randrange(60)}"
            draw = rng.random()
            op = "forget" if draw < 0.25 else "batch" if draw < 0.3 else "put"
            print(f"begin {op} {'-' if op == 'batch' else record_id} {seq}", flush=True)
            if op == "batch":
                store.put_many(
                    [
                        dict(
                            tenant="crash",
                            record_id=f"b{k}",
                            revision="v1",
                            kind="working",
                            body=f"batch {seq} record {k} queue lag",
                            source=batch_source(seq, k),
                            expires_at=10**9,
                        )
                        for k in range(BATCH_RECORDS)
                    ]
                )
            elif op == "put":
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
