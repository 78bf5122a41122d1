"""Figure 3 of the paper from simulation runs: Q_pos, % correct tokens improved and worst drop vs step."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ..reporting.figure_points import plotted_points  # noqa: E402
from .claims import main_family  # noqa: E402

PANELS = (
    ("q_pos", "(a) Probability mass of correct tokens", r"$Q_{pos}$"),
    ("pct_improved", "(b) Correct tokens improved vs step 0", "% of correct tokens with $p_i(t) > p_i(0)$"),
    ("worst_drop", "(c) Worst drop of a correct token", r"$\min_{i \in P}\; p_i(t) - p_i(0)$"),
)


def _palette(k: int) -> list:
    """Ordered, colour-blind-safe colours (perceptually uniform plasma, without its pale yellow end)."""
    return sns.color_palette("plasma", as_cmap=True)(np.linspace(0.0, 0.85, max(k, 1))).tolist()[:k]


def _settings_text(runs: pd.DataFrame) -> str:
    def uniq(col: str) -> str:
        vals = list(dict.fromkeys(runs[col].tolist())) if col in runs.columns else []
        return " / ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in vals) or "?"

    opt = uniq("optimizer")
    text = f"{opt}"
    if "lr" in runs.columns:
        text += f", lr {uniq('lr')}"
    if "adamw" in opt and "eps" in runs.columns:
        text += f", eps {uniq('eps')}"
    if "weight_decay" in runs.columns:
        text += f", weight decay {uniq('weight_decay')}"
    return text


def _count(x: int | None) -> str:
    return "?" if x is None else f"{x:,}"


def _linthresh(runs: pd.DataFrame) -> float:
    """Linear range of the symlog worst-drop axis: 0.1% of a correct token's initial probability."""
    start = runs[runs["step"] == 0]
    p0 = float((start["q_pos"] / start["correct"]).median()) if len(start) else float(runs["q_pos"].iloc[0])
    return 10.0 ** np.floor(np.log10(1e-3 * p0))


def plot_figure3(runs: pd.DataFrame, png: Path, pdf: Path) -> int:
    """Three panels side by side, one colour per N; line = mean over seeds, band = min..max over seeds. Returns the
    data points drawn.

    Uses the runs labelled "main" (all runs when there is none). Panel (c) has a symlog y axis whose linear
    range is 0.1% of a correct token's initial probability, so both the small-N drops (~1e-6) and the transient
    dips at the largest N (~1e-7) are visible; a dashed line marks zero.
    """
    runs = main_family(runs)
    ns = sorted(int(n) for n in runs["n"].unique())
    colours = dict(zip(ns, _palette(len(ns))))
    seeds = runs.groupby("n")["seed"].nunique()
    stats = runs.groupby(["n", "step"])[[p[0] for p in PANELS]].agg(["mean", "min", "max"])

    sns.set_theme(style="whitegrid", context="paper", font_scale=1.15)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.9), constrained_layout=True)
    thresh = _linthresh(runs)
    for ax, (col, title, ylabel) in zip(axes, PANELS):
        for n in ns:
            s = stats.loc[n][col]
            steps = s.index.to_numpy()
            ax.plot(steps, s["mean"], color=colours[n], lw=1.6, label=f"N = {n:,}")
            if seeds.get(n, 1) > 1:
                ax.fill_between(steps, s["min"], s["max"], color=colours[n], alpha=0.25, lw=0)
        ax.set_title(title)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.set_xlim(left=0)
    axes[1].set_ylim(-2, 102)
    ax = axes[2]
    ax.axhline(0.0, color="black", ls="--", lw=1.0)
    ax.set_yscale("symlog", linthresh=thresh, linscale=0.6)
    lo, hi = (
        float(stats.xs("worst_drop", axis=1, level=0)["min"].min()),
        float(stats.xs("worst_drop", axis=1, level=0)["max"].max()),
    )
    ax.set_ylim(min(lo, -thresh) * 1.6, max(hi, thresh) * 1.6)  # symlog: a factor is a fixed margin
    ax.set_ylabel(ax.get_ylabel() + f"\n(symlog; linear within $\\pm${thresh:.0e})")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="rollouts per step", frameon=False)

    vocab = int(runs["vocab"].iloc[0]) if "vocab" in runs.columns else None
    correct = int(runs["correct"].iloc[0]) if "correct" in runs.columns else None
    n_seeds = "/".join(str(int(seeds[n])) for n in ns) if seeds.nunique() > 1 else str(int(seeds.iloc[0]))
    fig.suptitle(
        f"Token-level simulation (paper Fig. 3): V = {_count(vocab)}, C = {_count(correct)} correct tokens, "
        f"{_settings_text(runs)}; mean over {n_seeds} seed(s), band = min..max",
        fontsize=12,
    )
    for path in (Path(png), Path(pdf)):
        path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150)
    fig.savefig(pdf)
    points = plotted_points(fig)
    plt.close(fig)
    return points
