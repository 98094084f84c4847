"""The benchmark runs end to end on a tiny corpus, and fails when the engines disagree."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyevidence import native_available
from pyevidence.bench import report, run
from pyevidence.bench.corpus import NOW, REVISION, TENANT, Corpus

pytestmark = pytest.mark.skipif(
    not native_available(), reason="the benchmark compares with the native engine"
)


def test_corpus_is_deterministic_and_has_the_promised_shape() -> None:
    first, second = Corpus.make(3), Corpus.make(3)
    records = list(first.records(400))
    assert records == list(second.records(400))
    eligible = [r for r in records if (r.tenant, r.revision) == (TENANT, REVISION) and r.expires_at > NOW]
    assert len(eligible) == 400 and len(records) == 500  # distractors are 20% of the table
    assert 300 < sum(len(r.body) for r in records) / len(records) < 500
    assert first.queries("rare", 5) == second.queries("rare", 5)
    assert all(3 <= len(q.split()) <= 6 for q in first.queries("common", 20))


def test_bench_writes_table_json_and_figures(tmp_path: Path) -> None:
    results = run.run([40], seed=1, puts=40, writes_of=[80, 160])
    written = report.write(results, tmp_path)
    assert {p.name for p in written} >= {"results.json", "results.md"}
    data = json.loads((tmp_path / "results.json").read_text())
    (size,) = data["sizes"]
    for which in ("rare", "common"):
        figures = size["sets"][which]
        assert set(figures["p50_ms"]) == set(figures["p99_ms"]) == set(run.PATHS)
        assert all(0 < figures["p50_ms"][p] <= figures["p99_ms"][p] for p in run.PATHS)
        # the fast paths repeat each query, so that their p99 rests on more samples
        assert figures["samples"]["index"] == run.FAST_REPEATS * figures["samples"]["scan"]
    assert "| 40 | rare |" in (tmp_path / "results.md").read_text()
    sizes = size["bytes"]
    assert 0 < sizes["pyevidence"]["token_index"] < sizes["pyevidence"]["file"] and sizes["fts5"] > 0
    assert all(ms > 0 for ms in size["single_put_p50_ms"].values())
    small, large = data["writes"]
    assert (small["records"], large["records"]) == (100, 200)
    for section in (small, large):
        assert set(section["records_per_s"]) == {"python", "native", "fts5", "plain"}
        assert all(v > 0 for v in section["records_per_s"].values())
        assert all(v > 0 for v in section["file_bytes"].values())
    text = (tmp_path / "results.md").read_text()
    assert text.count("| FTS5 insert |") == 3  # a table per size, then the two sizes side by side
    native = large["records_per_s"]["native"] / small["records_per_s"]["native"]
    assert f"| put_many, native engine | {small['records_per_s']['native']:,.0f} |" in text
    assert f"| {native:.2f} |" in text


def test_the_write_sections_peers_store_the_same_rows(tmp_path: Path) -> None:
    import sqlite3

    from pyevidence.bench import writes

    records = list(Corpus.make(2).records(40))
    for writer in ("fts5", "plain"):
        writes.WRITE[writer](tmp_path / f"{writer}.db", [records[:30], records[30:]])
        conn = sqlite3.connect(tmp_path / f"{writer}.db")
        rows = conn.execute("SELECT tenant, record_id, revision, kind, body, source, expires_at FROM records")
        assert sorted(rows) == sorted(tuple(vars(r).values()) for r in records), writer
        conn.close()


def test_bench_fails_when_the_index_and_the_scan_disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyevidence.storage.engines.native_engine import NativeEngine

    original = NativeEngine.rank_by_tokens

    def index_one_hit_short(self, *args, method):  # type: ignore[no-untyped-def]
        hits, count = original(self, *args, method=method)
        return (hits[:-1] if method == "index" else hits), count

    monkeypatch.setattr(NativeEngine, "rank_by_tokens", index_one_hit_short)
    with pytest.raises(run.BenchmarkFailed, match="the index and the scan disagree"):
        run.run([40], seed=1, puts=40)


@pytest.mark.parametrize(
    ("ratio", "words"),
    [(264.3, "264x faster"), (6.94, "6.9x faster"), (1.2, "1.2x faster"), (1.01, "same speed"),
     (0.97, "same speed"), (0.8, "1.2x slower"), (0.04, "25x slower")],
)  # fmt: skip
def test_a_ratio_is_said_faster_or_slower_as_it_is(ratio: float, words: str) -> None:
    """The table said "0.8x faster" when the index was slower than FTS5."""
    from pyevidence.bench.report import compared

    assert compared(ratio) == words


def test_bench_refuses_an_output_it_cannot_write_before_it_runs(tmp_path: Path) -> None:
    """--out naming a file failed with "File exists" after the whole run, its figures lost."""
    (tmp_path / "taken").write_text("x")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", "bench", "--sizes", "100000", "--out", str(tmp_path / "taken")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"pyevidence: error: out: {tmp_path / 'taken'} is not a directory; name a directory for the results\n"
    )
    assert time.monotonic() - started < 60  # refused at once: 100,000 rows take minutes
