"""A put / retrieve / forget loop on the native engine, for valgrind (make test-leaks),
with vectors: sqlite-vec loaded into the connection, vector and hybrid ranking.

Run under valgrind with PYTHONMALLOC=malloc; any "definitely lost" block whose
stack passes through pyevidence's C code is a leak in the native engine.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from pyevidence import Embedder, EvidenceStore, HybridScorer, SchemaError, StoreError, VectorScorer


class Length:
    def score(self, query: str, body: str) -> int:
        return len(body)


def toy_vector(text: str) -> list[float]:
    return [float(len(text) % 7 + 1), 1.0, float(text.count("q"))]


EMBEDDER = Embedder("toy", toy_vector)


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leak.db"
        for _ in range(2):  # open twice: reopen and close paths too
            with EvidenceStore(path, engine="native", embedder=EMBEDDER) as store:
                for n in range(rounds):
                    store.put(
                        tenant="t",
                        record_id=f"r{n % 50}",
                        revision="v",
                        kind="working",
                        body=f"queue lag \x00 İ {n}",
                        source="s",
                        expires_at=n,
                    )
                    store.retrieve(tenant="t", revision="v", query="queue lag", now=n // 2, limit=10)
                    store.retrieve(tenant="t", revision="v", query="q", now=0, scorer=Length())
                    for scorer in (VectorScorer(EMBEDDER), HybridScorer(EMBEDDER)):
                        store.retrieve(tenant="t", revision="v", query="queue", now=n // 2, scorer=scorer)
                    store.query("SELECT ?, ?, ?, ?", [1, 2.5, "x", b"\x00"])
                    if n % 7 == 0:
                        store.forget(tenant="t", record_id=f"r{n % 50}")
                try:
                    store.query("SELECT * FROM no_such_table")
                except StoreError:
                    pass
        (Path(tmp) / "junk.db").write_bytes(b"not a database" * 100)
        try:
            EvidenceStore(Path(tmp) / "junk.db", engine="native")
        except SchemaError:
            pass


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
