"""Numerical checks of the paper's Section 2: Theorem 1 (first-order dQ_pos) and Lemma 2 / Corollary 3.

Both checks run at two distributions over the vocabulary: the seeded init p = softmax(z) of ``spec.dense_init()``
and a perturbed one (the same logits plus N(0, 1) noise drawn with a fixed seed derived from ``seed``), so that
the identities are not only checked where tokens come in three exchangeable groups.

* Theorem 1. For each N, ``theorem_draws`` draws of N i.i.d. tokens; the sampled set is the set of DISTINCT
  tokens drawn. The update is theory.theorem1_update with eta chosen so that max|dz| = ``finite_step``. The
  theorem's dQ_pos is compared with (i) the exact directional derivative of Q_pos along dz (an identity:
  round-off only) and (ii) the exact change of Q_pos after the finite step (first-order accurate: the gap is
  O(finite_step) times the size of the theorem's terms). Criterion for (ii): |theorem - exact| divided by
  |T1| + |T2| + |T3| (the three terms of Theorem 1; T1, T2 >= 0) is below ``THEOREM1_FINITE_TOL`` in every draw.
  The plain relative error |theorem - exact| / |exact| is reported too; it is inflated in draws where the terms
  nearly cancel and dQ_pos is close to 0 (the perturbed distribution at small N), so it is not the criterion. As
  information only, the same distinct-set formula is compared with the derivative of the count-weighted update
  (each draw counted), which it does not describe when draws repeat (large N / V).
* Lemma 2 / Corollary 3. For each N, ``mc_trials`` trials of N i.i.d. draws; U_2 = sum of p^2 over tokens never
  drawn (also split into correct / incorrect tokens). The Monte Carlo mean is compared with
  theory.expected_unsampled_square_mass: z = (mean - theory) / SE, passing when |z| < ``LEMMA2_Z_MAX`` for
  the total U_2 of every (distribution, N) cell; the splits are reported with their z as well.
"""

from __future__ import annotations

import time

import numpy as np

from .spec import R_CORRECT, R_WRONG, SimulationSpec
from .theory import (
    exact_dq,
    expected_unsampled_square_mass,
    first_order_dq,
    softmax,
    theorem1_components,
    theorem1_dq,
    theorem1_update,
    theorem_terms,
)

THEOREM1_FINITE_TOL = 1e-6  # max relative error of Theorem 1 vs the exact finite-step change
LEMMA2_Z_MAX = 3.0  # max |z| of the Monte Carlo mean of U_2 vs Corollary 3
DEGENERATE_REL_SE = 1e-12  # SE below this fraction of the theory value: the MC sample has (almost) no spread
NOISE_STREAM = 1  # the perturbed distribution's noise comes from default_rng([seed, NOISE_STREAM])


def _distributions(spec: SimulationSpec, seed: int) -> list[dict]:
    """The seeded init and its perturbed version: name, p, rewards, correct mask, how it was made."""
    z, rewards = spec.dense_init()
    correct = rewards > 0
    noise = np.random.default_rng([seed, NOISE_STREAM]).standard_normal(z.shape[0])
    return [
        {
            "name": "seeded",
            "p": softmax(z),
            "rewards": rewards,
            "correct": correct,
            "how": "p = softmax(z) of the seeded init (spec.dense_init())",
        },
        {
            "name": "perturbed",
            "p": softmax(z + noise),
            "rewards": rewards,
            "correct": correct,
            "how": f"p = softmax(z + noise), noise ~ N(0, 1) per token from numpy default_rng([{seed}, {NOISE_STREAM}])",
        },
    ]


