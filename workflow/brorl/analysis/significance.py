"""The paper's significance test on this workflow's units: treatment vs control at equal training time, the same test
at equal generated samples, and what SUMMARY.md says the comparison could detect.

The test. Paired one-tailed t-test (treatment > control; ``brorl.stats``) over problem instances, each the mean of its
samples, pooled across every benchmark both arms evaluated (as the paper did), then per family and per benchmark;
percentile bootstrap CIs of delta (pairs resampled) for every row; Cohen's d_z; raw p (the paper applies no
correction), Holm's p across the groups of a level, and the configured correction's p. Pure: units in, a JSON-ready
dict out.

The headline comparison at equal compute, twice (pure: units and clocks in, a JSON-ready dict out):

1. Equal training hours: each arm's evaluated checkpoint nearest t* = min(``analysis.equal_time_hours``, the hours
   every arm reached) on the training clock (brorl.analysis.checkpoints), flagged when the chosen hours still differ
   by more than 10%.
2. Equal generated samples: the same test at the checkpoints nearest the generated samples every arm reached; it
   needs no hardware clock, so a slow node or a crashed segment cannot move it.

With ``equal_time_hours`` null (the tiny preset) the first comparison takes the final checkpoints, and both arms'
hours and generated samples are reported beside them.

SUMMARY.md's statement of what the main comparison could detect, written from the plan's inputs (analysis spec
`design`, brorl.ops.plan.power.design_record) and never from the observed effect, beside the observed difference's
confidence interval and the noise the test includes; and the paper's own test against its own tables.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..stats import paired_bootstrap_ci
from ..stats.cluster_bootstrap import cluster_bootstrap_ci
from ..stats.units import compare_arms
from .checkpoints import SelectionError, equal_point, nearest_checkpoints, unequal_compute


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
    sides = _sides(units, control, treatment)
    common, skipped = _benchmarks(sides)
    keep = ["benchmark", "id", "family", "score"]
    base = sides["control"][sides["control"]["benchmark"].isin(common)][keep]
    treat = sides["treatment"][sides["treatment"]["benchmark"].isin(common)][keep[:2] + ["score"]]
    rows = compare_arms(base, treat, by=["family", "benchmark"], alpha=alpha)

    merged = base.merge(treat, on=["benchmark", "id"], suffixes=("_b", "_t"))
    rngs = iter(np.random.default_rng(seed).spawn(len(rows)))  # one per row, in the order of the levels below
    out: dict[str, list] = {"pooled": [], "family": [], "benchmark": []}
    for level_name in out:
        level_rows = [r for r in rows if r["level"] == level_name]
        out[level_name] = _level(
            level_rows,
            level_name,
            merged,
            rngs,
            alpha=alpha,
            alternative=alternative,
            correction=correction,
            level=level,
            resamples=resamples,
        )
    if "task" in sides["control"]:
        out["pooled"][0].update(_task_interval(sides["control"], merged, level, resamples, seed))
    return {
        "pooled": out["pooled"][0],
        "family": out["family"],
        "benchmark": out["benchmark"],
        "benchmarks_compared": common,
        "benchmarks_skipped": skipped,
    }


def _sides(units: pd.DataFrame, control: tuple[str, int], treatment: tuple[str, int]) -> dict[str, pd.DataFrame]:
    """The units of each compared checkpoint, the control's first (ValueError naming a checkpoint without any)."""
    sides = {}
    for name, (arm, step) in (("control", control), ("treatment", treatment)):
        sides[name] = units[(units["arm"] == arm) & (units["step"] == int(step))]
        if sides[name].empty:
            raise ValueError(f"no evaluated units for the {name} arm {arm!r} at step {step}")
    return sides


def _benchmarks(sides: Mapping[str, pd.DataFrame]) -> tuple[list[str], dict[str, str]]:
    """(the benchmarks both checkpoints evaluated, sorted; each benchmark only one of them evaluated -> why it is
    skipped); ValueError when they share none."""
    b_benches, t_benches = set(sides["control"]["benchmark"]), set(sides["treatment"]["benchmark"])
    common = sorted(b_benches & t_benches)
    skipped = {
        b: f"evaluated for the {'control' if b in b_benches else 'treatment'} arm only"
        for b in sorted(b_benches ^ t_benches)
    }
    if not common:
        raise ValueError("the two checkpoints share no evaluated benchmark")
    return common, skipped


