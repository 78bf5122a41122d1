"""Figures 1 and 4 and the N-sweep figure (seaborn style, PNG and PDF). Inputs are the frames of checkpoints.py.

As in the paper, Figure 1 is the Math score against training hours (every family: ``families=FAMILIES``, an extra
figure), and Figure 4 plots per-task pass@1 against training hours with one row per trajectory pattern (tasks.py).
Bands and error bars are the 95% intervals of the frames (``ci_low``, ``ci_high``: pass@1 +- 1.96 se over problems,
the tables' error bars); a point without one (a task of one problem) has no band there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ..reporting.figure_points import plotted_points  # noqa: E402
from .paper import FAMILIES, FAMILY_LABELS, is_tiny_scale  # noqa: E402
from .tasks import PATTERNS  # noqa: E402


def scale_note(engine: str) -> str:
    """The subtitle every figure carries: which run it shows, so a tiny CPU curve is never read as the paper's."""
    if is_tiny_scale(engine):
        return "tiny CPU run (embedded engine, tiny model): checks the pipeline, not comparable with the paper"
    return "paper-scale run (OpenRLHF engine)"


def _pass_rate_axis(ax) -> None:
    """A pass-rate axis stays within 0-100 %, with room above the highest point (never -0.04..0.04 for zeros)."""
    top = max((float(np.nanmax(y)) for y in (line.get_ydata() for line in ax.get_lines()) if len(y)), default=0.0)
    ax.set_ylim(0, min(100.0, max(5.0, 1.15 * top + 2)))


def _equal_time(ax, hours: float | None) -> None:
    """The equal-compute point (analysis.equal_time_hours: where the arms are compared and Figure 4's patterns are
    decided) as a dashed vertical line; nothing when it is null (final checkpoints)."""
    if hours is not None:
        ax.axvline(hours, linestyle="--", color="grey", linewidth=1, label=f"equal compute ({hours:g} h)")


