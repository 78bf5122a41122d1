"""The decision experiment's pre-registered tests (workflow/presets/decision.yaml; docs/stages.md#the-decision-experiment):
two necessary conditions of the paper's headline, each with three outcomes from a confidence bound against a
threshold frozen before any result:

- F1: the released BroRL weights gain over the start checkpoint what Table 1 says. The statistic is the pooled
  per-instance gain, paired over problems; SUPPORTED when its lower bound is above the threshold (midway between
  ProRL +535's and BroRL +191's published pooled gains), FALSIFIED when its upper bound is below it. A validity gate
  first: the start checkpoint's math and code family averages within a stated distance of the paper's baseline,
  else "harness differs" and no verdict.
- F3: a BroRL-shaped step (128 x 512) yields more kept training samples per GPU-hour than a ProRL-shaped step
  (512 x 16) on the same node. The statistic is the ratio of the two shapes' mean rates, tested on log rates over
  steps (t interval, df = steps - 2); the threshold sits between no advantage (1.0) and Table 1's 2.20 on a log scale.
  A pre-registered extension: when the step times vary more than planned (coefficient of variation above a stated
  bound), more steps are run before the verdict; the rule depends on that nuisance spread only, never on the ratio.
Pure: the standard library and scipy's t quantiles (brorl.stats.power.quantile)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .power import quantile

SUPPORTED, FALSIFIED, INCONCLUSIVE = "supported", "falsified", "inconclusive"


def outcome(lower: float, upper: float, threshold: float) -> str:
    """SUPPORTED when the lower bound clears the threshold, FALSIFIED when the upper bound stays below it."""
    if lower > threshold:
        return SUPPORTED
    if upper < threshold:
        return FALSIFIED
    return INCONCLUSIVE


def paired_gain(differences: Sequence[float], threshold: float, alpha: float) -> dict[str, float | str | int]:
    """F1: the mean of per-problem differences (treatment - start, points) with its two one-sided (1 - alpha)
    bounds, and the outcome against ``threshold``."""
    n = len(differences)
    if n < 2:
        raise ValueError(f"F1 needs two or more problems evaluated on both checkpoints, not {n}")
    mean = sum(differences) / n
    var = sum((d - mean) ** 2 for d in differences) / (n - 1)
    se = math.sqrt(var / n)
    half = quantile(1 - alpha, n - 1) * se
    lower, upper = mean - half, mean + half
    return {"n": n, "gain": mean, "se": se, "lower": lower, "upper": upper, "outcome": outcome(lower, upper, threshold)}


def variation(values: Sequence[float]) -> float:
    """Coefficient of variation (sample SD over mean); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return sd / mean if mean else math.inf


def rate_ratio(
    treatment: Sequence[float], control: Sequence[float], threshold: float, alpha: float
) -> dict[str, float | str | int]:
    """F3: treatment over control kept samples per GPU-hour (one rate per step after warm-up), tested on logs with a
    pooled-variance t interval (df = steps - 2); bounds and threshold as ratios."""
    k_t, k_c = len(treatment), len(control)
    if k_t < 2 or k_c < 2:
        raise ValueError(f"F3 needs two or more measured steps of each shape, not {k_t} and {k_c}")
    logs_t, logs_c = [math.log(x) for x in treatment], [math.log(x) for x in control]
    mean_t, mean_c = sum(logs_t) / k_t, sum(logs_c) / k_c
    ss = sum((x - mean_t) ** 2 for x in logs_t) + sum((x - mean_c) ** 2 for x in logs_c)
    df = k_t + k_c - 2
    se = math.sqrt(ss / df * (1 / k_t + 1 / k_c))
    half = quantile(1 - alpha, df) * se
    log_ratio = mean_t - mean_c
    lower, upper = math.exp(log_ratio - half), math.exp(log_ratio + half)
    return {
        "steps_treatment": k_t,
        "steps_control": k_c,
        "df": df,
        "ratio": math.exp(log_ratio),
        "lower": lower,
        "upper": upper,
        "outcome": outcome(lower, upper, threshold),
    }


def gate_problem(measured: dict[str, float], paper: dict[str, float], points: float) -> str:
    """F1's validity gate: "" when every family average of the start checkpoint is within ``points`` of the
    paper's baseline, else which is not ("harness differs")."""
    missing = [family for family in paper if family not in measured]
    if missing:
        return f"harness differs: the start checkpoint has no {', '.join(missing)} average here"
    far = [
        f"{family} {measured[family]:.2f} vs the paper's {paper[family]:.2f}"
        for family in paper
        if abs(measured[family] - paper[family]) > points
    ]
    return f"harness differs: {'; '.join(far)} (more than {points:g} points apart)" if far else ""
