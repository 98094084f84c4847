"""Load test: processes and threads writing and retrieving on one file at once.

The documented load: 3 processes x 2 threads, each with its own connection, half
puts (a fifth of them forgotten again) and half retrieves. Expected: zero errors
reach a caller (WAL plus the 5 s busy timeout absorb the lock waits), zero lost
acknowledged writes, and no retrieve returns a record outside its tenant,
revision and time. LOAD_SECONDS sets the duration (default 4).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from pyevidence import EvidenceStore, native_available

HERE = Path(__file__).resolve().parent
SECONDS = float(os.environ.get("LOAD_SECONDS", "4"))
ENGINES = ["python", "native"] if native_available() else ["python"]


def test_concurrent_processes_and_threads(tmp_path: Path) -> None:
    path = tmp_path / "load.db"
    EvidenceStore(path, engine="python").close()
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "load_worker.py"),
                str(path),
                ENGINES[p % len(ENGINES)],
                f"p{p}",
                "2",
                str(SECONDS),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(3)
    ]
    reports = []
    for worker in workers:
        out, _ = worker.communicate(timeout=SECONDS + 60)
        assert worker.returncode == 0
        reports.append(json.loads(out))
    errors = [e for r in reports for e in r["errors"]]
    violations = [v for r in reports for v in r["violations"]]
    ops = sum(r["ops"][0] for r in reports)
    assert errors == [], errors[:5]
    assert violations == [], violations[:5]
    with sqlite3.connect(path) as conn:
        present = set(conn.execute("SELECT tenant, record_id FROM evidence").fetchall())
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    forgotten = {tuple(f) for r in reports for f in r["forgets"]}
    acked = {tuple(p) for r in reports for p in r["puts"]} - forgotten
    assert acked <= present, f"{len(acked - present)} acknowledged puts are missing"
    assert not (forgotten & present), "a forgotten record came back"
    with EvidenceStore(path, engine="python", read_only=True) as store:
        for tenant in sorted({tenant for tenant, _ in present | forgotten}):
            verified = store.verify(tenant=tenant)
            assert verified.ok, f"concurrent writers broke {tenant}'s version chain: {verified.broken}"
    assert ops > 100
    print(
        f"load test: {ops} operations in {SECONDS:.0f} s by 6 threads in 3 processes"
        f" = {ops / SECONDS:,.0f} ops/s, 0 errors, {len(acked)} acknowledged puts all present"
    )