def save_figure(fig, png: Path, pdf: Path, note: str) -> int:
    """Subtitle, PNG and PDF; returns the data points drawn (0: an empty figure, which the CLI reports)."""
    fig.text(0.5, -0.02, note, ha="center", va="top", fontsize=8, style="italic")
    points = plotted_points(fig)
    for path in (png, pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return points


def _with_start(frame: pd.DataFrame, arms: Sequence[str], base_arm: str, start_step: int) -> pd.DataFrame:
    """Each arm's rows plus the start checkpoint's as its step-0 point (both arms start from it)."""
    parts = []
    start = frame[(frame["arm"] == base_arm) & (frame["step"] == start_step)]
    for arm in arms:
        own = frame[frame["arm"] == arm]
        parts.append(pd.concat([start.assign(arm=arm, step=0, hours=0.0), own]))
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[:0]


def _band(ax, d: pd.DataFrame, colour) -> None:
    """The 95% interval of ``d`` (sorted by hours) as a shaded band, where it is defined."""
    if "ci_low" in d:
        ax.fill_between(d["hours"], 100 * d["ci_low"], 100 * d["ci_high"], color=colour, alpha=0.2, linewidth=0)


def paper_points(table1: Sequence[Mapping], family: str) -> dict[str, list[tuple[float, float]]]:
    """The paper's published (training hours, score %) of `family` per role (control, treatment), from its Table 1;
    the baseline row is each role's point at 0 h."""
    base = next((r for r in table1 if r["role"] == "base"), None)
    points: dict[str, list[tuple[float, float]]] = {}
    for role in ("control", "treatment"):
        rows = [r for r in table1 if r["role"] == role and r.get("time_h") is not None]
        start = [(0.0, float(base[family]))] if base and base.get(family) is not None else []
        points[role] = start + [(float(r["time_h"]), float(r[family])) for r in rows if r.get(family) is not None]
    return points


def paper_task_points(paper: Mapping, task: str) -> dict[str, list[tuple[float, float]]]:
    """The paper's published (training hours, pass@1 %) of one benchmark column of its Tables 3-5 per role, at the
    hours of its Table 1 rows (the baseline at 0 h); empty when the paper publishes no such column (of Figure 4's
    tasks only apps has one)."""
    cells = next((t["benchmarks"][task] for t in paper["benchmark_tables"].values() if task in t["benchmarks"]), {})
    rows = {f"{r['role']}@{r['continued_steps']}": r for r in paper["table1"]}
    base = next((v for k, v in cells.items() if k.startswith("base@")), None)
    points: dict[str, list[tuple[float, float]]] = {}
    for role in ("control", "treatment"):
        mine = sorted(
            (float(rows[k]["time_h"]), float(v))
            for k, v in cells.items()
            if k.startswith(f"{role}@") and rows[k].get("time_h") is not None
        )
        points[role] = ([(0.0, float(base))] if base is not None and mine else []) + mine
    return points


PAPER_LABELS = {"control": "paper: ProRL (N=16)", "treatment": "paper: BroRL (N=512)"}


def _draw_published(ax, points: Mapping[str, list[tuple[float, float]]], arms: Sequence[str], colours) -> None:
    """The paper's points of the control and treatment roles (``arms`` in that order) as open squares on dashed
    lines in the arms' colours, labelled "paper: ..." (never counted as this run's data)."""
    for role, arm in zip(("control", "treatment"), arms):
        if points.get(role):
            x, y = zip(*points[role])
            ax.plot(
                x, y, linestyle="--", marker="s", markerfacecolor="none", color=colours[arm], label=PAPER_LABELS[role]
            )


def plot_figure1(
    family: pd.DataFrame,
    arms: Sequence[str],
    labels: Mapping[str, str],
    base_arm: str,
    start_step: int,
    png: Path,
    pdf: Path,
    families: Sequence[str] = ("math",),
    note: str = "",
    paper_table1: Sequence[Mapping] | None = None,
    equal_time_hours: float | None = None,
) -> int:
    """One panel per family of ``families`` evaluated: pass@1 (%) against training hours, one line per arm with its
    95% interval as a band (the paper's Figure 1 is Math only). ``paper_table1`` (paper scale only, never beside a
    tiny run): the paper's published points of the control and treatment arms (``arms`` in that order) as open
    markers with dashed lines, in the arms' colours. ``equal_time_hours``: the equal-compute point, dashed."""
    data = _with_start(family, arms, base_arm, start_step)
    fams = [f for f in families if f in set(data["family"])] or list(families[:1])
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, len(fams), figsize=(4.2 * len(fams), 3.4), squeeze=False)
    colours = dict(zip(arms, sns.color_palette("colorblind", len(arms))))
    for ax, fam in zip(axes[0], fams):
        for arm in arms:
            d = data[(data["arm"] == arm) & (data["family"] == fam)].sort_values("hours")
            if d.empty or d["hours"].isna().all():
                continue
            ax.plot(d["hours"], 100 * d["pass1"], marker="o", color=colours[arm], label=labels.get(arm, arm))
            _band(ax, d, colours[arm])
        if paper_table1:
            _draw_published(ax, paper_points(paper_table1, fam), arms, colours)
        ax.set_title(FAMILY_LABELS[fam])
        ax.set_xlabel("training hours")
        ax.set_ylabel("pass@1 (%)")
        _pass_rate_axis(ax)
        _equal_time(ax, equal_time_hours)
    handles, names = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="upper center", ncol=len(names), bbox_to_anchor=(0.5, 1.08))
    return save_figure(fig, png, pdf, note)


def figure4_rows(
    classified: pd.DataFrame, paper_patterns: Mapping[int, Sequence[str]], per_row: int = 3
) -> dict[int, list[str]]:
    """Tasks shown per pattern row: the paper's tasks of that pattern first (where evaluated), then the others of the
    pattern by the largest difference between the arms' changes."""
    rows = {}
    for k in PATTERNS:
        mine = classified[classified["pattern"] == k].copy()
        mine["gap"] = (mine["treatment_change"] - mine["control_change"]).abs()
        paper = [t for t in paper_patterns.get(k, []) if t in set(mine["task"])]
        rest = [t for t in mine.sort_values(["gap", "task"], ascending=[False, True])["task"] if t not in paper]
        rows[k] = (paper + rest)[:per_row]
    return rows


