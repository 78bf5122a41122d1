"""Operating characteristics of Figure 4's rule (brorl.analysis.tasks) on simulated tasks at the paper's size.

Each simulated task has 100 problems x 16 samples at two checkpoints; per-problem start rates are drawn from
Uniform(0, 1) (Reasoning Gym tasks spread over the whole range), and a true mean gain g moves each problem's rate
to p + 2g(1 - p) (the mean of 1 - p is 1/2, so the mean gain is g, and no rate leaves [0, 1] for g <= 1/2). Every
replicate holds a family of 10 such tasks, corrected together (Holm) as the analysis corrects its tasks. 1,000
replicates, seed 0: seconds of numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from brorl.analysis.tasks import CLASSES, class_shares, equivalence_p, mde, task_class, verdicts
from scipy import stats

PROBLEMS, SAMPLES, TASKS, REPLICATES, ALPHA, MARGIN = 100, 16, 10, 1000, 0.05, 0.01


def simulate(gain: float, rng: np.random.Generator, replicates: int = REPLICATES) -> dict[str, np.ndarray]:
    """Per (replicate, task): the paired test's delta, se and p (one-tailed, gain > 0) of the change since the start."""
    start = rng.uniform(0, 1, (replicates, TASKS, PROBLEMS))
    after = start + 2 * gain * (1 - start)
    diff = (rng.binomial(SAMPLES, after) - rng.binomial(SAMPLES, start)) / SAMPLES
    delta, se = diff.mean(-1), diff.std(-1, ddof=1) / np.sqrt(PROBLEMS)
    return {"delta": delta, "se": se, "p_up": stats.t.sf(delta / se, PROBLEMS - 1)}


def verdicts_of(sim: dict[str, np.ndarray]) -> np.ndarray:
    """The verdicts of every task, each replicate's family corrected on its own."""
    df = np.full(sim["delta"].shape[1], PROBLEMS - 1)
    return np.array(
        [verdicts(p, equivalence_p(d, s, df, MARGIN), ALPHA) for p, d, s in zip(sim["p_up"], sim["delta"], sim["se"])]
    )


def test_with_no_true_change_a_change_is_claimed_at_no_more_than_the_nominal_rate():
    sim = simulate(0.0, np.random.default_rng(0))
    found = verdicts_of(sim)
    claimed = np.isin(found, ["improves", "worse"])
    assert claimed.mean() <= ALPHA / TASKS * 2  # per task: Holm over 10 tasks, each tail at alpha
    assert (found == "improves").any(axis=1).mean() <= ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / REPLICATES)


def test_a_true_one_point_gain_is_mostly_undetermined_and_rarely_called_no_gain():
    found = verdicts_of(simulate(0.01, np.random.default_rng(1)))
    assert (found == "undetermined").mean() > 0.5
    assert (found == "no gain").mean() < 0.05


def test_twice_the_printed_minimal_detectable_effect_is_found_in_most_replicates():
    rng = np.random.default_rng(2)
    printed = float(np.median(mde(simulate(0.0, rng)["se"], PROBLEMS - 1, ALPHA)))
    found = verdicts_of(simulate(2 * printed, rng))
    assert (found == "improves").mean() >= 0.8


def test_the_printed_minimal_detectable_effect_is_the_gain_found_in_80_percent_of_single_tests():
    rng = np.random.default_rng(3)
    printed = float(np.median(mde(simulate(0.0, rng)["se"], PROBLEMS - 1, ALPHA)))
    gains = np.linspace(0.005, 0.08, 16)
    power = [(simulate(g, rng, 300)["p_up"] < ALPHA).mean() for g in gains]  # one task's test, no correction
    found_80 = float(np.interp(0.8, power, gains))
    assert abs(printed - found_80) <= 0.2 * found_80, (printed, found_80, power)
    assert 0.02 < printed < 0.06  # about 3.5 points at this size (the paper's example panels move 0.6-2.5)


@pytest.mark.parametrize(
    ("treatment", "control", "expected"),
    [
        ("improves", "improves", "both"),
        ("improves", "worse", "brorl_only"),
        ("improves", "no gain", "brorl_only"),
        ("improves", "undetermined", "undetermined"),
        ("no gain", "improves", "prorl_only"),
        ("worse", "no gain", "neither"),
        ("undetermined", "no gain", "undetermined"),
    ],
)
def test_a_task_class_needs_both_verdicts_to_decide_it(treatment, control, expected):
    assert task_class(treatment, control) == expected


def test_shares_are_over_determined_tasks_only_and_equivalence_is_exact_without_spread():
    shares = class_shares(["both", "undetermined", "brorl_only", "undetermined"])
    assert shares["both"] == shares["brorl_only"] == 0.5 and "undetermined" not in shares and set(shares) < set(CLASSES)
    assert equivalence_p(np.array([0.0, 0.02]), np.array([0.0, 0.0]), np.array([9, 9]), MARGIN).tolist() == [0.0, 1.0]
