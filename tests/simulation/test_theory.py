"""Theorem 1 (first order, distinct sampled set) and Lemma 2 / Corollary 3 checks, on small vocabularies."""

from __future__ import annotations

import json

import numpy as np
import pytest
from brorl.simulation import theory
from brorl.simulation.spec import R_CORRECT, R_WRONG, SimulationSpec
from brorl.simulation.theory_checks import _mc_stats, _Sampler, run_theory_checks

SMALL = SimulationSpec(vocab=500, correct=50, n=4, steps=1)


def _dist(noise: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z, r = SMALL.dense_init()
    if noise:
        z = z + np.random.default_rng(7).standard_normal(z.shape[0])
    return theory.softmax(z), r, r > 0


def _draw(p: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    tokens, counts = _Sampler.distinct(_Sampler(p, rng).draw(n))
    return tokens, counts


@pytest.mark.parametrize("noise", [False, True])
@pytest.mark.parametrize("n", [4, 64, 2000])
def test_theorem1_is_the_first_order_change_with_distinct_tokens(noise: bool, n: int) -> None:
    p, rewards, correct = _dist(noise)
    rng = np.random.default_rng(n)
    for _ in range(10):
        tokens, _ = _draw(p, n, rng)
        sampled = np.zeros(p.shape[0], dtype=bool)
        sampled[tokens] = True
        unit = theory.theorem1_update(p, rewards, sampled, 1.0, n)
        eta = 1e-7 / np.abs(unit).max()
        dz = eta * unit
        terms = theory.theorem_terms(p, correct, sampled, R_CORRECT, R_WRONG)
        predicted = theory.theorem1_dq(terms, eta, n, R_CORRECT, R_WRONG)
        derivative = theory.first_order_dq(p, correct, dz)
        assert predicted == pytest.approx(derivative, rel=1e-10)
        scale = sum(abs(c) for c in theory.theorem1_components(terms, eta, n, R_CORRECT, R_WRONG))
        assert abs(predicted - theory.exact_dq(p, correct, dz)) < 1e-6 * scale


def test_counting_duplicates_breaks_the_distinct_identity() -> None:
    """A deliberately wrong reading (every draw counted) must not satisfy Theorem 1 where draws repeat."""
    p, rewards, correct = _dist(False)
    n = 5000  # N / V = 10: nearly every token is drawn many times
    tokens, counts = _draw(p, n, np.random.default_rng(3))
    sampled = np.zeros(p.shape[0], dtype=bool)
    sampled[tokens] = True
    w = np.zeros(p.shape[0])
    w[tokens] = counts * rewards[tokens]
    dz_counts = (1.0 / n) * p * (w - np.dot(w, p))
    terms = theory.theorem_terms(p, correct, sampled, R_CORRECT, R_WRONG)
    predicted = theory.theorem1_dq(terms, 1.0, n, R_CORRECT, R_WRONG)
    actual = theory.first_order_dq(p, correct, dz_counts)
    assert abs(predicted - actual) / abs(actual) > 0.05


@pytest.mark.parametrize("noise", [False, True])
@pytest.mark.parametrize("n", [4, 100, 2000])
def test_lemma2_monte_carlo_within_3_se(noise: bool, n: int) -> None:
    p, _, _ = _dist(noise)
    p2 = p * p
    sampler = _Sampler(p, np.random.default_rng(11))
    u2 = np.array([p2.sum() - p2[_Sampler.distinct(sampler.draw(n))[0]].sum() for _ in range(4000)])
    expected = theory.expected_unsampled_square_mass(p, n)
    se = u2.std(ddof=1) / np.sqrt(u2.shape[0])
    assert abs(u2.mean() - expected) < 3 * se


def test_sampler_draws_from_p() -> None:
    p, _, _ = _dist(True)
    idx = _Sampler(p, np.random.default_rng(5)).draw(200_000)
    assert np.all(np.diff(idx) >= 0) and idx.min() >= 0 and idx.max() < p.shape[0]
    freq = np.bincount(idx, minlength=p.shape[0]) / idx.shape[0]
    assert np.abs(freq - p).max() < 5 * np.sqrt(p.max() / idx.shape[0])


def test_degenerate_monte_carlo_sample_is_judged_without_dividing_by_zero() -> None:
    constant = np.full(100, 2.0)
    near = _mc_stats(constant, 2.0 + 1e-9, range_bound=1.0)
    assert near["degenerate"] and near["z"] is None and near["passed"]
    far = _mc_stats(constant, 3.0, range_bound=1.0)
    assert far["degenerate"] and not far["passed"]


def test_run_theory_checks_small_spec_passes_and_is_json() -> None:
    report = run_theory_checks(SMALL, [4, 64, 2000], mc_trials=500, theorem_draws=5, finite_step=1e-7, seed=3)
    json.dumps(report)  # JSON-serialisable as is
    assert report["passed"] is True
    assert report["theorem1"]["max_rel_err_vs_derivative"] < 1e-10
    assert report["theorem1"]["max_scaled_err_vs_finite_step"] < 1e-6
    assert report["theorem1"]["count_weighted_counterexample"]["rel_err_max"] > 0.05
    assert len(report["lemma2"]["cells"]) == 2 * 3
    assert all(abs(c["u2"]["z"]) < 3 for c in report["lemma2"]["cells"] if c["u2"]["z"] is not None)
    assert report["parameters"]["seed"] == 3 and report["wall_s"] > 0


def test_run_theory_checks_is_reproducible() -> None:
    a = run_theory_checks(SMALL, [16], mc_trials=50, theorem_draws=2, finite_step=1e-7, seed=9)
    b = run_theory_checks(SMALL, [16], mc_trials=50, theorem_draws=2, finite_step=1e-7, seed=9)
    assert a["lemma2"]["cells"][0]["u2"]["mc_mean"] == b["lemma2"]["cells"][0]["u2"]["mc_mean"]


def test_run_theory_checks_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="n_values"):
        run_theory_checks(SMALL, [], 10, 1, 1e-7, 0)
    with pytest.raises(ValueError, match="finite_step"):
        run_theory_checks(SMALL, [4], 10, 1, 0.0, 0)
