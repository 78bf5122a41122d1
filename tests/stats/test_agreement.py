"""A verdict per number against the paper (brorl.stats.agreement): the noise of a rerun on the same problems, tried
on synthetic 16-sample runs drawn at the paper's per-benchmark rates and problem counts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from brorl.analysis.checkpoints import benchmark_pass1
from brorl.benchmarks.registry import load_registry
from brorl.stats.agreement import ABOVE, AGREES, BELOW, NO_NOISE, agreement, rerun_se
from brorl.stats.stderr import combined_se  # a family average of differences: the stderr module's rule
from brorl.stats.units import instance_means
from helpers import ROOT

PAPER = yaml.safe_load((ROOT / "workflow/brorl/analysis/paper_results.yaml").read_text())
K = 16
ITEMS_PER_TASK = 100  # the paper config's Reasoning Gym items per task (evaluation.reasoning_gym.items_per_task)


def two_runs(rng: np.random.Generator, rate: float, problems: int, shift: float = 0.0) -> tuple[float, float, float]:
    """The paper's pass@1 and ours on the same problems (true per-problem rates spread around `rate`, ours moved by
    `shift`), and our rerun se from our own samples."""
    a = max(0.05, 2 * rate)  # Beta(a, b) with mean `rate`: problems from nearly always to nearly never solved
    truth = rng.beta(a, a * (1 - rate) / rate, size=problems)
    paper = rng.binomial(K, truth) / K
    ours = rng.random((problems, K)) < np.clip(truth + shift, 0, 1)[:, None]
    return float(paper.mean()), float(ours.mean()), rerun_se(ours.var(axis=1, ddof=1), K)


def paper_cells() -> list[tuple[str, float, int]]:
    """(benchmark, pass@1 as a fraction, problems) of every Baseline cell of Tables 3-5."""
    registry = load_registry()
    cells = []
    for table in PAPER["benchmark_tables"].values():
        for name, by_row in table["benchmarks"].items():
            base = next((v for k, v in by_row.items() if k.startswith("base@")), None)
            spec = registry[name]
            problems = spec.expected_rows or (spec.tasks or 0) * ITEMS_PER_TASK
            if base is not None and 0 < base < 100 and problems:
                cells.append((name, base / 100, int(problems)))
    return cells


def test_the_rerun_se_is_the_spread_of_the_difference_of_two_runs():
    rng = np.random.default_rng(0)
    diffs, ses = [], []
    for _ in range(400):
        paper, ours, se = two_runs(rng, 0.4, 200)
        diffs.append(ours - paper)
        ses.append(se)
    assert np.std(diffs) == pytest.approx(np.mean(ses), rel=0.1)
    assert math.isnan(rerun_se([0.1, float("nan")], K)) and math.isnan(rerun_se([], K))
    assert combined_se([0.3, 0.4]) == pytest.approx(0.25)


def test_a_faithful_reproduction_agrees_at_the_papers_rates_and_a_3_point_drop_on_math500_is_below():
    rng = np.random.default_rng(1)
    cells = paper_cells()
    assert len(cells) == 21  # every benchmark of the three tables
    agreed = [
        agreement(ours, paper, se).verdict == AGREES
        for name, rate, problems in cells
        for paper, ours, se in [two_runs(rng, rate, problems) for _ in range(40)]
    ]
    assert np.mean(agreed) >= 0.9, np.mean(agreed)
    (math500,) = [c for c in cells if c[0] == "math500"]
    verdicts = [agreement(o, p, se).verdict for p, o, se in (two_runs(rng, math500[1], 500, -0.03) for _ in range(50))]
    assert verdicts.count(BELOW) >= 48, verdicts


def test_verdicts_and_their_margin():
    assert agreement(0.62, 0.60, 0.004).verdict == ABOVE
    assert agreement(0.58, 0.60, 0.004).verdict == BELOW
    assert agreement(0.605, 0.60, 0.001).verdict == AGREES  # inside the 1-point margin though 5 se away
    assert agreement(0.62, 0.60, 0.011).verdict == AGREES  # within 2 se
    assert agreement(0.62, 0.60, float("nan")).verdict == NO_NOISE
    a = agreement(0.62, 0.60, 0.004)
    assert a.low == pytest.approx(0.012) and a.high == pytest.approx(0.028)


def test_units_carry_each_problems_variance_into_the_benchmark_table():
    frame = pd.DataFrame(
        {
            "arm": "a",
            "step": 1,
            "family": "math",
            "benchmark": "b",
            "id": np.repeat([1, 2], 4),
            "sample_idx": np.tile(np.arange(4), 2),
            "score": [1, 1, 0, 0, 1, 1, 1, 1],
        }
    )
    units = instance_means(frame, keys=("arm", "step", "benchmark", "id"))
    assert units["score_var"].tolist() == pytest.approx([1 / 3, 0.0])
    row = benchmark_pass1(units.assign(task="b")).iloc[0]
    assert row["rerun_se"] == pytest.approx(math.sqrt(2 * (1 / 3) / 4) / 2)


def test_summary_counts_the_verdicts_and_names_the_cells_that_do_not_agree():
    from brorl.analysis.summary_sections import _verdicts

    both = pd.DataFrame(
        {
            "benchmark": ["aime24", "math500", "amc"],
            "method": ["Baseline", "BroRL", "BroRL"],
            "continued steps": ["+0", "+191", "+191"],
            "diff": [0.5, -3.1, 0.2],
            "diff se": [2.4, 0.42, 0.9],
            "vs paper": [AGREES, BELOW, AGREES],
        }
    )
    (line,) = _verdicts(both)
    assert "2 agree, 0 above, 1 below (math500 BroRL +191: -3.10 ± 0.42 points, below)" in line
    assert "engine, hardware and numerics differences are not in the interval" in line
    assert _verdicts(both.assign(**{"vs paper": "n/a (tiny scale)"})) == []


def test_summary_says_which_code_score_reproduces_the_papers_baseline():
    from brorl.analysis.summary_sections import _code_scoring

    both = pd.DataFrame(
        {
            "benchmark": ["apps", "codecontests", "codeforces", "taco"],
            "continued steps": ["+0"] * 4,
            "vs paper": [BELOW] * 4,
            "tests passed vs paper": ["+0.40 ± 0.50: agrees", "-0.90 ± 0.80: agrees", "+3.00 ± 0.70: above", "x"],
        }
    )
    (line,) = _code_scoring(both)
    assert "all tests passing agrees on 0 of 4 benchmarks and the fraction of tests passed on 2 of 4" in line
    assert line.endswith("the fraction of tests passed.")
    assert "not measured here" in _code_scoring(both.assign(**{"vs paper": "not run"}))[0]