def plot_figure4(
    tasks: pd.DataFrame,
    rows: Mapping[int, Sequence[str]],
    shares: Mapping[int, float],
    n_tasks: int,
    arms: Sequence[str],
    labels: Mapping[str, str],
    base_arm: str,
    start_step: int,
    png: Path,
    pdf: Path,
    note: str = "",
    paper: Mapping | None = None,
    equal_time_hours: float | None = None,
) -> int:
    """Per-task pass@1 (%) against training hours, one row per trajectory pattern (its share of the classified
    tasks in the row title), one line per arm with its 95% interval as a band. ``paper`` (paper scale only): the
    published points of a task that has a column in the paper's Tables 3-5 (apps), as in Figure 1.
    ``equal_time_hours``: the equal-compute point where the patterns are decided, dashed."""
    data = _with_start(tasks, arms, base_arm, start_step)
    sns.set_theme(style="whitegrid", context="paper")
    cols = max(1, max((len(v) for v in rows.values()), default=1))
    fig, axes = plt.subplots(
        len(PATTERNS), cols, figsize=(3.8 * cols, 2.9 * len(PATTERNS)), squeeze=False, layout="constrained"
    )
    colours = dict(zip(arms, sns.color_palette("colorblind", len(arms))))
    for r, k in enumerate(PATTERNS):
        shown = list(rows.get(k, []))
        for c in range(cols):
            ax = axes[r][c]
            if c >= len(shown):
                ax.axis("off")
                if c == 0:
                    ax.text(0.0, 0.5, f"pattern {k} ({PATTERNS[k]}): no task", transform=ax.transAxes)
                continue
            for arm in arms:
                d = data[(data["arm"] == arm) & (data["task"] == shown[c])].sort_values("hours")
                if not d.empty:
                    ax.plot(d["hours"], 100 * d["pass1"], marker="o", color=colours[arm], label=labels.get(arm, arm))
                    _band(ax, d, colours[arm])
            if paper:
                _draw_published(ax, paper_task_points(paper, shown[c]), arms, colours)
            ax.set_title(
                shown[c] if c else f"pattern {k} ({100 * shares.get(k, 0):.0f}% of {n_tasks}): {shown[c]}", loc="left"
            )
            ax.set_xlabel("training hours")
            ax.set_ylabel("pass@1 (%)")
            _pass_rate_axis(ax)
            _equal_time(ax, equal_time_hours)
    fig.suptitle("Per-task pass@1 by trajectory pattern (1 both improve, 2 only BroRL, 3 not BroRL)")
    handles, names = next(
        (ax.get_legend_handles_labels() for ax in axes.flat if ax.get_legend_handles_labels()[0]), ([], [])
    )
    if handles:
        fig.legend(handles, names, loc="outside lower center", ncol=len(names))
    return save_figure(fig, png, pdf, note)


def paper_final_points(table1: Sequence[Mapping], family: str) -> list[tuple[int, float, int]]:
    """(N, pass@1 %, continued steps) of each role's last Table 1 row: the paper's two published N at its end."""
    out = []
    for role in ("control", "treatment"):
        rows = [r for r in table1 if r["role"] == role and r.get(family) is not None]
        if rows:
            last = max(rows, key=lambda r: r["continued_steps"])
            out.append((int(last["n"]), float(last[family]), int(last["continued_steps"])))
    return out


def plot_n_sweep(
    family: pd.DataFrame,
    sweep: Sequence[Mapping],
    step: int,
    png: Path,
    pdf: Path,
    note: str = "",
    paper_table1: Sequence[Mapping] | None = None,
) -> int:
    """Family pass@1 (%) at ``step`` against N (log2 axis) over the sweep arms (name, n), with 95% intervals.
    ``paper_table1`` (paper scale only): the paper's final checkpoints (ProRL N=16 at +535, BroRL N=512 at +191)
    per family as open squares, labelled with their steps (they are not at ``step``)."""
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
    for fam, colour in zip(FAMILIES, sns.color_palette("colorblind", 3)):
        pts = paper_final_points(paper_table1 or [], fam)
        if pts:
            steps = ", ".join(f"N={n} +{k}" for n, _, k in pts)
            ax.plot(
                [n for n, _, _ in pts],
                [v for _, v, _ in pts],
                linestyle="none",
                marker="s",
                markerfacecolor="none",
                color=colour,
                label=f"paper: {FAMILY_LABELS[fam]} ({steps})",
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rollouts per prompt N")
    ax.set_ylabel(f"pass@1 (%) at continued step {step}")
    _pass_rate_axis(ax)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return save_figure(fig, png, pdf, note)
