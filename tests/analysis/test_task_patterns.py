"""Figure 4's patterns decided by the paired tests per task (brorl.analysis.tasks) on
synthetic trajectories of the paper's size: 100 problems x 16 samples per task, two checkpoints per arm."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from brorl.analysis.checkpoints import task_pass1
from brorl.analysis.tasks import apply_tests, classify_tasks, pattern_shares, task_tests, trajectory_pairs

PROBLEMS, SAMPLES = 100, 16
# task -> (control's gain, treatment's gain) at the last checkpoint, in pass-rate points; half of it at the first
TASKS = {"both": (10, 16), "only_brorl": (-5, 10), "flat": (0, 0), "tied": (10, 10)}
HOURS = {"ctl": {1: 1.0, 2: 2.0}, "trt": {1: 1.1, 2: 2.2}}


def units_of(curves: dict[str, dict[tuple[str, int], np.ndarray]], rng: np.random.Generator) -> pd.DataFrame:
    """Units drawn from each task's per-checkpoint pass rates ({task: {(arm, step): rates}}), SAMPLES per problem."""
    rows = []
    for task, points in curves.items():
        for (arm, step), p in points.items():
            scores = rng.binomial(SAMPLES, np.clip(p, 0, 1)) / SAMPLES
            rows += [
                {"arm": arm, "step": step, "benchmark": "rg_x", "family": "reasoning_gym", "task": task, "id": i}
                | {"n_samples": SAMPLES, "score": s}
                for i, s in enumerate(scores)
            ]
    return pd.DataFrame(rows)


