"""Figures 1 and 4 and the N-sweep figure (seaborn style, PNG and PDF). Inputs are the frames of trajectories.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from .paper import FAMILIES, FAMILY_LABELS  # noqa: E402


def _save(fig, png: Path, pdf: Path) -> None:
    for path in (png, pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)


def _with_start(frame: pd.DataFrame, arms: Sequence[str], base_arm: str, start_step: int) -> pd.DataFrame:
    """Each arm's rows plus the start checkpoint's as its step-0 point (both arms start from it)."""
    parts = []
    start = frame[(frame["arm"] == base_arm) & (frame["step"] == start_step)]
    for arm in arms:
        own = frame[frame["arm"] == arm]
        parts.append(pd.concat([start.assign(arm=arm, step=0, hours=0.0), own]))
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[:0]


def plot_figure1(family: pd.DataFrame, arms: Sequence[str], labels: Mapping[str, str], base_arm: str,
                 start_step: int, png: Path, pdf: Path) -> None:  # fmt: skip
    """One panel per family: pass@1 (%) against training hours, one line per arm with its bootstrap CI band."""
    data = _with_start(family, arms, base_arm, start_step)
    fams = [f for f in FAMILIES if f in set(data["family"])] or ["math"]
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, len(fams), figsize=(4.2 * len(fams), 3.4), squeeze=False)
    colours = dict(zip(arms, sns.color_palette("colorblind", len(arms))))
    for ax, fam in zip(axes[0], fams):
        for arm in arms:
            d = data[(data["arm"] == arm) & (data["family"] == fam)].sort_values("hours")
            if d.empty or d["hours"].isna().all():
                continue
            ax.plot(d["hours"], 100 * d["pass1"], marker="o", color=colours[arm], label=labels.get(arm, arm))
            if "ci_low" in d:
                ax.fill_between(d["hours"], 100 * d["ci_low"], 100 * d["ci_high"], color=colours[arm], alpha=0.2)
        ax.set_title(FAMILY_LABELS[fam])
        ax.set_xlabel("training hours")
        ax.set_ylabel("pass@1 (%)")
    handles, names = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="upper center", ncol=len(names), bbox_to_anchor=(0.5, 1.08))
    _save(fig, png, pdf)


def figure4_tasks(tasks: pd.DataFrame, paper_tasks: Sequence[str], limit: int = 9) -> tuple[list[str], bool]:
    """The tasks to show: the paper's that were evaluated (True), else the first ``limit`` evaluated ones (False)."""
    present = set(tasks["task"])
    shown = [t for t in paper_tasks if t in present]
    if shown:
        return shown, True
    return sorted(present)[:limit], False


def plot_figure4(tasks: pd.DataFrame, shown: Sequence[str], from_paper: bool, arms: Sequence[str],
                 labels: Mapping[str, str], base_arm: str, start_step: int, png: Path, pdf: Path) -> None:  # fmt: skip
    """A grid of per-task pass@1 (%) against continued steps, one line per arm."""
    data = _with_start(tasks.assign(hours=np.nan), arms, base_arm, start_step)
    sns.set_theme(style="whitegrid", context="paper")
    cols = min(3, max(1, len(shown)))
    nrows = max(1, -(-len(shown) // cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols, 2.8 * nrows), squeeze=False)
    colours = dict(zip(arms, sns.color_palette("colorblind", len(arms))))
    for ax, task in zip(axes.flat, shown):
        for arm in arms:
            d = data[(data["arm"] == arm) & (data["task"] == task)].sort_values("step")
            if not d.empty:
                ax.plot(d["step"], 100 * d["pass1"], marker="o", color=colours[arm], label=labels.get(arm, arm))
        ax.set_title(task)
        ax.set_xlabel("continued RL steps")
        ax.set_ylabel("pass@1 (%)")
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    where = "tasks shown in the paper" if from_paper else "the paper's tasks were not evaluated here: available tasks"
    fig.suptitle(f"Per-task pass@1 ({where})", y=1.02)
    handles, names = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="lower center", ncol=len(names), bbox_to_anchor=(0.5, -0.06))
    _save(fig, png, pdf)


def plot_n_sweep(family: pd.DataFrame, sweep: Sequence[Mapping], step: int, png: Path, pdf: Path) -> None:
    """Family pass@1 (%) at ``step`` against N (log2 axis) over the sweep arms (name, n), with bootstrap CIs."""
    rows = []
    for arm in sweep:
        d = family[(family["arm"] == arm["name"]) & (family["step"] == step)]
        rows += [{**r, "N": arm["n"]} for r in d.to_dict("records")]
    data = pd.DataFrame(rows)
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for fam, colour in zip(FAMILIES, sns.color_palette("colorblind", 3)):
        d = data[data["family"] == fam].sort_values("N") if len(data) else data
        if d.empty:
            continue
        err = None
        if "ci_low" in d:
            err = np.vstack([100 * (d["pass1"] - d["ci_low"]), 100 * (d["ci_high"] - d["pass1"])])
        ax.errorbar(d["N"], 100 * d["pass1"], yerr=err, marker="o", capsize=3, color=colour, label=FAMILY_LABELS[fam])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rollouts per prompt N")
    ax.set_ylabel(f"pass@1 (%) at continued step {step}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    _save(fig, png, pdf)
