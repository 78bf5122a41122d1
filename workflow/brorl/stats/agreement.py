"""Does a reproduced pass@1 match the paper's? The noise of a rerun on the same problems, and a verdict per number.

The paper's number and ours come from the same problems, each sampled k times (16), so the tables' standard error
(over problems, which measures how another problem set would score) is the wrong yardstick: it would call almost
anything a match (about 13 points on AIME's 30 problems). What separates two runs on the same n problems is the
sampling noise of each problem's k samples: with s_i^2 the sample variance of problem i's k outcomes, one run's
pass@1 has variance sum_i s_i^2 / (k n^2), and the difference of two independent runs

    se = sqrt(2 * sum_i s_i^2 / k) / n.

A number "agrees" when the difference lies within 2 se of zero, or within a practical margin (default 1 point) that
a difference too small to matter never exceeds; otherwise it is "above" or "below". What the interval leaves out:
differences of engine, hardware and numerics between the paper's runs and ours (vLLM version, kernels, batch
composition), which move a score without being sampling noise. Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

AGREES, ABOVE, BELOW = "agrees", "above", "below"
NO_NOISE = "no noise estimate"  # fewer than 2 samples per problem: no variance to build the interval from
NOT_IN_INTERVAL = "engine, hardware and numerics differences are not in the interval"


def rerun_se(variances: np.ndarray | list[float], samples: int) -> float:
    """The standard error of the difference of two runs of ``samples`` samples per problem on the same problems,
    from each problem's sample variance (ddof 1); NaN when a variance is undefined or there are none."""
    v = np.asarray(variances, dtype=np.float64)
    if v.size == 0 or samples < 2 or np.isnan(v).any():
        return math.nan
    return math.sqrt(2.0 * float(v.sum()) / samples) / v.size


@dataclass(frozen=True)
class Agreement:
    """reproduced - paper (fractions), its rerun standard error, the 2-se interval and the verdict."""

    diff: float
    se: float
    low: float
    high: float
    verdict: str


def agreement(reproduced: float, paper: float, se: float, margin: float = 0.01) -> Agreement:
    """The verdict of one number: ``agrees`` within max(2 se, margin) of the paper's, else ``above`` / ``below``;
    ``no noise estimate`` where se is undefined. Values and margin as fractions (0.01 = 1 point)."""
    diff = float(reproduced) - float(paper)
    if math.isnan(se):
        return Agreement(diff, se, math.nan, math.nan, NO_NOISE)
    low, high = diff - 2 * se, diff + 2 * se
    if abs(diff) <= max(2 * se, margin):
        verdict = AGREES
    else:
        verdict = ABOVE if diff > 0 else BELOW
    return Agreement(diff, se, low, high, verdict)
