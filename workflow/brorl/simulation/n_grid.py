"""The simulation over a fine N grid: is the gain in correct-token mass monotonic and concave in N (pure + figure)?

The paper's Appendix A suggests the gains are monotonic but concave in N and asks for intermediate N. Here, per N
(mean over seeds, final step T): gain = Q_pos(T) - Q_pos(0), % of correct tokens improved, worst drop. Monotonic:
the gain rises with every larger N. Concave in log N: the gain per doubling of N never grows from one grid interval
to the next (slopes against log2 N non-increasing, up to ``tol``), i.e. diminishing returns to more rollouts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .claims import final_rows


def n_grid_table(runs: pd.DataFrame) -> pd.DataFrame:
    """N, seeds, gain, % improved, worst drop, and the slope of the gain per doubling of N from the previous N."""
    finals = final_rows(runs)
    finals["gain"] = finals["q_pos"] - finals["q_pos0"]
    by_n = finals.groupby("n").agg(
        seeds=("seed", "nunique"),
        gain=("gain", "mean"),
        pct_improved=("pct_improved", "mean"),
        worst_drop=("worst_drop", "mean"),
    )
    by_n = by_n.sort_index().reset_index().rename(columns={"n": "N"})
    log_n = np.log2(by_n["N"].to_numpy(dtype=float))
    slopes = np.diff(by_n["gain"].to_numpy()) / np.diff(log_n)
    by_n["gain per doubling"] = np.concatenate([[np.nan], slopes])
    return by_n


def shape_verdict(table: pd.DataFrame, tol: float = 0.0) -> dict:
    """{'monotonic': bool, 'concave_in_log_n': bool, 'first_non_concave_N': int | None} of an n_grid_table."""
    gains = table["gain"].to_numpy()
    slopes = table["gain per doubling"].to_numpy()[1:]
    rising = bool(np.all(np.diff(gains) > 0))
    bad = [i for i in range(1, len(slopes)) if slopes[i] > slopes[i - 1] + tol]
    first = int(table["N"].iloc[bad[0] + 1]) if bad else None
    return {"monotonic": rising, "concave_in_log_n": not bad, "first_non_concave_N": first}


def plot_n_grid(table: pd.DataFrame, verdict: dict, marked: list[int], png: Path, pdf: Path) -> int:
    """Gain in Q_pos at the final step against N (log2 axis); the training sweep's N values marked. Returns the data
    points drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figure_points import plotted_points

    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5.2, 3.4), layout="constrained")
    ax.plot(table["N"], table["gain"], marker="o", color=sns.color_palette("colorblind")[0], label="simulation")
    hit = table[table["N"].isin(marked)]
    if len(hit):
        ax.scatter(hit["N"], hit["gain"], s=80, facecolors="none", edgecolors="black", label="N of the training sweep")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rollouts per step N")
    ax.set_ylabel(r"$Q_{pos}(T) - Q_{pos}(0)$")
    ax.set_title(
        f"gain in N: monotonic {'yes' if verdict['monotonic'] else 'no'}, concave in log N "
        f"{'yes' if verdict['concave_in_log_n'] else 'no'}",
        loc="left",
    )
    ax.legend()
    for path in (png, pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150)
    points = plotted_points(fig)
    plt.close(fig)
    return points
