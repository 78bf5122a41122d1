"""Seeds as an axis: an arm's replicates in the config, and the test across runs on synthetic per-run tables with a
known seed spread (brorl.training.config_checks.expand_replicates, brorl.stats.across_runs, brorl.analysis.extensions)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml
from brorl.analysis.extensions import across_runs
from brorl.config import ConfigError, load_yaml_config
from brorl.stats.across_runs import across_runs_test
from helpers import CONFIG, TINY


def test_replicates_become_arms_with_their_own_seed_and_one_replicate_changes_nothing(tmp_path):
    plain = load_yaml_config(CONFIG, TINY)
    override = tmp_path / "k.yaml"
    arms = copy.deepcopy(yaml.safe_load(TINY.read_text())["arms"])
    arms[0]["replicates"] = 3
    override.write_text(yaml.safe_dump({"arms": arms}))
    config = load_yaml_config(CONFIG, TINY, override)
    names = [a["name"] for a in config["arms"]]
    first = arms[0]["name"]
    assert names[:3] == [first, f"{first}_r1", f"{first}_r2"]
    seeds = [a["seed"] for a in config["arms"][:3]]
    assert seeds == [seeds[0], seeds[0] + 1000, seeds[0] + 2000]
    assert all(a["replicate_of"] == first for a in config["arms"][1:3])
    assert [a["name"] for a in config["arms"] if not a["replicate_of"]] == [a["name"] for a in plain["arms"]]


def test_a_replicate_count_below_one_is_refused_naming_the_key(tmp_path):
    arms = yaml.safe_load(TINY.read_text())["arms"]
    arms[0]["replicates"] = 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"arms": arms}))
    with pytest.raises(ConfigError, match=r"arms\[0\]\.replicates"):
        load_yaml_config(CONFIG, TINY, bad)


def test_the_test_across_runs_estimates_a_known_seed_spread_and_keeps_its_false_positive_rate():
    rng = np.random.default_rng(0)
    seed_sd, eval_sd, k, draws = 0.004, 0.001, 4, 4000  # fractions: 0.4 and 0.1 points
    estimates, rejections = [], 0
    for _ in range(draws):
        runs = rng.normal(0.6, np.sqrt(seed_sd**2 + eval_sd**2), size=(2, k))  # no effect between the arms
        result = across_runs_test(list(runs[0]), list(runs[1]), eval_sd**2, 0.05)
        estimates.append(result["seed_sd"] ** 2)
        rejections += result["reject"]
    assert np.sqrt(np.mean(estimates)) == pytest.approx(seed_sd, rel=0.1)
    assert rejections / draws == pytest.approx(0.05, abs=0.012)
    with pytest.raises(ValueError, match="two or more runs per arm"):
        across_runs_test([0.5], [0.4, 0.45], 0.0, 0.05)


def test_the_analysis_tests_the_main_comparison_across_the_arms_replicates():
    spec = {
        "analysis": {"comparison": {"treatment": "t", "control": "c"}},
        "arms": [
            {"name": "t"},
            {"name": "t_r1", "replicate_of": "t"},
            {"name": "c"},
            {"name": "c_r1", "replicate_of": "c"},
        ],
    }
    rows = [
        {"arm": arm, "step": 5, "id": i, "score": score, "score_var": 0.0, "n_samples": 16}
        for arm, score in (("t", 0.7), ("t_r1", 0.72), ("c", 0.5), ("c_r1", 0.52))
        for i in range(10)
    ]
    result = {"status": "ok", "treatment": {"step": 5}, "control": {"step": 5}}
    test = across_runs(pd.DataFrame(rows), spec, result, 0.05)
    assert test["status"] == "ok" and test["runs"] == {"treatment": ["t", "t_r1"], "control": ["c", "c_r1"]}
    assert test["delta"] == pytest.approx(0.2) and test["df"] == 2 and test["reject"]
    one = across_runs(pd.DataFrame(rows), {**spec, "arms": [{"name": "t"}, {"name": "c"}]}, result, 0.05)
    assert one["status"] == "one run per arm" and "not the method" in one["note"]
