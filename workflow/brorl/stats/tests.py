"""Paired one-tailed t-tests, bootstrap confidence intervals and Holm's correction: pure maths on arrays.

This is the paper's significance test (BroRL, arXiv 2510.01180, Section 4.2.2): a paired, one-tailed
t-test of treatment > baseline over problem instances, each unit being one problem's mean score over its 16 samples.
It equals ``scipy.stats.ttest_rel(treatment, baseline, alternative="greater")`` (and ``ttest_1samp`` of the
differences against 0) wherever that is defined, and additionally gives explicit results where scipy returns NaN.

Dependencies: numpy, and ``scipy.special.stdtr`` (the Student t CDF) for p-values. Nothing here imports pandas,
scipy.stats, torch, vllm or matplotlib; the pandas side (per-instance means, arm comparisons) is in
``brorl.stats.units``, which ``brorl.stats`` does not import.

Randomness: every resampling function takes a ``numpy.random.Generator`` (``numpy.random.default_rng(seed)``)
explicitly; no global RNG state is read or written, so bootstrap CIs are reproducible and do not interfere with each
other (docs/design.md#statistics-take-their-random-generator-explicitly).

Degenerate cases, decided here once:

* n < 2: no variance estimate; t, p, sd, se and the effect size are NaN, and ``note`` says why.
* all paired differences equal (sd exactly 0):
  - delta > 0: t = +inf, p = 0 (every unit improved by the same amount; the limit of t -> +inf);
  - delta < 0: t = -inf, p = 1;
  - delta = 0: t = NaN (0/0) and p = 0.5, the value a one-tailed test takes at t = 0 (the limit along delta = 0 as
    sd -> 0): no evidence in either direction, so it never rejects at any alpha < 0.5. scipy returns NaN here.
  ``note`` records which case applied. "All equal" is tested exactly (max == min), not by a tolerance.
* NaN anywhere in the inputs: ValueError naming how many (a missing score must be fixed upstream, not dropped
  silently, or the pairing breaks). Unequal lengths or non-1-D inputs: ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import stdtr

__all__ = [
    "BootstrapCI",
    "PairedTest",
    "bootstrap_ci",
    "bootstrap_distribution",
    "grouped_paired_one_tailed",
    "holm",
    "holm_reject",
    "paired_bootstrap_ci",
    "paired_differences",
    "paired_one_tailed",
]

# A bootstrap chunk holds at most this many resampled values (index array int64 + gathered float64: ~64 MB).
_CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class PairedTest:
    """One paired one-tailed t-test of H1: mean(treatment - baseline) > 0.

    delta: mean paired difference; t: delta / se; p: one-tailed P(T_df >= t); n: pairs; df: n - 1;
    sd_diff: sample sd of the differences (ddof 1); se: sd_diff / sqrt(n); effect_size: Cohen's d_z =
    delta / sd_diff; note: empty, or why t/p are NaN or infinite.
    """

    delta: float
    t: float
    p: float
    n: int
    df: int
    sd_diff: float
    se: float
    effect_size: float
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class BootstrapCI:
    """A percentile bootstrap interval: ``estimate`` is the statistic on the original data."""

    estimate: float
    low: float
    high: float
    level: float
    resamples: int
    n: int
    method: str = "percentile"

    def to_dict(self) -> dict:
        return asdict(self)

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high


def _as_1d(values, name: str, *, check_nan: bool = True) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if check_nan:
        nan = int(np.count_nonzero(np.isnan(a)))
        if nan:
            raise ValueError(f"{name} contains {nan} NaN value(s) out of {a.size}; fix or drop them upstream")
    return a


def _check_pairs(baseline, treatment) -> tuple[np.ndarray, np.ndarray]:
    b = _as_1d(baseline, "baseline", check_nan=False)
    t = _as_1d(treatment, "treatment", check_nan=False)
    if b.shape != t.shape:
        raise ValueError(f"paired inputs differ in length: baseline {b.size}, treatment {t.size}")
    nb, nt = np.isnan(b), np.isnan(t)
    if nb.any() or nt.any():
        raise ValueError(
            f"{int(np.count_nonzero(nb | nt))} NaN pair(s) out of {b.size} (baseline {int(nb.sum())}, treatment "
            f"{int(nt.sum())} NaN value(s)); fix or drop them upstream, pairwise"
        )
    return b, t


def paired_differences(baseline, treatment) -> np.ndarray:
    """treatment - baseline as float64 (n,), after checking both are 1-D, equally long and NaN-free."""
    b, t = _check_pairs(baseline, treatment)
    return t - b


def _tests_from_moments(n: np.ndarray, delta: np.ndarray, sd: np.ndarray, constant: np.ndarray):
    """Vectorised t, p, se, effect size and notes from per-group n, mean difference, sd (ddof 1) and an
    all-differences-equal flag. Shapes: all (groups,). Returns (t, p, se, effect, notes)."""
    n = np.asarray(n, dtype=np.int64)
    delta = np.asarray(delta, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    constant = np.asarray(constant, dtype=bool)
    small = n < 2
    flat = constant & ~small
    regular = ~small & ~flat
    se = np.full(n.shape, np.nan)
    t = np.full(n.shape, np.nan)
    p = np.full(n.shape, np.nan)
    effect = np.full(n.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        se[regular] = sd[regular] / np.sqrt(n[regular])
        t[regular] = delta[regular] / se[regular]
        effect[regular] = delta[regular] / sd[regular]
        # one-tailed upper p-value: P(T_df >= t) = stdtr(df, -t)
        p[regular] = stdtr((n[regular] - 1).astype(np.float64), -t[regular])
    se[flat] = 0.0
    sign = np.sign(delta[flat])
    t[flat] = np.where(sign > 0, np.inf, np.where(sign < 0, -np.inf, np.nan))
    effect[flat] = t[flat]
    p[flat] = np.where(sign > 0, 0.0, np.where(sign < 0, 1.0, 0.5))
    notes = np.full(n.shape, "", dtype=object)
    notes[small] = [f"n = {k} < 2 pairs: no variance estimate, t and p undefined" for k in n[small]]
    notes[flat & (delta > 0)] = "all paired differences equal and > 0 (sd 0): t = +inf, p = 0"
    notes[flat & (delta < 0)] = "all paired differences equal and < 0 (sd 0): t = -inf, p = 1"
    notes[flat & (delta == 0)] = "all paired differences are 0 (sd 0): t undefined, p = 0.5 (no evidence either way)"
    return t, p, se, effect, notes


def paired_one_tailed(baseline, treatment) -> PairedTest:
    """Paired one-tailed t-test, alternative treatment > baseline (== ttest_rel(treatment, baseline, 'greater')).

    baseline, treatment: (n,) per-unit scores in the same unit order (e.g. per-problem 16-sample means).
    """
    d = paired_differences(baseline, treatment)
    n = d.size
    delta = float(d.mean()) if n else math.nan
    sd = float(d.std(ddof=1)) if n >= 2 else math.nan
    constant = bool(n >= 2 and d.max() == d.min())
    if constant:
        delta = float(d[0])  # exact, free of the rounding in mean()
        sd = 0.0
    t, p, se, effect, notes = _tests_from_moments(
        np.array([n]), np.array([delta]), np.array([sd]), np.array([constant])
    )
    return PairedTest(
        delta=delta,
        t=float(t[0]),
        p=float(p[0]),
        n=int(n),
        df=int(n - 1) if n >= 1 else 0,
        sd_diff=sd,
        se=float(se[0]),
        effect_size=float(effect[0]),
        note=str(notes[0]),
    )


def grouped_paired_one_tailed(baseline, treatment, groups, n_groups: int | None = None) -> dict[str, np.ndarray]:
    """The paired one-tailed test of every group at once (no Python loop over units or groups).

    baseline, treatment: (n,) paired scores; groups: (n,) integer group codes in [0, n_groups).
    Returns a dict of (n_groups,) arrays: n, df, delta, sd_diff, se, t, p, effect_size, note, baseline_mean,
    treatment_mean; each group's values equal ``paired_one_tailed`` on that group's units (two-pass variance).
    """
    b, tr = _check_pairs(baseline, treatment)
    g = np.asarray(groups)
    if g.shape != b.shape or not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"groups must be integer codes of shape {b.shape}, got {g.dtype} {g.shape}")
    if g.size and g.min() < 0:
        raise ValueError("group codes must be >= 0")
    k = int(n_groups) if n_groups is not None else (int(g.max()) + 1 if g.size else 0)
    d = tr - b
    n = np.bincount(g, minlength=k).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.bincount(g, weights=d, minlength=k) / n
        base_mean = np.bincount(g, weights=b, minlength=k) / n
        treat_mean = np.bincount(g, weights=tr, minlength=k) / n
        ss = np.bincount(g, weights=(d - delta[g]) ** 2, minlength=k)
        sd = np.where(n >= 2, np.sqrt(ss / (n - 1)), np.nan)
    dmax = np.full(k, -np.inf)
    dmin = np.full(k, np.inf)
    # per-group max/min (the exact all-equal check) by reduceat over the group-sorted differences (ufunc.at is slow)
    if d.size:
        order = np.argsort(g, kind="stable")
        gs = g[order]
        ds = d[order]
        starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
        present = gs[starts]
        dmax[present] = np.maximum.reduceat(ds, starts)
        dmin[present] = np.minimum.reduceat(ds, starts)
    constant = (n >= 2) & (dmax == dmin)
    delta = np.where(constant, np.where(np.isfinite(dmax), dmax, delta), delta)
    sd = np.where(constant, 0.0, sd)
    t, p, se, effect, notes = _tests_from_moments(n, delta, sd, constant)
    return {
        "n": n,
        "df": np.maximum(n - 1, 0),
        "delta": delta,
        "sd_diff": sd,
        "se": se,
        "t": t,
        "p": p,
        "effect_size": effect,
        "note": notes,
        "baseline_mean": base_mean,
        "treatment_mean": treat_mean,
    }


def _percentile_interval(dist: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(dist, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_distribution(
    values,
    statistic: Callable = np.mean,
    resamples: int = 10_000,
    *,
    rng: np.random.Generator,
) -> np.ndarray:
    """(resamples,) values of ``statistic`` on resamples of ``values`` drawn with replacement.

    ``statistic(x, axis=-1)`` must reduce the last axis (np.mean, np.median, ...). Resamples are generated in chunks
    of at most 2**22 values so memory stays bounded (~64 MB) for any n; the chunking depends on n only, so the result
    is a pure function of (values, statistic, resamples, rng state).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (numpy.random.default_rng(seed)); global state is not used"
        )
    x = _as_1d(values, "values")
    n = x.size
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    chunk = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk):
        stop = min(start + chunk, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = statistic(x[idx], axis=-1)
    return out


def bootstrap_ci(
    values,
    statistic: Callable = np.mean,
    level: float = 0.95,
    resamples: int = 10_000,
    *,
    rng: np.random.Generator,
) -> BootstrapCI:
    """Percentile bootstrap CI of ``statistic`` (default the mean) of the 1-D ``values``; rng is required."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    x = _as_1d(values, "values")
    dist = bootstrap_distribution(x, statistic, resamples, rng=rng)
    low, high = _percentile_interval(dist, level)
    return BootstrapCI(
        estimate=float(statistic(x, axis=-1)), low=low, high=high, level=level, resamples=int(resamples), n=x.size
    )


def paired_bootstrap_ci(
    baseline,
    treatment,
    statistic: Callable = np.mean,
    level: float = 0.95,
    resamples: int = 10_000,
    *,
    rng: np.random.Generator,
) -> BootstrapCI:
    """Percentile bootstrap CI of ``statistic`` of the paired differences treatment - baseline (resampling pairs,
    i.e. units, with replacement). With the default mean this is the CI of the mean difference delta."""
    d = paired_differences(baseline, treatment)
    return bootstrap_ci(d, statistic=statistic, level=level, resamples=resamples, rng=rng)


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    With the m finite p-values sorted ascending, adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) (1-based j):
    monotone in the raw p-values, capped at 1, and never below the raw p. NaN p-values (tests that could not be
    performed, e.g. n < 2) stay NaN and do not count towards m. Values outside [0, 1] raise ValueError.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-D, got shape {p.shape}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(finite)
    m = idx.size
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def holm_reject(pvalues, alpha: float = 0.05) -> np.ndarray:
    """Reject flags of Holm's procedure at family-wise level ``alpha`` (adjusted p <= alpha; NaN -> False)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    adj = holm(pvalues)
    return np.where(np.isnan(adj), False, adj <= alpha)