class _Sampler:
    """N i.i.d. draws from p by inverse cdf: sorted uniforms (exponential spacings, O(N)) + searchsorted.

    Returns the drawn indices sorted, so distinct tokens and their counts come from one pass over N values,
    without any work of size V per draw.
    """

    def __init__(self, p: np.ndarray, rng: np.random.Generator):
        self.cdf = np.cumsum(p)
        self.cdf /= self.cdf[-1]
        self.rng = rng
        self.last = p.shape[0] - 1

    def draw(self, n: int) -> np.ndarray:
        spacings = np.cumsum(self.rng.standard_exponential(n + 1))
        u = spacings[:-1] / spacings[-1]  # n sorted U(0, 1)
        idx = np.searchsorted(self.cdf, u, side="right")
        return np.minimum(idx, self.last, out=idx)

    @staticmethod
    def distinct(sorted_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct tokens of a sorted draw and how often each was drawn."""
        first = np.empty(sorted_idx.shape[0], dtype=bool)
        first[0] = True
        np.not_equal(sorted_idx[1:], sorted_idx[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, sorted_idx.shape[0]))
        return sorted_idx[starts], counts


def _rel(a: float, b: float) -> float:
    """|a - b| / |b|, 0 when both are 0, inf when only b is."""
    if a == b:
        return 0.0
    return abs(a - b) / abs(b) if b != 0 else float("inf")


def _summary(values: list[float]) -> dict:
    arr = np.asarray(values, dtype=float)
    return {"max": float(arr.max()), "median": float(np.median(arr))}


def _theorem1_cell(dist: dict, n: int, draws: int, finite_step: float, rng: np.random.Generator) -> dict:
    """Theorem 1 vs the exact derivative and the finite step, ``draws`` draws of N tokens."""
    p, rewards, correct = dist["p"], dist["rewards"], dist["correct"]
    sampler = _Sampler(p, rng)
    v = p.shape[0]
    err_deriv, err_finite, err_scaled, err_counts, dup_frac, dq_values = [], [], [], [], [], []
    for _ in range(draws):
        idx = sampler.draw(n)
        tokens, counts = sampler.distinct(idx)
        sampled = np.zeros(v, dtype=bool)
        sampled[tokens] = True
        unit = theorem1_update(p, rewards, sampled, 1.0, n)
        eta = finite_step / float(np.abs(unit).max())
        dz = eta * unit
        terms = theorem_terms(p, correct, sampled, R_CORRECT, R_WRONG)
        predicted = theorem1_dq(terms, eta, n, R_CORRECT, R_WRONG)
        components = theorem1_components(terms, eta, n, R_CORRECT, R_WRONG)
        derivative = first_order_dq(p, correct, dz)
        finite = exact_dq(p, correct, dz)
        err_deriv.append(_rel(predicted, derivative))
        err_finite.append(_rel(predicted, finite))
        # The same gap on the scale of the terms that make up dQ_pos: it stays O(finite_step) even in draws
        # where the three terms nearly cancel and the plain relative error is inflated by a tiny |dQ_pos|.
        err_scaled.append(abs(predicted - finite) / sum(abs(c) for c in components))
        dq_values.append(finite)
        # Information: the update that counts every draw, w_i = n_i R_i, W = sum_k w_k p_k.
        w = np.zeros(v)
        w[tokens] = counts * rewards[tokens]
        dz_counts = (eta / n) * p * (w - float(np.dot(w, p)))
        err_counts.append(_rel(predicted, first_order_dq(p, correct, dz_counts)))
        dup_frac.append(1.0 - tokens.shape[0] / n)
    return {
        "distribution": dist["name"],
        "n": n,
        "draws": draws,
        "rel_err_vs_derivative": _summary(err_deriv),
        "rel_err_vs_finite_step": _summary(err_finite),
        "scaled_err_vs_finite_step": _summary(err_scaled),
        "dq_finite_step": {"min": float(min(dq_values)), "max": float(max(dq_values))},
        "duplicate_draw_fraction_median": float(np.median(dup_frac)),
        "count_weighted_rel_err": _summary(err_counts),
        "passed": bool(max(err_scaled) < THEOREM1_FINITE_TOL),
    }


def _mc_stats(samples: np.ndarray, theory: float, range_bound: float) -> dict:
    """Mean, SE, z of a Monte Carlo sample vs theory; a sample without spread is judged separately.

    When the SE is at round-off level (every trial gave the same U_2, e.g. no duplicate draw ever happened),
    z is meaningless: the unobserved events' share of the expectation cannot be seen in M trials. Then the
    cell passes when |mean - theory| is below what events of probability 3/M (the 95% "rule of three" bound on
    an event never seen in M trials) could move the mean by: 3/M times the largest possible deviation of one
    trial (``range_bound``), or round-off.
    """
    m = samples.shape[0]
    mean = float(samples.mean())
    se = float(samples.std(ddof=1) / np.sqrt(m)) if m > 1 else float("inf")
    diff = mean - theory
    out = {"theory": theory, "mc_mean": mean, "mc_se": se, "rel_err": diff / theory if theory != 0 else float("nan")}
    if se <= DEGENERATE_REL_SE * abs(theory):
        tol = max(DEGENERATE_REL_SE * abs(theory), 3.0 / m * range_bound)
        out.update(z=None, degenerate=True, tolerance=tol, passed=bool(abs(diff) <= tol))
    else:
        z = diff / se
        out.update(z=z, degenerate=False, passed=bool(abs(z) < LEMMA2_Z_MAX))
    return out


def _lemma2_cell(dist: dict, n: int, trials: int, rng: np.random.Generator) -> dict:
    """Corollary 3 by Monte Carlo: U_2, U_pos2, U_neg2 over ``trials`` trials of N i.i.d. draws."""
    p, correct = dist["p"], dist["correct"]
    p2 = p * p
    sampler = _Sampler(p, rng)
    totals = {"all": float(p2.sum()), "correct": float(p2[correct].sum()), "incorrect": float(p2[~correct].sum())}
    u_all, u_pos = np.empty(trials), np.empty(trials)
    t0 = time.perf_counter()
    for k in range(trials):
        tokens, _ = sampler.distinct(sampler.draw(n))
        q = p2[tokens]
        u_all[k] = totals["all"] - q.sum()
        u_pos[k] = totals["correct"] - q[correct[tokens]].sum()
    wall = time.perf_counter() - t0
    u_neg = u_all - u_pos
    # Largest possible removal of square mass in one trial: the N largest p_i^2 (bound for the degenerate case).
    top = np.sort(p2)[::-1][: min(n, p2.shape[0])]
    splits = {}
    for name, samples, mask in (
        ("u2", u_all, np.ones_like(correct)),
        ("u_pos2", u_pos, correct),
        ("u_neg2", u_neg, ~correct),
    ):
        theory = expected_unsampled_square_mass(p[mask], n)
        splits[name] = _mc_stats(samples, theory, float(top.sum()))
    return {
        "distribution": dist["name"],
        "n": n,
        "trials": trials,
        "sum_p2": totals["all"],
        **splits,
        "wall_s": wall,
        "passed": splits["u2"]["passed"],
        "splits_within_z_max": bool(splits["u_pos2"]["passed"] and splits["u_neg2"]["passed"]),
    }


def run_theory_checks(
    spec: SimulationSpec, n_values: list[int], mc_trials: int, theorem_draws: int, finite_step: float, seed: int
) -> dict:
    """Theorem 1 (first order, distinct sampled set) and Lemma 2 / Corollary 3 (Monte Carlo) -> JSON-able dict.

    Top-level ``passed`` is True when every Theorem 1 cell has a finite-step error (scaled by the size of the
    theorem's terms) below THEOREM1_FINITE_TOL and every Lemma 2 cell has |z| < LEMMA2_Z_MAX (or, with no Monte Carlo
    spread, a gap
    within the rule-of-three bound).
    """
    if not n_values or any(int(n) < 1 for n in n_values):
        raise ValueError(f"n_values must be a non-empty list of integers >= 1, got {n_values}")
    if mc_trials < 2 or theorem_draws < 1:
        raise ValueError(f"need mc_trials >= 2 and theorem_draws >= 1, got {mc_trials} and {theorem_draws}")
    if not 0 < finite_step < 1:
        raise ValueError(f"finite_step must be in (0, 1), got {finite_step}")
    start = time.perf_counter()
    dists = _distributions(spec, seed)
    theorem_cells, lemma_cells = [], []
    t0 = time.perf_counter()
    for i, dist in enumerate(dists):
        for j, n in enumerate(n_values):
            rng = np.random.default_rng([seed, 10 + i, j])
            theorem_cells.append(_theorem1_cell(dist, int(n), theorem_draws, finite_step, rng))
    theorem_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, dist in enumerate(dists):
        for j, n in enumerate(n_values):
            rng = np.random.default_rng([seed, 20 + i, j])
            lemma_cells.append(_lemma2_cell(dist, int(n), mc_trials, rng))
    lemma_wall = time.perf_counter() - t0
    theorem1 = _theorem1_summary(theorem_cells, max(int(n) for n in n_values), finite_step, theorem_wall)
    lemma2 = _lemma2_summary(lemma_cells, lemma_wall)
    return {
        "passed": bool(theorem1["passed"] and lemma2["passed"]),
        "theorem1": theorem1,
        "lemma2": lemma2,
        "parameters": {
            "spec": spec.as_dict(),
            "n_values": [int(n) for n in n_values],
            "mc_trials": mc_trials,
            "theorem_draws": theorem_draws,
            "finite_step": finite_step,
            "seed": seed,
            "distributions": {d["name"]: d["how"] for d in dists},
            "rewards": {"correct": R_CORRECT, "incorrect": R_WRONG},
            "sampler": "inverse cdf: sorted uniforms from exponential spacings + numpy searchsorted",
        },
        "wall_s": time.perf_counter() - start,
    }


def _theorem1_summary(theorem_cells: list[dict], largest: int, finite_step: float, wall: float) -> dict:
    """Theorem 1's part of the report: the claim, the criterion, the worst errors over its cells and its verdict."""
    counted = [c for c in theorem_cells if c["n"] == largest]
    return {
        "claim": "Theorem 1's dQ_pos equals the first-order change of Q_pos under dz_i = (eta/N) p_i "
        "(R_i 1[i sampled] - S_R), with the sampled set = DISTINCT tokens drawn",
        "criterion": f"|theorem - exact finite-step change| / (|T1| + |T2| + |T3|) < {THEOREM1_FINITE_TOL:g} in "
        f"every draw (max|dz| = {finite_step:g}); the plain relative error is reported (it is inflated "
        "where dQ_pos nearly cancels); the error vs the exact derivative is round-off",
        "max_rel_err_vs_derivative": max(c["rel_err_vs_derivative"]["max"] for c in theorem_cells),
        "max_rel_err_vs_finite_step": max(c["rel_err_vs_finite_step"]["max"] for c in theorem_cells),
        "max_scaled_err_vs_finite_step": max(c["scaled_err_vs_finite_step"]["max"] for c in theorem_cells),
        "plain_rel_err_below_tol_everywhere": all(
            c["rel_err_vs_finite_step"]["max"] < THEOREM1_FINITE_TOL for c in theorem_cells
        ),
        "cells": theorem_cells,
        "count_weighted_counterexample": {
            "note": "information, not a pass criterion: the distinct-set formula vs the exact derivative of the "
            "update that counts every draw (w_i = n_i R_i); it breaks where draws repeat",
            "n": largest,
            "rel_err_max": max(c["count_weighted_rel_err"]["max"] for c in counted),
            "rel_err_median": {c["distribution"]: c["count_weighted_rel_err"]["median"] for c in counted},
            "duplicate_draw_fraction_median": {c["distribution"]: c["duplicate_draw_fraction_median"] for c in counted},
        },
        "wall_s": wall,
        "passed": all(c["passed"] for c in theorem_cells),
    }


def _lemma2_summary(lemma_cells: list[dict], wall: float) -> dict:
    """Lemma 2 / Corollary 3's part of the report: the claim, the criterion, the largest |z| and its verdict."""
    zs = [abs(c["u2"]["z"]) for c in lemma_cells if c["u2"]["z"] is not None]
    return {
        "claim": "Corollary 3: E[U_2] = sum_i p_i^2 (1 - p_i)^N after N i.i.d. draws (U_2 = square mass of "
        "never-drawn tokens); also its correct / incorrect splits",
        "criterion": f"|z| = |MC mean - theory| / SE < {LEMMA2_Z_MAX:g} for U_2 in every cell; a cell whose "
        "MC sample has no spread passes when the gap is within 3/M x the largest one-trial deviation",
        "max_abs_z": max(zs) if zs else None,
        "max_abs_z_splits": max(
            (abs(c[k]["z"]) for c in lemma_cells for k in ("u_pos2", "u_neg2") if c[k]["z"] is not None), default=None
        ),
        "cells": lemma_cells,
        "wall_s": wall,
        "passed": all(c["passed"] for c in lemma_cells),
    }
