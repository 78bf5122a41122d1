"""Samples/s against N at equal total samples per batch (paper Table 2's layout effect, as a figure)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ..reporting.figure_points import plotted_points  # noqa: E402


def plot_samples_per_s(frame: pd.DataFrame, machine_line: str, png: Path | str, pdf: Path | str) -> int:
    """One line per (total samples, prefix caching): median samples/s with a min-max bar at each N; hollow markers
    for measurements whose repeats varied more than throughput.max_cv. An empty frame gives a figure that says so.
    Returns the data points drawn."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.1)
    fig, ax = plt.subplots(figsize=(5.2, 3.8), constrained_layout=True)
    if frame.empty:
        ax.text(
            0.5,
            0.5,
            "no two measured layouts share a total sample count\n(add one to throughput.layouts)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_axis_off()
    else:
        groups = list(frame.groupby(["samples", "prefix caching"], sort=True))
        colours = sns.color_palette("colorblind", len(groups))
        for colour, ((samples, pc), g) in zip(colours, groups):
            g = g.sort_values("n")
            label = f"{samples:,} samples/batch, prefix caching {pc}"
            ax.plot(g["n"], g["median"], "-", color=colour, label=label)
            ax.errorbar(
                g["n"],
                g["median"],
                yerr=[g["median"] - g["min"], g["max"] - g["median"]],
                fmt="none",
                ecolor=colour,
                capsize=3,
            )
            for trusted, sub in g.groupby("trusted"):
                ax.plot(sub["n"], sub["median"], "o", color=colour, markerfacecolor=colour if trusted else "white")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(frame["n"].unique()), [str(n) for n in sorted(frame["n"].unique())])
        ax.set_xlabel("samples per prompt N (prompts = total / N)")
        ax.set_ylabel("generation throughput (samples/s)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small", title="hollow: CV above max_cv", title_fontsize="x-small")
    ax.set_title(f"Throughput at equal samples per batch\n{machine_line}", fontsize="small")
    for path in (png, pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150)
    fig.savefig(pdf)
    points = plotted_points(fig)
    plt.close(fig)
    return points
