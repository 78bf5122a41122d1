"""Paired one-tailed t-tests, bootstrap confidence intervals and Holm's correction: pure maths on arrays.

This is the paper's significance test (BroRL, arXiv 2510.01180, Section 4.2.2): a paired, one-tailed
t-test of treatment > baseline over problem instances, each unit being one problem's mean score over its 16 samples.
It equals ``scipy.stats.ttest_rel(treatment, baseline, alternative="greater")`` (and ``ttest_1samp`` of the
differences against 0) wherever that is defined, and additionally gives explicit results where scipy returns NaN.

Maintained code where it exists: ``paired_one_tailed`` is ``scipy.stats.ttest_rel`` with the degenerate cases below
around it, and the bootstrap is ``scipy.stats.bootstrap`` (method="percentile"; its draws equal the hand-written
chunked bootstrap this replaced, so intervals are unchanged for a given seed). Kept by hand: the grouped test
(every group in one bincount pass: scipy tests one sample per call; it is checked against ``paired_one_tailed``)
and Holm's correction (see ``holm``).

Dependencies at import: numpy, and ``scipy.special.stdtr`` (the Student t CDF) for the grouped p-values;
``scipy.stats`` is imported inside the functions that use it. Nothing here imports pandas, torch, vllm or
matplotlib; the pandas side (per-instance means, arm comparisons) is in ``brorl.stats.units``, which
``brorl.stats`` does not import.

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
    """Paired one-tailed t-test, alternative treatment > baseline: ``scipy.stats.ttest_rel(treatment, baseline,
    alternative="greater")`` for t and p, plus delta, sd, se, Cohen's d_z and the degenerate cases of the module
    docstring (n < 2, all differences equal), where scipy returns NaN.

    baseline, treatment: (n,) per-unit scores in the same unit order (e.g. per-problem 16-sample means).
    """
    b, tr = _check_pairs(baseline, treatment)
    d = tr - b
    n = d.size
    constant = bool(n >= 2 and d.max() == d.min())
    if n < 2 or constant:
        delta = float(d[0]) if n else math.nan  # exact, free of the rounding in mean()
        sd = 0.0 if constant else math.nan
        t, p, se, effect, notes = _tests_from_moments(
            np.array([n]), np.array([delta]), np.array([sd]), np.array([constant])
        )
        t, p, se, effect, note = float(t[0]), float(p[0]), float(se[0]), float(effect[0]), str(notes[0])
    else:
        from scipy.stats import ttest_rel

        result = ttest_rel(tr, b, alternative="greater")
        delta, sd = float(d.mean()), float(d.std(ddof=1))
        t, p, se, effect, note = float(result.statistic), float(result.pvalue), sd / math.sqrt(n), delta / sd, ""
    return PairedTest(
        delta=delta,
        t=t,
        p=p,
        n=int(n),
        df=int(n - 1) if n >= 1 else 0,
        sd_diff=sd,
        se=se,
        effect_size=effect,
        note=note,
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


def _scipy_bootstrap(x: np.ndarray, statistic: Callable, level: float, resamples: int, rng: np.random.Generator):
    """scipy.stats.bootstrap's percentile result on ``x`` (imported here: brorl.stats stays light at import).
    Resamples are drawn ``batch`` = 2**22 // n at a time, so memory stays bounded (~64 MB) for any n and the
    draws depend on (n, resamples, rng state) only."""
    import warnings

    from scipy.stats import bootstrap

    with warnings.catch_warnings(), np.errstate(invalid="ignore" if resamples < 2 else "warn"):
        # the standard error it adds (unused here) has no value for a single resample, and says so
        warnings.filterwarnings("ignore", "Degrees of freedom <= 0", RuntimeWarning)
        return bootstrap(
            (x,),
            statistic,
            n_resamples=resamples,
            batch=max(1, _CHUNK_ELEMENTS // x.size),
            vectorized=True,
            confidence_level=level,
            method="percentile",
            rng=rng,
        )


def _check_bootstrap_args(values, resamples: int, rng) -> np.ndarray:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (numpy.random.default_rng(seed)); global state is not used"
        )
    x = _as_1d(values, "values")
    if x.size == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    return x


def bootstrap_distribution(
    values,
    statistic: Callable = np.mean,
    resamples: int = 10_000,
    *,
    rng: np.random.Generator,
) -> np.ndarray:
    """(resamples,) values of ``statistic`` on resamples of ``values`` drawn with replacement
    (scipy.stats.bootstrap's ``bootstrap_distribution``).

    ``statistic(x, axis=-1)`` must reduce the last axis (np.mean, np.median, ...). The result is a pure function of
    (values, statistic, resamples, rng state). One value (n = 1) has no spread: every resample is that value
    (scipy needs two), and the rng is not advanced, as drawing from a single index does not advance it.
    """
    x = _check_bootstrap_args(values, resamples, rng)
    if x.size == 1:
        return np.full(resamples, float(statistic(x[None, :], axis=-1)[0]))
    return np.asarray(_scipy_bootstrap(x, statistic, 0.95, resamples, rng).bootstrap_distribution, dtype=np.float64)


def bootstrap_ci(
    values,
    statistic: Callable = np.mean,
    level: float = 0.95,
    resamples: int = 10_000,
    *,
    rng: np.random.Generator,
) -> BootstrapCI:
    """Percentile bootstrap CI of ``statistic`` (default the mean) of the 1-D ``values`` (scipy.stats.bootstrap,
    method="percentile"); rng is required. n = 1: the interval is the value itself (no spread to resample)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    x = _check_bootstrap_args(values, resamples, rng)
    estimate = float(statistic(x, axis=-1))
    if x.size == 1:
        low = high = estimate
    else:
        interval = _scipy_bootstrap(x, statistic, level, resamples, rng).confidence_interval
        low, high = float(interval.low), float(interval.high)
    return BootstrapCI(estimate=estimate, low=low, high=high, level=level, resamples=int(resamples), n=x.size)


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

    Hand-written on purpose: scipy has no Holm correction (``false_discovery_control`` is Benjamini-Hochberg/Yekutieli
    only), statsmodels (``multipletests(method="holm")``) is not a dependency for one formula, and the NaN rule above
    (tests that could not run are left out of m) is this project's, not a library's.
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