def _level(
    level_rows: list[dict],
    level_name: str,
    merged: pd.DataFrame,
    rngs: Iterator[np.random.Generator],
    *,
    alpha: float,
    alternative: str,
    correction: str,
    level: float,
    resamples: int,
) -> list[dict]:
    """The JSON-ready rows of one level (pooled, family or benchmark): p one- or two-sided, Holm's and the
    correction's p across the level's groups, and each group's bootstrap interval (the next generator of ``rngs``)."""
    p1 = np.array([r["p"] for r in level_rows], dtype=float)
    p = np.array([_two_sided(x) for x in p1]) if alternative == "two-sided" else p1
    p_holm, p_adj = _adjust(p, "holm"), _adjust(p, correction)
    out = []
    for r, pi, ph, pa in zip(level_rows, p, p_holm, p_adj):
        mask = np.ones(len(merged), bool) if level_name == "pooled" else (merged[level_name] == r["group"]).to_numpy()
        ci = paired_bootstrap_ci(
            merged["score_b"].to_numpy()[mask],
            merged["score_t"].to_numpy()[mask],
            level=level,
            resamples=resamples,
            rng=next(rngs),
        )
        row = _test_columns(r)
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
        out.append({k: _clean(v) for k, v in row.items()})
    return out


def _test_columns(r: Mapping) -> dict:
    """The test's own columns of one row of brorl.stats.units.compare_arms (and a benchmark's family)."""
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
    return row


def _task_interval(control: pd.DataFrame, merged: pd.DataFrame, level: float, resamples: int, seed: int) -> dict:
    """The pooled delta's interval with whole tasks resampled (brorl.stats.cluster_bootstrap): ci_low_tasks,
    ci_high_tasks and the number of tasks."""
    labels = control[["benchmark", "id", "task"]].drop_duplicates(["benchmark", "id"])
    tasks = merged[["benchmark", "id"]].merge(labels, on=["benchmark", "id"], how="left")  # merged's order
    clustered = cluster_bootstrap_ci(
        (merged["score_t"] - merged["score_b"]).to_numpy(),
        (tasks["benchmark"] + "/" + tasks["task"].astype(str)).to_numpy(),
        level=level,
        resamples=resamples,
        rng=np.random.default_rng([seed, 1]),
    )
    return {"ci_low_tasks": clustered.low, "ci_high_tasks": clustered.high, "tasks": clustered.clusters}


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


def _side(arm: str, step: int, clocks: Mapping[str, Mapping]) -> dict[str, Any]:
    """What the compared checkpoint of ``arm`` cost on each clock, and how its steps were refilled."""
    return {
        "arm": arm,
        "step": step,
        "hours": clocks["hours"].get(arm, {}).get(step),
        "samples_k": clocks["samples"].get(arm, {}).get(step),
        "startup_hours": clocks["startup"].get(arm),
        "refill": clocks.get("refill", {}).get(arm),
    }


def equal_hours(
    units: pd.DataFrame,
    roles: Mapping[str, str],
    evaluated: Mapping[str, list[int]],
    clocks: Mapping[str, Mapping],
    target: float | None,
    alternative: str,
    test: Mapping[str, Any],
) -> dict[str, Any]:
    """The significance result's equal-hours part: control/treatment (arm, step, hours, samples_k, startup_hours),
    selection (rule, t*, the flag) and the test's rows. ``clocks``: hours, samples (thousands) and startup per arm.
    Raises SelectionError when no checkpoint can be chosen."""
    hours = clocks["hours"]
    point = equal_point(evaluated, hours, target)
    chosen = nearest_checkpoints(evaluated, hours, point)
    out: dict[str, Any] = {role: _side(arm, chosen[arm], clocks) for role, arm in roles.items()}
    if target is None:
        rule = "final checkpoints"
    else:
        rule = f"checkpoints nearest {point:.4g} training hours (the nearer of {target} h and what every arm reached)"
    flag = unequal_compute({arm: out[role]["hours"] for role, arm in roles.items()}) if target is not None else None
    out["selection"] = {
        "rule": rule,
        "equal_time_hours": target,
        "t_star_hours": point,
        "flag": flag,
        "evaluated_steps": evaluated,
    }
    out.update(
        compare_checkpoints(
            units,
            (roles["control"], chosen[roles["control"]]),
            (roles["treatment"], chosen[roles["treatment"]]),
            alternative=alternative,
            **test,
        )
    )
    return out


