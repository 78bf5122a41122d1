"""The probe's figure in the style of Figure 3's panels, measured on the LLM: (a) the mean pass rate of the probes
(Figure 3a's Q_pos), (b) the share of probes improved since the start (Figure 3b's measure, beyond the noise), (c) the
share shrunk since the start (knowledge shrinkage), (d) the worst drop of one probe since the start (Figure 3c's); one
colour per arm, against the arm's continued step."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ..analysis.figures import save_figure, scale_note  # noqa: E402

PANELS = (  # column, title, y label (all drawn in percent or points)
    ("mean_pass_rate", "(a) Mean pass rate of the probes", "pass rate (%), 95% band of the sampling"),
    ("rose_since_start", "(b) Probes improved since the start", "% of probes (rose by > {z:g} SE)"),
    ("fell_since_start", "(c) Probes shrunk since the start", "% of probes (fell by > {z:g} SE)"),
    ("worst_drop", "(d) Worst drop of one probe since the start", "min over probes of rate(t) - rate(0) (points)"),
)


def plot_probe(trajectory: pd.DataFrame, labels: Mapping[str, str], z: float, engine: str, png: Path, pdf: Path) -> int:
    """Four panels side by side from arm_trajectory's rows of every arm; returns the data points drawn."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.1)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(20, 4.6), constrained_layout=True)
    arms = list(dict.fromkeys(trajectory["arm"]))
    colours = dict(zip(arms, sns.color_palette("colorblind", len(arms))))
    for arm in arms:
        t = trajectory[trajectory["arm"] == arm].sort_values("step")
        for ax, (col, _, _) in zip(axes, PANELS):
            ax.plot(t["step"], 100 * t[col], marker="o", color=colours[arm], label=labels.get(arm, arm))
        band = 100 * 1.96 * t["mean_se"]
        mean = 100 * t["mean_pass_rate"]
        axes[0].fill_between(t["step"], mean - band, mean + band, color=colours[arm], alpha=0.2, linewidth=0)
    for ax, (_, title, ylabel) in zip(axes, PANELS):
        ax.set_title(title)
        ax.set_xlabel("continued RL step")
        ax.set_ylabel(ylabel.format(z=z))
    for ax in axes[:3]:
        ax.set_ylim(0, 100)
    samples, probes = int(trajectory["samples"].iloc[0]), int(trajectory["probes"].iloc[0])
    axes[3].axhline(0, color="grey", linewidth=1, linestyle=":")
    # the noise of one probe's change at a pass rate of 1/2, the worst case: a drop above this line can be chance
    noise = -100 * z * math.sqrt(2 * 0.25 / samples)
    axes[3].axhline(noise, color="grey", linewidth=1, linestyle="--", label=f"{z:g} SE of one probe's change")
    axes[3].legend(loc="best", fontsize=8)
    axes[0].legend(loc="best", fontsize=8)
    fig.suptitle(
        f"Mass-balance probe: {probes} fixed problems x {samples} samples at the rollout temperature, every saved step"
    )
    return save_figure(fig, png, pdf, scale_note(engine))


CHANGE_STYLE = {  # the probes of one arm by their change from the start to the arm's last probed step
    "fell": dict(color="#d62728", alpha=0.8, linewidth=1.2),
    "rose": dict(color="#1f77b4", alpha=0.6, linewidth=1.0),
    "within noise": dict(color="grey", alpha=0.25, linewidth=0.8),
}


def plot_probe_arms(
    rates: pd.DataFrame, changes: Mapping[str, pd.Series], labels: Mapping[str, str], engine: str, png: Path, pdf: Path
) -> int:
    """One panel per arm: every probe's pass rate against the step (the start as step 0), coloured by its change
    from the start to the arm's last probed step, with the mean over the probes in black; returns the points drawn."""
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.1)
    arms = list(changes)
    fig, axes = plt.subplots(1, len(arms), figsize=(5.5 * len(arms), 4.6), constrained_layout=True, squeeze=False)
    for ax, arm in zip(axes[0], arms):
        own = rates[rates["arm"] == arm].sort_values("step")
        counts = changes[arm].value_counts()
        for change, style in reversed(CHANGE_STYLE.items()):  # the fallen probes drawn last, on top
            for i, probe in enumerate(changes[arm].index[changes[arm] == change]):
                line = own[own["id"] == probe]
                name = f"{change} ({counts.get(change, 0)})" if i == 0 else None
                ax.plot(line["step"], 100 * line["pass_rate"], label=name, **style)
        mean = own.groupby("step")["pass_rate"].mean()
        ax.plot(mean.index, 100 * mean.to_numpy(), color="black", linewidth=2.2, marker="o", label="mean")
        ax.set_title(labels.get(arm, arm))
        ax.set_xlabel("continued RL step")
        ax.set_ylabel("pass rate of one probe (%)")
        ax.set_ylim(0, 100)
        ax.legend(loc="best", fontsize=8)
    fig.suptitle("Mass-balance probe: every probe's pass rate, by its change from the start to the last step")
    return save_figure(fig, png, pdf, scale_note(engine))


def plot_in_batch(
    rates: pd.DataFrame, rows: pd.DataFrame, labels: Mapping[str, str], z: float, engine: str, png: Path, pdf: Path
) -> int:
    """One panel per arm: each probed prompt's pass rate just after its step's update against just before (the
    diagonal: no change), updated prompts filled, the rest hollow, those that fell beyond ``z`` SE in red; one marker
    shape per step. Returns the points drawn."""
    from .rates import moved

    sns.set_theme(style="whitegrid", context="paper", font_scale=1.1)
    arms = list(dict.fromkeys(rows["arm"]))
    fig, axes = plt.subplots(1, len(arms), figsize=(5.2 * len(arms), 5.0), constrained_layout=True, squeeze=False)
    markers = dict(zip(sorted(set(rows["step"])), "os^Dv<>P*X"))
    for ax, arm in zip(axes[0], arms):
        for row in rows[rows["arm"] == arm].itertuples():
            sides = {
                side: rates[(rates["arm"] == arm) & (rates["step"] == row.step) & (rates["side"] == side)].reset_index()
                for side in ("before", "after")
            }
            fell, _ = moved(sides["before"], sides["after"], z)
            x, y = 100 * sides["before"]["pass_rate"], 100 * sides["after"]["pass_rate"]
            updated = row.updated
            colour = ["#d62728" if f else "#1f77b4" for f in fell]
            ax.scatter(
                x[:updated],
                y[:updated],
                c=colour[:updated],
                marker=markers[row.step],
                alpha=0.7,
                label=f"step {row.step}: {row.fell_updated} of {row.updated} updated fell",
            )
            ax.scatter(
                x[updated:],
                y[updated:],
                facecolors="none",
                edgecolors=colour[updated:],
                marker=markers[row.step],
                alpha=0.5,
            )
        ax.plot([0, 100], [0, 100], color="grey", linestyle=":", linewidth=1)
        ax.set_xlim(-2, 102)
        ax.set_ylim(-2, 102)
        ax.set_title(labels.get(arm, arm))
        ax.set_xlabel("pass rate just before the step's update (%)")
        ax.set_ylabel("pass rate just after it (%)")
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        f"In-batch probe: each step's own prompts before and after its update\n(filled: updated; red: fell by > {z:g} "
        "SE; hollow: all right or all wrong at the step)",
        fontsize=10,
    )
    return save_figure(fig, png, pdf, scale_note(engine))
