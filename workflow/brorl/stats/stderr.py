"""Standard errors and 95% intervals of pass rates over problems: the error bar of every score in the tables.

A benchmark's pass@k is the mean over its problems of each problem's pass@k estimate (pass@1: the mean score over
its samples). Its standard error is the analytic one of a mean over problems, ``sd(ddof=1) / sqrt(n_problems)``,
and its 95% interval the normal one, ``mean +- 1.96 se``, clipped to [0, 1] (a pass rate cannot leave it). The
per-problem values already hold the sampling noise of the samples, so this error covers both the choice of problems
and the finite samples per problem. A family average (the unweighted mean of k benchmarks over disjoint problem
sets, hence independent) gets ``sqrt(sum se_b^2) / k``. docs/design.md#error-bars says why analytic, not bootstrap.

Degenerate cases: one problem has no spread estimate (se NaN, interval NaN); problems that all have the same value
(e.g. all correct) give se 0 and the interval [mean, mean]. NaN values are an error (fix them upstream). Pure numpy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal (statistics.NormalDist().inv_cdf(0.975))


@dataclass(frozen=True)
class MeanError:
    """A mean over ``n`` problems with its standard error and 95% interval (NaN where undefined)."""

    mean: float
    se: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def interval(mean: float, se: float) -> tuple[float, float]:
    """The 95% normal interval ``mean +- Z95 se`` clipped to [0, 1]; (NaN, NaN) when se is NaN."""
    if math.isnan(se):
        return math.nan, math.nan
    return max(0.0, mean - Z95 * se), min(1.0, mean + Z95 * se)


def mean_error(values: Iterable[float]) -> MeanError:
    """The mean of per-problem values (1-D, no NaN, at least one) with ``sd(ddof=1) / sqrt(n)`` and its interval."""
    a = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"need a non-empty 1-D array of per-problem values, got shape {a.shape}")
    nan = int(np.isnan(a).sum())
    if nan:
        raise ValueError(f"{nan} NaN value(s) among {a.size} per-problem values; fix them upstream")
    mean = float(a.mean())
    se = float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan
    if a.size > 1 and a.max() == a.min():
        se = 0.0  # exactly no spread (std may leave rounding noise)
    return MeanError(mean, se, *interval(mean, se), int(a.size))


def combined_se(ses: Iterable[float]) -> float:
    """The standard error of the unweighted mean of independent estimates: ``sqrt(sum se^2) / k`` (NaN if any is)."""
    s = [float(x) for x in ses]
    if not s:
        raise ValueError("no standard errors to combine")
    return math.sqrt(sum(x * x for x in s)) / len(s)


def mean_of_errors(means: Iterable[float], ses: Iterable[float], n: int) -> MeanError:
    """The unweighted mean of independent estimates (``means``, ``ses``) over ``n`` problems in all."""
    m = [float(x) for x in means]
    if not m:
        raise ValueError("no estimates to average")
    mean, se = sum(m) / len(m), combined_se(ses)
    return MeanError(mean, se, *interval(mean, se), int(n))


def weighted_mean_error(values: Iterable[float], weights: Iterable[float]) -> MeanError:
    """``sum w x`` (weights normalised to sum 1) with ``se = sd(x, ddof=1) * sqrt(sum w^2)``: the standard error of
    a weighted mean of independent problems sharing one variance, estimated over all of them. It gives a mean over
    groups of problems (e.g. Reasoning Gym's mean over tasks, many of one problem) an error where a per-group one
    is undefined; equal weights give ``mean_error``."""
    x = np.asarray(list(values), dtype=np.float64)
    w = np.asarray(list(weights), dtype=np.float64)
    if x.shape != w.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"values and weights must be non-empty 1-D arrays of one length, got {x.shape}, {w.shape}")
    if np.isnan(x).any() or np.isnan(w).any() or (w < 0).any() or w.sum() <= 0:
        raise ValueError("values and weights must be free of NaN, weights >= 0 and not all 0")
    w = w / w.sum()
    mean = float(np.dot(w, x))
    if x.size < 2:
        se = math.nan
    elif x.max() == x.min():
        se = 0.0
    else:
        se = float(x.std(ddof=1) * math.sqrt(float(np.dot(w, w))))
    return MeanError(mean, se, *interval(mean, se), int(x.size))
