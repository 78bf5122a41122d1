"""pass@1 per checkpoint from per-instance units: per benchmark, per family (with bootstrap CIs), per task.

pass@1 of a benchmark = mean over its instances of each instance's sample mean (the evaluation stage's number);
a family's = the unweighted mean over its benchmarks present (the paper's Math and Code averages). Reasoning Gym has
three averages (``reasoning_gym_averages``): over its 11 categories (that family mean), over tasks and over items; the
paper's printed average follows an unpublished rule. Values are fractions in [0, 1].
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats import bootstrap_distribution


def benchmark_pass1(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, family, benchmark, n_items, pass1 (one row per evaluated benchmark and checkpoint)."""
    grouped = units.groupby(["arm", "step", "family", "benchmark"], sort=True)["score"]
    return grouped.agg(n_items="size", pass1="mean").reset_index()


def family_pass1(units: pd.DataFrame, *, resamples: int = 0, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """arm, step, family, n_benchmarks, benchmarks, pass1 and (``resamples`` > 0) ci_low, ci_high.

    The CI resamples instances within each benchmark (stratified percentile bootstrap) and averages the benchmark
    means, so it is the CI of the family average as defined above. One Generator per (arm, step, family), spawned
    from ``seed`` in sorted order: reproducible and independent of which other checkpoints exist.
    """
    rows = []
    groups = list(units.groupby(["arm", "step", "family"], sort=True))
    rngs = np.random.default_rng(seed).spawn(len(groups)) if resamples else [None] * len(groups)
    alpha = (1.0 - level) / 2.0
    for rng, ((arm, step, family), g) in zip(rngs, groups):
        by_bench = [grp["score"].to_numpy(dtype=float) for _, grp in g.groupby("benchmark", sort=True)]
        row = {
            "arm": arm,
            "step": int(step),
            "family": family,
            "n_benchmarks": len(by_bench),
            "benchmarks": ",".join(sorted(g["benchmark"].unique())),
            "pass1": float(np.mean([v.mean() for v in by_bench])),
        }
        if resamples:
            dist = np.mean([bootstrap_distribution(v, np.mean, resamples, rng=rng) for v in by_bench], axis=0)
            row["ci_low"], row["ci_high"] = (float(x) for x in np.quantile(dist, [alpha, 1.0 - alpha]))
        rows.append(row)
    return pd.DataFrame(rows)


def reasoning_gym_averages(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, category_mean, task_mean, item_mean, n_tasks, n_items of the Reasoning Gym units per checkpoint.

    category_mean: mean of the category benchmarks' pass@1; task_mean: mean of each task's pass@1 (a task = one
    Reasoning Gym dataset, ``task`` of its units); item_mean: mean over all items. They differ when categories hold
    different numbers of tasks, or tasks different numbers of items.
    """
    rg = units[units["family"] == "reasoning_gym"]
    rows = []
    for (arm, step), g in rg.groupby(["arm", "step"], sort=True):
        rows.append(
            {
                "arm": arm,
                "step": int(step),
                "category_mean": float(g.groupby("benchmark")["score"].mean().mean()),
                "task_mean": float(g.groupby("task")["score"].mean().mean()),
                "item_mean": float(g["score"].mean()),
                "n_tasks": int(g["task"].nunique()),
                "n_items": int(len(g)),
            }
        )
    columns = ["arm", "step", "category_mean", "task_mean", "item_mean", "n_tasks", "n_items"]
    return pd.DataFrame(rows, columns=columns)


def task_pass1(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, benchmark, task, n_items, pass1 (Reasoning Gym tasks; other benchmarks are their own task)."""
    grouped = units.groupby(["arm", "step", "benchmark", "task"], sort=True)["score"]
    return grouped.agg(n_items="size", pass1="mean").reset_index()


def with_hours(frame: pd.DataFrame, hours: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the training hours of each (arm, step) (NaN where the metrics have no such step)."""
    return frame.merge(hours, on=["arm", "step"], how="left", validate="many_to_one")
