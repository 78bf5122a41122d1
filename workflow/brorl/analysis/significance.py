"""The paper's significance test on this workflow's units: treatment vs control at equal training time.

Paired one-tailed t-test (treatment > control; ``brorl.stats``) over problem instances, each the mean of its samples,
pooled across every benchmark both arms evaluated (as the paper did), then per family and per benchmark; percentile
bootstrap CIs of delta (pairs resampled) for every row; Cohen's d_z; raw p (the paper applies no correction), Holm's
p across the groups of a level, and the configured correction's p. Pure: units in, a JSON-ready dict out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..stats import paired_bootstrap_ci
from ..stats.cluster_bootstrap import cluster_bootstrap_ci
from ..stats.units import compare_arms


def _adjust(p: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of one level: none (raw), holm, or bonferroni (NaN stays NaN)."""
    from ..stats import holm

    if method == "none":
        return p.copy()
    if method == "holm":
        return holm(p)
    if method == "bonferroni":
        m = int(np.count_nonzero(~np.isnan(p)))
        return np.minimum(p * m, 1.0)
    raise ValueError(f"unknown correction {method!r} (none, holm, bonferroni)")


def _two_sided(p: float) -> float:
    """Two-sided p from the one-tailed P(T >= t)."""
    return p if math.isnan(p) else min(1.0, 2.0 * min(p, 1.0 - p))


