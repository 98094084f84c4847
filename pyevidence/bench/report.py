"""The benchmark's outputs: a Markdown table, a JSON file of every figure, a PNG chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import jsonout
from . import writes


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"Machine: {m['processor']}, {m['cpus']} CPUs, {m['platform']}; Python {m['python']}, "
        f"SQLite {m['sqlite_python']}; pyevidence {m['pyevidence']}; limit {results['limit']}, "
        f"seed {results['seed']}.",
        "",
        "| eligible rows | query set | python ms/query | native ms/query | floor ms/query "
        "| native speed-up over python | native / floor |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for size in results["sizes"]:
        for which, s in size["sets"].items():
            ms = s["ms_per_query"]
            lines.append(
                f"| {size['eligible_rows']:,} | {which} | {ms['python']:.3f} | {ms['native']:.3f} "
                f"| {ms['floor']:.3f} | {s['native_speedup_over_python']:.1f}x "
                f"| {s['native_over_floor']:.2f} |"
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
    if "writes" in results:
        lines += writes.markdown(results["writes"])
    lines += ["", f"Peak resident memory of the benchmark process: {largest['peak_rss_mib']:.0f} MiB."]
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> bool:
    """A log-log chart of ms/query against eligible rows; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = [s["eligible_rows"] for s in results["sizes"]]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, which in zip(axes, ("rare", "common"), strict=True):
        for p, style in (("python", "o-"), ("native", "s-"), ("floor", "^--")):
            ax.plot(sizes, [s["sets"][which]["ms_per_query"][p] for s in results["sizes"]], style, label=p)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{which} queries")
        ax.set_xlabel("eligible rows")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms per query (median)")
    axes[0].legend()
    fig.suptitle("pyevidence retrieve: Python engine, native engine, floor")
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
