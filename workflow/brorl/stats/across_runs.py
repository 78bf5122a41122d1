"""The main comparison across training runs (seeds as an axis): each arm trained k >= 2 times, each run's pooled
pass@1 (problems nested in runs) one observation, a two-sample one-sided t-test with df = 2k - 2. Its standard
error holds the training-seed spread, which the paired test over problems of one run per arm cannot see; the spread
is estimated from the runs (their variance less the evaluation variance of a run's mean). Pure: numpy and scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence


def across_runs_test(
    treatment: Sequence[float], control: Sequence[float], eval_var: float, alpha: float
) -> dict[str, float | int | bool]:
    """Treatment runs' pooled scores against the control runs' (fractions); ``eval_var``: the evaluation variance of
    one run's pooled mean (sampling within problems). ValueError with fewer than two runs in an arm."""
    from scipy import stats

    k_t, k_c = len(treatment), len(control)
    if min(k_t, k_c) < 2:
        raise ValueError(f"a test across runs needs two or more runs per arm, not {k_t} and {k_c}")
    mean_t, mean_c = sum(treatment) / k_t, sum(control) / k_c
    var_t = sum((x - mean_t) ** 2 for x in treatment) / (k_t - 1)
    var_c = sum((x - mean_c) ** 2 for x in control) / (k_c - 1)
    df = k_t + k_c - 2
    pooled = ((k_t - 1) * var_t + (k_c - 1) * var_c) / df
    se = math.sqrt(pooled * (1 / k_t + 1 / k_c))
    delta = mean_t - mean_c
    t = delta / se if se > 0 else math.inf if delta > 0 else 0.0
    p = float(stats.t.sf(t, df))
    half = float(stats.t.ppf(1 - alpha, df)) * se
    return {
        "runs_treatment": k_t,
        "runs_control": k_c,
        "df": df,
        "delta": delta,
        "se": se,
        "t": t,
        "p": p,
        "reject": p < alpha,
        "ci_low_one_sided": delta - half,
        "between_run_sd": math.sqrt(pooled),
        "seed_sd": math.sqrt(max(pooled - eval_var, 0.0)),
    }