def _clean(value):
    """JSON has no NaN/inf: store them as None."""
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def compare_checkpoints(
    units: pd.DataFrame,
    control: tuple[str, int],
    treatment: tuple[str, int],
    *,
    alpha: float = 0.05,
    alternative: str = "greater",
    correction: str = "holm",
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Rows of the test of ``treatment`` (arm, step) against ``control`` (arm, step) over their common benchmarks.

    Returns {"pooled": row, "family": [rows], "benchmark": [rows], "benchmarks_compared": [...],
    "benchmarks_skipped": {bench: reason}}. Each row: n, delta, t, p (one-tailed, or two-sided with
    ``alternative`` "two-sided"), p_raw_one_tailed, p_holm, p_adjusted (``correction``), reject / reject_adjusted at
    ``alpha``, effect_size, baseline/treatment means, ci_low/ci_high (bootstrap, ``resamples``, seed ``seed``).
    """
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', got {alternative!r}")
    sides = {}
    for name, (arm, step) in (("control", control), ("treatment", treatment)):
        sides[name] = units[(units["arm"] == arm) & (units["step"] == int(step))]
        if sides[name].empty:
            raise ValueError(f"no evaluated units for the {name} arm {arm!r} at step {step}")
    b_benches, t_benches = set(sides["control"]["benchmark"]), set(sides["treatment"]["benchmark"])
    common = sorted(b_benches & t_benches)
    skipped = {
        b: f"evaluated for the {'control' if b in b_benches else 'treatment'} arm only"
        for b in sorted(b_benches ^ t_benches)
    }
    if not common:
        raise ValueError("the two checkpoints share no evaluated benchmark")
    keep = ["benchmark", "id", "family", "score"]
    base = sides["control"][sides["control"]["benchmark"].isin(common)][keep]
    treat = sides["treatment"][sides["treatment"]["benchmark"].isin(common)][keep[:2] + ["score"]]
    rows = compare_arms(base, treat, by=["family", "benchmark"], alpha=alpha)

    merged = base.merge(treat, on=["benchmark", "id"], suffixes=("_b", "_t"))
    rngs = iter(np.random.default_rng(seed).spawn(len(rows)))
    out: dict[str, list] = {"pooled": [], "family": [], "benchmark": []}
    for level_name in out:
        level_rows = [r for r in rows if r["level"] == level_name]
        p1 = np.array([r["p"] for r in level_rows], dtype=float)
        p = np.array([_two_sided(x) for x in p1]) if alternative == "two-sided" else p1
        p_holm, p_adj = _adjust(p, "holm"), _adjust(p, correction)
        for r, pi, ph, pa in zip(level_rows, p, p_holm, p_adj):
            mask = (
                np.ones(len(merged), bool) if level_name == "pooled" else (merged[level_name] == r["group"]).to_numpy()
            )
            ci = paired_bootstrap_ci(
                merged["score_b"].to_numpy()[mask],
                merged["score_t"].to_numpy()[mask],
                level=level,
                resamples=resamples,
                rng=next(rngs),
            )
            row = {
                k: r[k]
                for k in (
                    "group",
                    "n",
                    "df",
                    "baseline_mean",
                    "treatment_mean",
                    "delta",
                    "sd_diff",
                    "se",
                    "t",
                    "effect_size",
                    "note",
                )
                if k in r
            }
            if "family" in r:
                row["family"] = r["family"]
            row.update(
                p=pi,
                p_raw_one_tailed=r["p"],
                p_holm=ph,
                p_adjusted=pa,
                reject=bool(pi <= alpha),
                reject_holm=bool(ph <= alpha),
                reject_adjusted=bool(pa <= alpha),
                ci_low=ci.low,
                ci_high=ci.high,
                ci_level=level,
                ci_resamples=resamples,
            )
            out[level_name].append({k: _clean(v) for k, v in row.items()})
    if (
        "task" in sides["control"]
    ):  # the pooled delta's interval with whole tasks resampled (brorl.stats.cluster_bootstrap)
        labels = sides["control"][["benchmark", "id", "task"]].drop_duplicates(["benchmark", "id"])
        tasks = merged[["benchmark", "id"]].merge(labels, on=["benchmark", "id"], how="left")  # merged's order
        clustered = cluster_bootstrap_ci(
            (merged["score_t"] - merged["score_b"]).to_numpy(),
            (tasks["benchmark"] + "/" + tasks["task"].astype(str)).to_numpy(),
            level=level,
            resamples=resamples,
            rng=np.random.default_rng([seed, 1]),
        )
        out["pooled"][0].update(ci_low_tasks=clustered.low, ci_high_tasks=clustered.high, tasks=clustered.clusters)
    return {
        "pooled": out["pooled"][0],
        "family": out["family"],
        "benchmark": out["benchmark"],
        "benchmarks_compared": common,
        "benchmarks_skipped": skipped,
    }


def paper_comparison(pooled: Mapping, paper_stats: Mapping) -> dict:
    """The pooled result beside the paper's (delta on the 0-1 scale, t, p)."""
    return {k: {"paper": paper_stats[k], "reproduced": pooled.get(k)} for k in ("delta", "t", "p")} | {
        "n": {"paper": paper_stats.get("n_text"), "reproduced": pooled.get("n")}
    }


def learning_effects(units: pd.DataFrame, base: tuple[str, int], arms: list[str], **test: object) -> list[dict]:
    """Does RL training improve the start model? For each of ``arms`` with an evaluated checkpoint, its last
    evaluated step against the start checkpoint ``base`` (arm, step) on the same problems, by compare_checkpoints
    (``test``: its keyword arguments). A row per arm: arm, step, status, and the test's pooled and per-benchmark
    rows; ``resolved`` when the pooled test or a benchmark's Holm-adjusted test rejects at alpha."""
    out = []
    for arm in arms:
        steps = sorted(int(s) for s in set(units.loc[units["arm"] == arm, "step"]))
        if not steps:
            out.append({"arm": arm, "status": "not run", "reason": f"arm {arm!r} has no evaluated checkpoint"})
            continue
        try:
            rows = compare_checkpoints(units, base, (arm, steps[-1]), **test)
        except ValueError as err:
            out.append({"arm": arm, "step": steps[-1], "status": "not run", "reason": str(err)})
            continue
        won = [r["group"] for r in rows["benchmark"] if r["reject_holm"] and (r["delta"] or 0) > 0]
        resolved = bool(rows["pooled"]["reject"]) or bool(won)
        out.append(
            {
                "arm": arm,
                "step": steps[-1],
                "status": "ok",
                "resolved": resolved,
                "benchmarks_resolved": won,
                "pooled": rows["pooled"],
                "benchmark": rows["benchmark"],
            }
        )
    return out