def equal_samples(
    units: pd.DataFrame,
    roles: Mapping[str, str],
    evaluated: Mapping[str, list[int]],
    clocks: Mapping[str, Mapping],
    alternative: str,
    test: Mapping[str, Any],
) -> dict[str, Any]:
    """The same test at the checkpoints nearest the generated samples every arm reached: status, control,
    treatment, samples_k (the point) and the pooled row (or the reason it was not run)."""
    samples = clocks["samples"]
    try:
        point = equal_point(evaluated, samples, float("inf"))
        chosen = nearest_checkpoints(evaluated, samples, point)
        rows = compare_checkpoints(
            units,
            (roles["control"], chosen[roles["control"]]),
            (roles["treatment"], chosen[roles["treatment"]]),
            alternative=alternative,
            **test,
        )
    except (SelectionError, ValueError) as err:
        return {"status": "not run", "reason": str(err).replace("(wall_s)", "(generated_samples)")}
    sides = {role: _side(arm, chosen[arm], clocks) for role, arm in roles.items()}
    return {"status": "ok", "samples_k": point, **sides, "pooled": rows["pooled"]}


def design_lines(design: Mapping[str, Any] | None, sig: Mapping[str, Any]) -> list[str]:
    """The design's MDE and power, the observed difference's 95% CI, and which noise the test includes."""
    if not design or "mde" not in design:
        return []
    runs = design["runs"]
    lines = [
        f"- Design (from the plan's inputs, not from the result): {runs} training run(s) per arm; minimum detectable "
        f"effect {design['mde']:.2f} points at 80% power, at a training-seed spread of {design['seed_sd']:g} points "
        f"(NOT PUBLISHED) and an evaluation se of {design['eval_se']:.3f} points per checkpoint ({design['noise']})."
    ]
    if design.get("power"):
        low, high = design["power"]
        p_low, p_high = design["predicted"]
        lines.append(
            f"  Against the gap the paper's trajectory predicts at this compute (+{p_low:.2f} to +{p_high:.2f} points) "
            f"its power is {low:.2f}-{high:.2f}: {design['verdict'].split(': ')[-1]}."
        )
    else:
        lines.append("  No published effect to power against at this scale.")
    pooled = sig.get("pooled") if sig.get("status") == "ok" else None
    if pooled:
        lines.append(
            f"- Observed: {100 * pooled['delta']:+.2f} points, 95% CI {100 * pooled['ci_low']:+.2f} to "
            f"{100 * pooled['ci_high']:+.2f} (bootstrap over problems)."
        )
    runs_test = sig.get("across_runs") or {}
    if runs_test.get("status") == "ok":
        lines.append(
            f"- Across runs ({runs_test['runs_treatment']} + {runs_test['runs_control']} runs, problems nested in "
            f"runs, df {runs_test['df']}): delta {100 * runs_test['delta']:+.2f} points, one-sided p "
            f"{runs_test['p']:.3g}; training-seed spread estimated at {100 * runs_test['seed_sd']:.2f} points."
        )
    noise = (
        "evaluation noise only: with one run per arm it compares two checkpoints, not the method (at the stated seed "
        f"spread it would call a zero effect significant {design['false_positive']:.0%} of the time)"
        if runs == 1
        else f"evaluation and training-seed noise ({runs} runs per arm)"
    )
    lines.append(f"- The test includes {noise}.")
    return lines


def paper_test_lines(design: Mapping[str, Any] | None) -> list[str]:
    """The per-instance delta the paper reports beside the one its own Tables 3-5 imply at its equal-time pair."""
    paper = (design or {}).get("paper_test")
    if not paper:
        return []
    return [
        f"- The paper's test against its own tables: it reports a per-instance delta of {paper['reported']:.2f} "
        f"points (t {paper['t']:.2f}); its Tables 3-5 at the equal-time pair (BroRL +134 at 122.8 h, ProRL +535 at "
        f"133.8 h), weighted by the problems of the {paper['benchmarks']} benchmarks evaluated here, imply "
        f"{paper['tables']:+.2f} points, {paper['driver_share']:+.2f} of it from {paper['driver']}. The paper does not "
        "say which cells its test used.",
    ]
