"""Error bars of pass rates (brorl.stats.stderr): the analytic standard error of a mean over problems against
scipy and a brute-force bootstrap, the 95% interval, family averages, and the degenerate cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as sps
from brorl.stats.stderr import Z95, combined_se, interval, mean_error, mean_of_errors, weighted_mean_error


def test_standard_error_is_scipys_sem_and_the_interval_is_normal():
    x = np.random.default_rng(0).random(40)
    err = mean_error(x)
    assert err.mean == pytest.approx(x.mean()) and err.n == 40
    assert err.se == pytest.approx(sps.sem(x))  # sd (ddof 1) / sqrt(n)
    assert Z95 == pytest.approx(sps.norm.ppf(0.975))
    assert (err.low, err.high) == pytest.approx((x.mean() - Z95 * err.se, x.mean() + Z95 * err.se))


def test_standard_error_matches_a_brute_force_bootstrap_over_problems():
    """The bootstrap standard error of the mean tends to sd(ddof 0) / sqrt(n) = se * sqrt((n - 1) / n)."""
    rng = np.random.default_rng(1)
    x = (rng.random((30, 16)) < rng.random(30)[:, None]).mean(axis=1)  # 30 problems x 16 samples, AIME-sized
    means = x[rng.integers(0, 30, size=(20_000, 30))].mean(axis=1)
    err = mean_error(x)
    assert means.std() == pytest.approx(err.se * math.sqrt(29 / 30), rel=0.03)
    low, high = np.quantile(means, [0.025, 0.975])  # the percentile interval agrees with the normal one here
    assert err.low == pytest.approx(low, abs=0.2 * err.se) and err.high == pytest.approx(high, abs=0.2 * err.se)


def test_degenerate_cases_one_problem_all_correct_and_bad_input():
    one = mean_error([0.75])
    assert one.mean == 0.75 and math.isnan(one.se) and math.isnan(one.low) and math.isnan(one.high) and one.n == 1
    full = mean_error(np.ones(30))
    assert (full.mean, full.se, full.low, full.high) == (1.0, 0.0, 1.0, 1.0)
    same = mean_error(np.full(7, 0.1))  # no spread exactly, whatever the rounding of std
    assert same.se == 0.0 and same.low == same.high == pytest.approx(0.1)
    near = mean_error([1.0, 1.0, 1.0, 0.0])  # the interval is clipped to [0, 1]
    assert near.high == 1.0 and near.low == pytest.approx(0.75 - Z95 * 0.25)
    assert interval(0.01, 0.1) == (0.0, pytest.approx(0.01 + Z95 * 0.1))
    with pytest.raises(ValueError, match="non-empty"):
        mean_error([])
    with pytest.raises(ValueError, match="1 NaN value"):
        mean_error([0.5, float("nan")])


def test_a_family_average_combines_independent_benchmarks():
    rng = np.random.default_rng(2)
    benches = [rng.random(n) for n in (30, 40, 500)]
    errs = [mean_error(b) for b in benches]
    fam = mean_of_errors([e.mean for e in errs], [e.se for e in errs], 570)
    assert fam.mean == pytest.approx(np.mean([b.mean() for b in benches])) and fam.n == 570
    assert fam.se == pytest.approx(math.sqrt(sum(e.se**2 for e in errs)) / 3)
    # brute force: the sd of the family mean when each benchmark is resampled on its own (stratified bootstrap)
    draws = np.mean([b[rng.integers(0, b.size, size=(20_000, b.size))].mean(axis=1) for b in benches], axis=0)
    assert draws.std() == pytest.approx(fam.se, rel=0.05)
    assert math.isnan(combined_se([0.1, float("nan")]))  # a one-problem benchmark leaves the family without one
    with pytest.raises(ValueError):
        combined_se([])


def test_a_weighted_mean_over_tasks_has_an_error_where_tasks_hold_one_problem():
    x = np.array([1.0, 0.0, 0.5, 0.25, 0.75])
    tasks = np.array([0, 0, 1, 2, 3])  # task 0 has two problems, the others one
    w = 1.0 / np.bincount(tasks)[tasks]
    err = weighted_mean_error(x, w)
    assert err.mean == pytest.approx(np.mean([0.5, 0.5, 0.25, 0.75]))
    assert err.se == pytest.approx(x.std(ddof=1) * math.sqrt(np.sum((w / w.sum()) ** 2)))
    assert weighted_mean_error(x, np.ones(5)).se == pytest.approx(mean_error(x).se)  # equal weights: the plain one
    assert math.isnan(weighted_mean_error([0.5], [1.0]).se)
    with pytest.raises(ValueError, match="one length"):
        weighted_mean_error([0.5, 0.5], [1.0])
