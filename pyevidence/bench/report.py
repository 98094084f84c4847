"""The benchmark's outputs: a Markdown table, a JSON file of every figure, a PNG chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import jsonout
from . import writes


def compared(ratio: float) -> str:
    """A ratio of the other path's time to the index's, in words that stay true below 1:
    "2.5x faster", "1.3x slower", "same speed" (equal to one decimal)."""
    value, word = (ratio, "faster") if ratio >= 1 else (1 / ratio, "slower")
    shown = f"{value:,.0f}" if value >= 10 else f"{value:.1f}"
    return "same speed" if shown == "1.0" else f"{shown}x {word}"


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"Machine: {m['processor']}, {m['cpus']} CPUs, {m['platform']}; Python {m['python']}, "
        f"SQLite {m['sqlite_python']}; pyevidence {m['pyevidence']}; limit {results['limit']}, "
        f"seed {results['seed']}. Milliseconds per query, p50 / p99.",
        "",
        "| eligible rows | query set | index | scan | python | floor | FTS5 "
        "| index vs FTS5 | index vs scan |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in results["sizes"]:
        for which, s in size["sets"].items():
            p50, p99 = s["p50_ms"], s["p99_ms"]
            cells = " | ".join(
                f"{p50[p]:.2f} / {p99[p]:.2f}" for p in ("index", "scan", "python", "floor", "fts5")
            )
            lines.append(
                f"| {size['eligible_rows']:,} | {which} | {cells} "
                f"| {compared(s['index_faster_than_fts5'])} | {compared(s['index_faster_than_scan'])} |"
            )
    lines += [
        "",
        "| eligible rows | pyevidence file | its records | its token index | FTS5 file "
        "| single put p50, native | single put p50, python |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in results["sizes"]:
        b, put = size["bytes"], size["single_put_p50_ms"]
        ours = b["pyevidence"]
        lines.append(
            f"| {size['eligible_rows']:,} | {_mib(ours['file'])} | {_mib(ours['records'])} "
            f"| {_mib(ours['token_index'])} | {_mib(b['fts5'])} "
            f"| {put['native']:.2f} ms | {put['python']:.2f} ms |"
        )
    lines += [
        "",
        "| engine | put() records/s | put_many() records/s | open ms (largest size) |",
        "|---|---:|---:|---:|",
    ]
    largest = results["sizes"][-1]
    for engine, p in results["puts"].items():
        lines.append(
            f"| {engine} | {p['put_per_s']:,.0f} | {p['put_many_per_s']:,.0f} "
            f"| {largest['open_ms'][engine]:.2f} |"
        )
    for figures in results.get("writes", []):
        lines += writes.markdown(figures)
    lines += writes.scale_markdown(results.get("writes", []))
    lines += ["", f"Peak resident memory of the benchmark process: {largest['peak_rss_mib']:.0f} MiB."]
    return "\n".join(lines) + "\n"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def chart(results: dict[str, Any], path: Path) -> bool:
    """A log-log chart of p50 ms/query against eligible rows; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = [s["eligible_rows"] for s in results["sizes"]]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    styles = (("index", "D-"), ("fts5", "v-"), ("python", "o-"), ("scan", "s-"), ("floor", "^--"))
    for ax, which in zip(axes, ("rare", "common"), strict=True):
        for p, style in styles:
            ax.plot(sizes, [s["sets"][which]["p50_ms"][p] for s in results["sizes"]], style, label=p)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{which} queries")
        ax.set_xlabel("eligible rows")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms per query (p50)")
    axes[0].legend()
    fig.suptitle("pyevidence retrieve: token index, scan, Python engine, floor, FTS5")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write(results: dict[str, Any], outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    written = [outdir / "results.json", outdir / "results.md"]
    written[0].write_text(jsonout.dumps(results))
    written[1].write_text(markdown(results))
    if chart(results, outdir / "chart.png"):
        written.append(outdir / "chart.png")
    return written
