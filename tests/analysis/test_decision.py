"""The decision experiment's rule on synthetic results: each of the three outcomes of F1 and F3, F1's validity gate,
the pre-registered extension, thresholds changed after registration, and the pipeline check's words
(brorl.stats.decision, brorl.analysis.decision)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from brorl.analysis.decision import decide, decision_lines, registration, verdict
from brorl.config import ConfigError, load_yaml_config
from helpers import CONFIG, ROOT

BLOCK = load_yaml_config(CONFIG, ROOT / "workflow" / "presets" / "decision.yaml")["decision"]
START = ("base", 0)


def units(gain_points: float, start_math: float = 61.7, start_code: float = 52.0, problems: int = 400, seed: int = 0):
    """Instance scores of the start and the release: math and code problems at the given family means, the release
    `gain_points` higher on every problem (plus problem-level noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for family, mean in (("math", start_math), ("code", start_code)):
        for i in range(problems):
            base = np.clip(rng.normal(mean / 100, 0.05), 0, 1)
            release = np.clip(base + gain_points / 100 + rng.normal(0, 0.01), 0, 1)
            for arm, score in (("base", base), ("brorl_released", release)):
                rows.append({"arm": arm, "step": 0, "family": family, "benchmark": family, "id": i, "score": score})
    return pd.DataFrame(rows)


def metrics(rate_ratio: float, steps: tuple[int, int] = (3, 6), cv: float = 0.02, seed: int = 0) -> dict:
    """Training metrics of the two step shapes whose kept samples per GPU-hour are in `rate_ratio`."""
    rng = np.random.default_rng(seed)
    shapes = {"brorl_n512": (65536, 1000.0), "prorl_n16": (8192, 8192 * 1000.0 * rate_ratio / 65536)}
    return {
        arm: [
            {"step": s, "samples": samples, "step_s": seconds * float(rng.lognormal(0, cv))}
            for s in range(1, count + 1)
        ]
        for (arm, (samples, seconds)), count in zip(shapes.items(), steps)
    }


def run(gain=1.75, ratio=2.2, **kw):
    block = kw.pop("block", BLOCK)
    record = kw.pop("record", registration(BLOCK, {"brorl_n512": 3, "prorl_n16": 6}))
    return decide(units(gain, **kw), metrics(ratio), block, record, START, gpus=8), block


@pytest.mark.parametrize(
    "gain, ratio, f1, f3",
    [
        (1.75, 2.2, "SUPPORTED", "SUPPORTED"),
        (0.33, 1.0, "FALSIFIED", "FALSIFIED"),
        (1.04, 1.48, "INCONCLUSIVE", "INCONCLUSIVE"),
    ],
)
def test_each_outcome_of_both_tests(gain, ratio, f1, f3):
    result, _ = run(gain, ratio)
    assert (verdict(result, "f1"), verdict(result, "f3")) == (f1, f3), result


def test_the_validity_gate_gives_no_f1_verdict_when_the_harness_differs():
    result, _ = run(1.75, 2.2, start_math=55.0)
    assert verdict(result, "f1").startswith("no verdict: harness differs: math 54.") and "61.69" in verdict(
        result, "f1"
    )
    assert verdict(result, "f3") == "SUPPORTED"


def test_thresholds_changed_after_registration_withhold_both_verdicts():
    changed = {**BLOCK, "f1": {**BLOCK["f1"], "threshold": 0.5}}
    result, _ = run(1.75, 2.2, block=changed)
    assert (
        verdict(result, "f1")
        == verdict(result, "f3")
        == "withheld: thresholds changed after registration (f1.threshold)"
    )


def test_a_spread_step_time_calls_the_registered_extension_before_any_f3_verdict():
    block = BLOCK
    record = registration(BLOCK, {"brorl_n512": 3, "prorl_n16": 6})
    noisy = metrics(2.2, cv=0.4, seed=3)
    result = decide(units(1.75), noisy, block, record, START, gpus=8)
    assert result["f3"]["cv"] > block["f3"]["cv_extend"]
    assert verdict(result, "f3").startswith("extension due first")
    extended = metrics(2.2, steps=(4, 8), cv=0.4, seed=3)  # +1 and +2 steps
    assert verdict(decide(units(1.75), extended, block, record, START, gpus=8), "f3") != verdict(result, "f3")


def test_the_pipeline_check_never_says_the_papers_words():
    block = {**BLOCK, "mode": "pipeline_check"}
    result, _ = run(1.75, 2.2, block=block, record=registration(block, {}))
    words = verdict(result, "f1")
    assert words.startswith("pipeline check: rule outcome supported; tiny model, not a test of the paper")
    text = "\n".join(decision_lines(result, block))
    assert "SUPPORTED" not in text and "FALSIFIED" not in text and "cannot be attributed to N" in text


@pytest.mark.parametrize(
    "change, key",
    [
        ({"f1": {"threshold": 2.0}}, "decision.f1.threshold"),
        ({"f3": {"threshold": 0.9}}, "decision.f3.threshold"),
        ({"f1": {"gate_points": None}}, "decision.f1.gate_points"),
    ],
)
def test_a_threshold_outside_its_published_values_or_no_gate_is_refused(tmp_path, change, key):
    import yaml

    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"decision": change}))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_yaml_config(CONFIG, ROOT / "workflow" / "presets" / "decision.yaml", bad)
