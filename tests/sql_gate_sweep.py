"""Child process of test_sql_gate.py's sweep: calls every function and every pragma the
linked SQLite (plus pyevidence and, when installed, sqlite-vec) offers through
store.query(), reads every virtual-table module as a table, and prints what happened to
each as JSON. A crash kills only this
process, and the test reports it.

    python tests/sql_gate_sweep.py STORE.db
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

from pyevidence import EvidenceStore, StoreError

# Arguments to call functions with: each value repeated, and a mixed row.
VALUES: list[Any] = [None, 1, -3, 2.5, "a", "simple", "[1,2]", b"\x00\x00\x80\x3f", "2024-01-01", 10**4]
OPERATORS = {"->", "->>"}
# Functions that refuse every generic argument row: one call each that they accept.
SENSIBLE_CALLS = {
    "likelihood": "SELECT likelihood(1, 0.5)",
    "match": "SELECT rowid FROM notes WHERE notes MATCH 'queue'",
    "vec_distance_hamming": "SELECT vec_distance_hamming(vec_bit(x'ff'), vec_bit(x'0f'))",
    "vec_quantize_binary": "SELECT vec_quantize_binary(vec_f32('[1, -1, 2, -2, 0, 1, 1, -1]'))",
    "vec_quantize_int8": "SELECT vec_quantize_int8(vec_f32('[0.5, -0.5]'), 'unit')",
    "vec_slice": "SELECT vec_slice(vec_f32('[1, 2, 3]'), 0, 2)",
    "evidence_docset_with": "SELECT evidence_docset_with(NULL, 7)",
    "evidence_docset_without": "SELECT evidence_docset_without(x'07000900', 7)",
    "evidence_eligible_count": "SELECT evidence_eligible_count('team-a', 'v1', 0)",
}


def mapped_ranges() -> list[tuple[int, int]]:
    """The address ranges mapped into this process (Linux), sorted: to spot a leaked pointer."""
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        low, high = line.split()[0].split("-")
        ranges.append((int(low, 16), int(high, 16)))
    return sorted(ranges)


def pointer_like(value: Any, ranges: list[tuple[int, int]]) -> bool:
    """Whether value holds an address inside this process: an integer, or any 8 bytes of a
    blob or text read as a little- or big-endian 64-bit number."""
    numbers: list[int] = []
    if isinstance(value, int):
        numbers.append(value)
    elif isinstance(value, (bytes, str)):
        data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
        for i in range(len(data) - 7):
            numbers += [int.from_bytes(data[i : i + 8], "little"), int.from_bytes(data[i : i + 8], "big")]
    lows = [low for low, _ in ranges]
    for n in numbers:
        i = bisect.bisect_right(lows, n) - 1
        if n > 0xFFFF and i >= 0 and n < ranges[i][1]:
            return True
    return False


def digest(path: Path) -> str:
    """The database file and its write-ahead log (readers may touch the -shm index only)."""
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")]
    return ",".join(hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.exists())


def function_calls(name: str, kind: str, n_args: int) -> list[tuple[str, list[Any]]]:
    over = " OVER ()" if kind == "w" else ""
    counts = [n_args] if n_args >= 0 else [0, 1, 2, 3]
    calls = [(SENSIBLE_CALLS[name], [])] if name in SENSIBLE_CALLS else []
    for n in counts:
        rows = [[v] * n for v in VALUES] + [[VALUES[(i * 3 + 1) % len(VALUES)] for i in range(n)]]
        for args in rows:
            if name in OPERATORS:
                if n != 2:
                    continue
                calls.append((f"SELECT ? {name} ?", args))
            else:
                marks = ", ".join("?" * n)
                calls.append((f'SELECT "{name}"({marks}){over}', args))
    return calls


def pragma_calls(name: str) -> list[str]:
    return [
        f"PRAGMA {name}",
        f"PRAGMA {name} = 1",
        f"PRAGMA {name}(evidence)",
        f"SELECT * FROM pragma_{name}",
        f"SELECT * FROM pragma_{name}('evidence')",
    ]


def outcome(store: EvidenceStore, sql: str, params: list[Any], ranges: list[tuple[int, int]]) -> str:
    """ "ran", "error: ..." (an ordinary SQL error), or "refused: ..." (the gate's message)."""
    try:
        rows = store.query(sql, params).rows
    except StoreError as exc:
        text = str(exc)
        gate = "is not allowed in read-only SQL" in text or "only read-only statements" in text
        return f"{'refused' if gate else 'error'}: {text}"
    leaked = [v for row in rows for v in row if pointer_like(v, ranges)]
    return f"leaked a pointer: {leaked!r}" if leaked else "ran"


def main(path: Path) -> None:
    report: dict[str, Any] = {"functions": {}, "pragmas": {}, "modules": {}, "sqlite_vec": False}
    with EvidenceStore(path, engine="native") as store:
        store.put(
            tenant="team-a",
            record_id="r1",
            revision="v1",
            kind="runbook",
            body="queue lag",
            source="s",
            expires_at=9,
        )
        store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)  # gives PRAGMA optimize work
    with EvidenceStore(path, engine="native") as store:
        # An FTS3 table, the target of fts3_tokenizer's pointer. A store file holding one is
        # refused on open, so another connection adds it while the store is open.
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE VIRTUAL TABLE notes USING fts3(body)")
            conn.execute("INSERT INTO notes VALUES ('queue lag')")
        conn.close()
        engine: Any = store._engine
        try:
            engine._load_sqlite_vec()
            report["sqlite_vec"] = True
        except Exception:  # sqlite-vec is not installed: there are no vec_* functions to sweep
            pass
        ranges = mapped_ranges()
        settings_sql = (
            "SELECT * FROM pragma_cache_size, pragma_query_only, pragma_foreign_keys, pragma_busy_timeout"
        )
        report["settings_before"] = [list(row) for row in store.query(settings_sql).rows]
        functions = store.query(
            "SELECT DISTINCT name, type, narg FROM pragma_function_list ORDER BY 1, 3"
        ).rows
        before = digest(path)
        for name, kind, n_args in functions:
            results = report["functions"].setdefault(name, [])
            for sql, params in function_calls(name, kind, n_args):
                results.append([sql, repr(params), outcome(store, sql, params, ranges)])
            if digest(path) != before:
                results.append(["", "", "wrote to the database"])
                before = digest(path)
        for (name,) in store.query("SELECT name FROM pragma_pragma_list ORDER BY 1").rows:
            results = report["pragmas"].setdefault(name, [])
            for sql in pragma_calls(name):
                results.append([sql, "[]", outcome(store, sql, [], ranges)])
                if digest(path) != before:
                    results[-1][2] = "wrote to the database"
                    before = digest(path)
        # Every virtual-table module read as a table: the eponymous ones answer, or are
        # refused; the others are not tables at all ("no such table").
        for (name,) in store.query("SELECT name FROM pragma_module_list ORDER BY 1").rows:
            if not name.startswith("pragma_"):  # the pragmas' tables, swept above
                sql = f'SELECT * FROM "{name}" LIMIT 3'
                report["modules"][name] = outcome(store, sql, [], ranges)
                if digest(path) != before:
                    report["modules"][name] = "wrote to the database"
                    before = digest(path)
        report["settings_after"] = [list(row) for row in store.query(settings_sql).rows]
        # Controls: the detectors work. Ungated (the store's own path), fts3_tokenizer
        # returns a pointer and a pragma with a value writes.
        ((pointer,),) = engine.run("SELECT fts3_tokenizer('simple')", [], read_only=False)[1]
        report["control_pointer_detected"] = pointer_like(pointer, ranges)
        engine.run("PRAGMA user_version = 7", [], read_only=False)
        report["control_write_detected"] = digest(path) != before
    print(json.dumps(report))


def allow_lists(source: str) -> tuple[set[str], set[str], set[str]]:
    """The function, pragma and table allow-lists, read from the one C array each
    (evidence_store.c)."""
    functions = re.search(r"azReadOnlyFunction\[\] = \{(.*?)\};", source, re.S)
    pragmas = re.search(r"aReadOnlyPragma\[\] = \{(.*?)\};", source, re.S)
    tables = re.search(r"azReadOnlyTable\[\] = \{(.*?)\};", source, re.S)
    assert functions and pragmas and tables, "the allow-lists moved: update tests/sql_gate_sweep.py"

    def names(text: str) -> set[str]:
        return set(re.findall(r'"([^"]+)"', re.sub(r"/\*.*?\*/", "", text, flags=re.S)))

    return names(functions.group(1)), names(pragmas.group(1)), names(tables.group(1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
