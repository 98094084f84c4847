"""make test-leaks: the native engine under valgrind, driven from Python.

Runs tests/leakcheck.py (a put / retrieve / forget loop) under memcheck at two
sizes and fails when
  - any error or leak record has a frame in pyevidence's C sources, or
  - the definitely-lost total grows with the number of operations: by GROWTH_LIMIT
    bytes or more over the 200 extra rounds.
Python and cffi keep a few interpreter-lifetime blocks that valgrind calls
"definitely lost", about 3,600 bytes. They are nearly the same at every size, so the
second rule is what catches a leak per call, wherever it is. "Nearly": in two clean-clone
CI runs the 40-round run lost 3,543 bytes and the 240-round run 3,599, and a run by hand
of the same tree lost 3,599 in both, so a fixed at-exit block can come and go. A leak per
call grows with the rounds instead: the loop's rarest path (forget) runs every 7th round,
so even an 8-byte block lost there is 28 blocks, 224 bytes, over 200 rounds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUR_SOURCES = re.compile(r"\((evidence_\w+\.c|run_sql_tests\.c):\d+\)")
LOST = re.compile(r"definitely lost: ([\d,]+) bytes")
GROWTH_LIMIT = 200  # bytes over 200 more rounds: one a round; see the docstring


def run(rounds: int) -> tuple[int, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "valgrind.log"
        env = dict(os.environ, PYTHONMALLOC="malloc", PYTHONHASHSEED="0")  # both runs alike
        subprocess.run(
            [
                "valgrind",
                "--leak-check=full",
                "--show-leak-kinds=definite",
                f"--log-file={log}",
                sys.executable,
                str(HERE / "leakcheck.py"),
                str(rounds),
            ],
            env=env,
            check=True,
        )
        text = log.read_text()
    records = re.split(r"\n==\d+== \n", text)
    ours = [record for record in records if OUR_SOURCES.search(record)]
    lost = LOST.search(text)
    return (int(lost.group(1).replace(",", "")) if lost else 0), ours


def main() -> int:
    small_lost, small_ours = run(40)
    large_lost, large_ours = run(240)
    print(f"valgrind: definitely lost {small_lost} bytes after 40 rounds, {large_lost} after 240")
    failed = False
    for record in small_ours + large_ours:
        print("valgrind record in pyevidence C code:\n" + record)
        failed = True
    if large_lost - small_lost >= GROWTH_LIMIT:
        print(f"leak: {large_lost - small_lost} more bytes lost with 200 more rounds")
        failed = True
    elif large_lost != small_lost:
        grew = large_lost - small_lost
        print(f"note: {grew:+} bytes with 200 more rounds, below {GROWTH_LIMIT}: not a leak per call")
    print("valgrind leak check: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