def synthetic_units(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for task, (gain_c, gain_t) in TASKS.items():
        p0 = rng.uniform(0.25, 0.65, PROBLEMS)  # each problem's own difficulty, shared by every checkpoint
        points = {("base", 0): p0}
        for arm, gain in (("ctl", gain_c), ("trt", gain_t)):
            points[(arm, 1)] = p0 + gain / 200
            points[(arm, 2)] = p0 + gain / 100
        frames.append(units_of({task: points}, rng))  # draws in the order the seed's verdicts were read in
    return pd.concat(frames, ignore_index=True)


def test_trajectory_pairs_match_checkpoints_by_training_hours():
    assert trajectory_pairs([1, 2], [1, 2], HOURS, "trt", "ctl") == [(1, 1), (2, 2)]
    assert trajectory_pairs([1, 2], [1, 2, 3], {"trt": {1: 2.9, 2: 3.0}, "ctl": {1: 1, 2: 2, 3: 3}}, "trt", "ctl") == [
        (1, 3),
        (2, 3),
    ]
    assert trajectory_pairs([1, 2], [1, 2], None, "trt", "ctl") == [(2, 2)]  # no hours: the compared steps only


def test_patterns_by_the_paired_tests_at_the_papers_size():
    units = synthetic_units()
    steps = {"ctl": 2, "trt": 2}
    tests = task_tests(units, "ctl", "trt", "base", 0, steps, HOURS).set_index("task")
    assert (tests["n_problems"] == PROBLEMS).all() and (tests["compared_pairs"] == 2).all()
    assert tests.loc["both", "p_treatment"] < 1e-6 and tests.loc["flat", "p_treatment"] > 0.05
    assert tests.loc["only_brorl", "p_control"] > 0.5  # ProRL lost 5 points: no improvement
    # BroRL ahead over the trajectory: mean gain difference 3 (both) and 7.5 (only_brorl) points; none when tied
    assert tests.loc["both", "ahead_delta"] > 0 and tests.loc["both", "p_ahead"] < 0.05
    assert tests.loc["tied", "p_ahead"] > 0.05
    classified = classify_tasks(task_pass1(units), "ctl", "trt", "base", 0, {1: ["both"], 3: ["flat"]}, steps=steps)
    out = apply_tests(classified, tests.reset_index(), alpha=0.05).set_index("task")
    assert out["pattern"].to_dict() == {"both": 1, "flat": 3, "only_brorl": 2, "tied": 1}
    assert out["ahead"].to_dict() == {"both": True, "flat": False, "only_brorl": True, "tied": False}
    assert (out["paper_pattern"].dropna() == out.loc[out["paper_pattern"].notna(), "pattern"]).all()
    # the same rule at alpha 0.01 and 0.1, and the point rule, are columns: the shares' dependence on the rule shows
    assert {"pattern_alpha0.01", "pattern_alpha0.1", "pattern_margin"} <= set(out.columns)
    assert pattern_shares(out.reset_index(), "pattern_margin") == {1: 0.5, 2: 0.25, 3: 0.25}
    # the classes with their power: ProRL's loss in "only_brorl" (-3 points measured, raw p 0.02) is not shown once
    # corrected over the four tasks, so the task is undetermined where the detection rule said pattern 2; a flat
    # task is undetermined, not "neither" (a change within the 1-point margin cannot be shown at this size); each
    # arm's detectable gain (about 4 points here) is printed beside its verdict
    assert out["figure4_class"].to_dict() == {
        "both": "both",
        "flat": "undetermined",
        "only_brorl": "undetermined",
        "tied": "both",
    }
    assert out.loc["only_brorl", "control_verdict"] == "undetermined"
    assert out["treatment_mde"].between(2, 6).all() and out["control_mde"].between(2, 6).all()
    assert out.loc["both", "lead_share"] == 1.0 and out.loc["flat", "lead_share"] == 0.0
    # a loss large enough is shown: ProRL's verdict on "only_brorl" with ten times the problems' precision
    sharper = tests.reset_index().assign(control_se=tests["control_se"].to_numpy() / 10, p_control=lambda d: 1.0)
    again = apply_tests(classified, sharper, alpha=0.05).set_index("task")
    assert (
        again.loc["only_brorl", "figure4_class"] == "brorl_only"
        and again.loc["only_brorl", "control_verdict"] == "worse"
    )


def test_a_task_too_small_to_test_is_not_shown_to_improve():
    units = synthetic_units()
    one = units[units["id"] == 0]  # one problem per task: no variance, no test
    steps = {"ctl": 2, "trt": 2}
    tests = task_tests(one, "ctl", "trt", "base", 0, steps, HOURS)
    out = apply_tests(classify_tasks(task_pass1(one), "ctl", "trt", "base", 0, steps=steps), tests, 0.05)
    assert set(out["pattern"]) == {3} and not out["ahead"].any()


def test_the_algorithms_table_reads_each_pair_by_the_paired_test_and_keeps_pairs_without_checkpoints():
    """Three pairs at the paper's size (100 problems x 16 samples on each of 3 benchmarks): one whose N=512 arm is
    6 points ahead (holds), one tied (not resolved), one never evaluated (kept, with the reason)."""
    from brorl.analysis.extensions import algorithm_rows

    rng = np.random.default_rng(11)
    rows = []
    gains = {"a16": 0.0, "a512": 0.06, "b16": 0.02, "b512": 0.02}
    for bench in ("math_a", "math_b", "math_c"):
        p0 = rng.uniform(0.2, 0.7, PROBLEMS)
        for arm, gain in gains.items():
            for step in (10, 20):
                scores = rng.binomial(SAMPLES, np.clip(p0 + gain * step / 20, 0, 1)) / SAMPLES
                rows += [
                    {"arm": arm, "step": step, "benchmark": bench, "family": "math", "id": i, "score": s}
                    for i, s in enumerate(scores)
                ]
    units = pd.DataFrame(rows)
    pairs = [
        {"estimator": "rloo", "n16": "a16", "n512": "a512"},
        {"estimator": "group_norm", "n16": "b16", "n512": "b512"},
        {"estimator": "dr_grpo", "n16": "c16", "n512": "c512"},
    ]
    hours = {
        "a16": {10: 1.0, 20: 2.0},
        "a512": {10: 1.2, 20: 2.4},
        "b16": {10: 1.0, 20: 2.0},
        "b512": {10: 1.0, 20: 2.0},
    }
    # lr x RMS advantage per step: the N=512 arm's steps twice the N=16 arm's (GRPO's unnormalised group_norm),
    # and a step past the compared checkpoint that must not count
    sizes = {
        "a16": {s: {"lr": 1e-6, "adv_rms": 1.0, "grad_norm": 0.5} for s in range(1, 21)},
        "a512": {s: {"lr": 1e-6, "adv_rms": 2.0, "grad_norm": 0.7} for s in range(1, 11)}
        | {11: {"lr": 1e-6, "adv_rms": 50.0, "grad_norm": 9.0}},
    }
    table = algorithm_rows(
        units, hours, pairs, target_hours=1.1, alpha=0.05, alternative="greater", resamples=200, seed=0,
        step_sizes=sizes,
    ).set_index("estimator")  # fmt: skip
    assert list(table.index) == ["rloo", "group_norm", "dr_grpo"]  # no pair dropped
    rloo, grpo = table.loc["rloo"], table.loc["group_norm"]
    assert (rloo["n16_step"], rloo["n512_step"]) == (10, 10)  # nearest 1.1 h: equal compute, not the last steps
    assert rloo["n"] == 3 * PROBLEMS and rloo["delta"] == pytest.approx(0.03, abs=0.01)
    assert rloo["n16_step_size"] == pytest.approx(1e-6) and rloo["n512_step_size"] == pytest.approx(2e-6)
    assert rloo["n512_grad_norm"] == pytest.approx(0.7)  # steps 1-10 only
    assert np.isnan(grpo["n16_step_size"])  # no step recorded it (metrics before schema 8): unknown, not 0
    # Holm over the two tested rows: the smaller p doubled, the larger kept (monotone), the untested row out of m
    assert rloo["p_holm"] == pytest.approx(min(1.0, 2 * rloo["p"])) and grpo["p_holm"] == pytest.approx(grpo["p"])
    assert rloo["p_holm"] < 0.05 and rloo["verdict"] == "N gain holds"
    assert grpo["p"] >= 0.05 and grpo["verdict"].startswith("not resolved")
    assert table.loc["dr_grpo", "verdict"].startswith("not run: arm 'c16' has no evaluated checkpoint")
    assert np.isnan(table.loc["dr_grpo", "p_holm"])


def test_prorl_falling_from_its_own_midpoint_is_tested_and_files_the_task_as_brorl_only():
    """Table 1's ProRL: up from the start, then down from its peak while still above the start. The test against
    the start cannot see the fall; the pre-declared test against ProRL's checkpoint nearest half its hours can."""
    from brorl.analysis.tasks import midpoint_step

    assert midpoint_step([1, 2, 3, 4], 4, {1: 1.0, 2: 2.1, 3: 3.0, 4: 4.0}) == 2  # nearest 2.0 h
    assert midpoint_step([2, 4, 6], 6, None) == 2 and midpoint_step([6], 6, None) is None  # half of step 6: 3, tie
    rng = np.random.default_rng(5)
    frames = []
    for task, rise, fall in (("peak_then_fall", 20, 12), ("steady", 10, 0)):
        p0 = rng.uniform(0.25, 0.55, PROBLEMS)
        curve = {("base", 0): p0, ("ctl", 1): p0 + rise / 100, ("ctl", 2): p0 + (rise - fall) / 100}
        frames.append(units_of({task: curve | {("trt", 1): p0 + 0.1, ("trt", 2): p0 + 0.2}}, rng))
    units, steps = pd.concat(frames, ignore_index=True), {"ctl": 2, "trt": 2}
    tests = task_tests(units, "ctl", "trt", "base", 0, steps, HOURS)
    out = apply_tests(classify_tasks(task_pass1(units), "ctl", "trt", "base", 0, steps=steps), tests, 0.05)
    out = out.set_index("task")
    assert out.loc["peak_then_fall", "control_mid_step"] == 1 and out.loc["peak_then_fall", "control_declines"]
    assert out.loc["peak_then_fall", "control_verdict"] == "improves"  # still above the start
    assert out.loc["peak_then_fall", "figure4_class"] == "brorl_only"
    assert not out.loc["steady", "control_declines"] and out.loc["steady", "figure4_class"] == "both"


def test_the_n_sweep_task_by_task_beside_the_tasks_brorl_did_not_improve():
    from brorl.analysis.extensions import sweep_columns
    from brorl.analysis.summary_sections import figure4_lines

    rng = np.random.default_rng(9)
    rows = []
    for task, gain_512, gain_1024 in (("hard", 0.0, 0.15), ("easy", 0.15, 0.15), ("flat", 0.0, 0.0)):
        p0 = rng.uniform(0.2, 0.5, PROBLEMS)
        for (arm, step), g in {("base", 0): 0.0, ("n512", 5): gain_512, ("n1024", 5): gain_1024}.items():
            scores = rng.binomial(SAMPLES, np.clip(p0 + g, 0, 1)) / SAMPLES
            rows += [
                {"arm": arm, "step": step, "benchmark": "rg_x", "task": task, "id": i, "score": s}
                for i, s in enumerate(scores)
            ]
    units = pd.DataFrame(rows)
    sweep = [{"name": "n512", "n": 512}, {"name": "n1024", "n": 1024}]
    out = sweep_columns(units, sweep, 5, ("base", 0), 0.05, 1.0).set_index("task")
    assert set(out["sweep_largest_arm"]) == {"n1024"} and out.loc["hard", "sweep_n1024"] > 10
    assert (
        out.loc["hard", "sweep_largest_verdict"] == "improves"
        and out.loc["flat", "sweep_largest_verdict"] != "improves"
    )
    assert sweep_columns(units, [{"name": "n2048", "n": 2048}], 5, ("base", 0), 0.05, 1.0).columns.tolist() == ["task"]
    # SUMMARY.md: of the tasks BroRL (N = 512) did not improve, which the largest N does
    classified = out.reset_index().assign(
        treatment_verdict=lambda d: d["task"].map({"hard": "undetermined", "easy": "improves", "flat": "no gain"}),
        pattern=3,
        paper_pattern=None,
    )
    text = "\n".join(figure4_lines(classified))
    assert "The N sweep on the 2 tasks BroRL did not improve: the largest N (`n1024`) improves 1 of them" in text
    assert "): hard." in text
