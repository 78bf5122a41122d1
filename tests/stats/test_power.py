"""What a run can establish (brorl.stats.power, brorl.ops.plan.power): the power and MDE formulas against a simulation of
problems x samples x training seeds, the paper's own numbers recomputed from its tables, and the plan's verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from brorl.benchmarks.problems import benchmark_problems
from brorl.config import ConfigError, load_yaml_config
from brorl.ops.plan.power import power_lines, power_verdict
from brorl.stats import power as P
from helpers import CONFIG, ROOT, TINY

ONE_NODE = ROOT / "workflow" / "presets" / "one_node.yaml"


def simulated_rejections(effect, seed_sd, runs, problems=1500, samples=16, draws=3000, alpha=0.05, seed=0):
    """Share of draws in which the one-sided test rejects: problems with Beta pass rates, binomial samples, a
    seed offset per run; the test over runs (t, df 2k-2) or, for one run, a z-test with sigma_seed known."""
    rng = np.random.default_rng(seed)
    rates = rng.beta(1.2, 0.8, size=problems)  # U-shaped-ish, mean 0.6
    mean = rates.mean()
    r = float(np.mean(rates * (1 - rates)) / (mean * (1 - mean)))
    eval_se = P.eval_se_points(problems, samples, mean, r)
    shape = (draws, runs, problems)

    def arm(shift):
        offsets = rng.normal(0, seed_sd / 100, size=(draws, runs, 1))
        p = np.clip(rates + shift / 100 + offsets, 0, 1)
        return 100 * rng.binomial(samples, p, size=shape).mean(axis=2) / samples  # (draws, runs) pooled points

    control, treatment = arm(0.0), arm(effect)
    diff = treatment.mean(axis=1) - control.mean(axis=1)
    if runs == 1:
        stat = diff / P.diff_se(eval_se, seed_sd, 1)
        critical = P.quantile(1 - alpha)
    else:
        pooled_var = (treatment.var(axis=1, ddof=1) + control.var(axis=1, ddof=1)) / 2
        stat = diff / np.sqrt(2 * pooled_var / runs)
        critical = P.quantile(1 - alpha, 2 * runs - 2)
    return float(np.mean(stat > critical)), eval_se


@pytest.mark.parametrize(
    "effect, seed_sd, runs", [(0.4, 0.3, 1), (0.8, 0.3, 1), (0.0, 0.3, 1), (1.0, 0.3, 3), (0.6, 0.1, 2)]
)
def test_power_matches_a_simulation_of_problems_samples_and_seeds(effect, seed_sd, runs):
    simulated, eval_se = simulated_rejections(effect, seed_sd, runs)
    predicted = P.power_of(effect, P.diff_se(eval_se, seed_sd, runs), runs, 0.05)
    assert abs(simulated - predicted) < 0.04, (simulated, predicted)  # 3,000 draws: binomial se <= 0.009


def test_one_run_per_arm_calls_a_zero_effect_significant_as_the_formula_says():
    rng = np.random.default_rng(1)
    eval_se, seed_sd, draws = 0.05, 0.3, 20000
    # each arm's pooled score: evaluation noise plus its run's seed offset; the test sees only the evaluation noise
    diff = rng.normal(0, np.sqrt(2 * (eval_se**2 + seed_sd**2)), size=draws)
    simulated = float(np.mean(diff / (np.sqrt(2) * eval_se) > P.quantile(0.95)))
    assert abs(simulated - P.false_positive_rate(eval_se, seed_sd, 0.05)) < 0.01


def test_the_minimum_detectable_effect_has_the_target_power():
    for runs in (1, 2, 4):
        se = P.diff_se(0.05, 0.3, runs)
        assert P.power_of(P.minimum_detectable(se, runs, 0.05), se, runs, 0.05) == pytest.approx(0.8, abs=0.01)


def test_the_papers_tables_imply_a_larger_pooled_delta_than_its_test_and_rg_algorithmic_drives_it():
    from brorl.analysis.paper import load_paper

    problems = benchmark_problems(load_yaml_config(CONFIG))
    tables = load_paper()["benchmark_tables"]
    equal_time = P.pooled_delta(tables, problems, P.EQUAL_TIME_TREATMENT, P.EQUAL_TIME_CONTROL)
    assert sum(problems.values()) == 13014
    assert equal_time.delta == pytest.approx(1.19, abs=0.01) and equal_time.driver == "rg_algorithmic"
    assert equal_time.driver_share == pytest.approx(0.97, abs=0.01)
    assert P.pooled_delta(tables, problems, "control@535", "base@0").delta == pytest.approx(0.33, abs=0.01)
    assert P.pooled_delta(tables, problems, "treatment@191", "base@0").delta == pytest.approx(1.75, abs=0.01)


def test_the_plan_says_the_one_node_preset_cannot_answer_the_claim_and_the_paper_can():
    one_node = load_yaml_config(CONFIG, ONE_NODE)
    verdict = power_verdict(one_node, benchmark_problems(one_node))
    assert "predicts +0.03 to +0.20 points" in verdict and "this run cannot support or falsify the claim" in verdict
    assert "power 0.06-0.12 at seed sd 0.3" in verdict
    paper = load_yaml_config(CONFIG)
    assert "this run can support or falsify the claim" in power_verdict(paper, benchmark_problems(paper))
    lines = power_lines(one_node, benchmark_problems(one_node))
    assert any("calls a zero effect significant 40% of the time" in line for line in lines), lines


def test_a_pair_without_a_published_effect_gets_its_mde_only():
    tiny = load_yaml_config(CONFIG, TINY)
    verdict = power_verdict(tiny, benchmark_problems(tiny))
    assert "no published effect to power against" in verdict and "MDE" in verdict


@pytest.mark.parametrize(
    "power, key",
    [
        ({"seed_sd_points": [-0.1]}, "analysis.power.seed_sd_points[0]"),
        ({"seed_sd_points": ["x"]}, "seed_sd_points[0]"),
        ({"target": 1.5}, "analysis.power.target"),
    ],
)
def test_a_bad_power_setting_is_refused_naming_the_key(tmp_path, power, key):
    import yaml

    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"analysis": {"power": power}}))
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        load_yaml_config(CONFIG, bad)
