"""The training stage's pure parts: derived recipe, segments, dynamic sampling, advantages, metrics, prompt stream."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import yaml
from brorl.config import validate_config
from brorl.training.embedded.advantages import keep_groups, reinforce_baseline
from brorl.training.embedded.prompts import PromptStream, derived_seed
from brorl.training.metrics import FIELDS, MetricsError, append_metrics, pass_rate, read_metrics, truncate_after
from brorl.training.recipe import (
    RecipeError,
    arm_plan,
    evaluation_steps,
    lr_at,
    plan_segments,
    recipe_fingerprint,
    reset_steps,
    saved_steps,
    scaled_lr,
)
from helpers import CONFIG, ROOT, paper_config


@pytest.fixture(scope="module")
def paper():
    return paper_config()


def test_paper_arms_lr_ratio_and_equal_minibatches(paper):
    prorl, brorl = arm_plan(paper, "prorl_n16"), arm_plan(paper, "brorl_n512")
    assert brorl.lr / prorl.lr == pytest.approx(math.sqrt(8))
    assert prorl.lr == paper["training"]["lr0"]  # the ProRL arm is the base of the sqrt rule
    assert prorl.mini_batches_per_step == brorl.mini_batches_per_step == 8  # the OpenRLHF ProRLv2 recipe's 8
    assert (prorl.mini_batch_samples, brorl.mini_batch_samples) == (1024, 8192)  # its train batch 1024 for ProRL
    assert prorl.samples_per_step * 8 == brorl.samples_per_step


def test_lr_rules():
    assert scaled_lr(1e-6, 400, 100, "sqrt") == pytest.approx(2e-6)
    assert scaled_lr(1e-6, 400, 100, "linear") == pytest.approx(4e-6)
    assert scaled_lr(1e-6, 400, 100, "none") == 1e-6
    with pytest.raises(RecipeError, match="unknown"):
        scaled_lr(1e-6, 1, 1, "cubic")
    assert [lr_at(s, 1.0, 10, "constant", 2) for s in (1, 2, 3)] == [0.5, 1.0, 1.0]
    assert lr_at(10, 1.0, 10, "cosine", 0) == pytest.approx(0.0)


def test_arm_lr_rule_none_overrides():
    config = paper_config(ROOT / "workflow" / "presets" / "lr_ablation.yaml")
    arm = next(a for a in config["arms"] if a["name"] == "brorl_n512_lr_const")
    assert arm_plan(config, arm["name"]).lr == config["training"]["lr0"]


def test_minibatches_must_divide_samples(paper):
    config = copy.deepcopy(paper)
    config["training"]["mini_batches_per_step"] = 3
    with pytest.raises(RecipeError, match="mini_batches_per_step = 3 does not divide"):
        arm_plan(config, "prorl_n16")


def test_saved_steps_and_segments():
    assert saved_steps(10, 4, [3]) == (3, 4, 8, 10)
    segments = plan_segments(10, reset_steps(10, None, 4), max_steps=3)
    assert [(s.first_step, s.last_step, s.reset_reference) for s in segments] == [
        (1, 3, False),
        (4, 4, False),
        (5, 7, True),
        (8, 8, False),
        (9, 10, True),
    ]
    steps = [step for s in segments for step in s.steps]
    assert steps == list(range(1, 11))  # every step in exactly one segment
    assert [(s.first_step, s.last_step) for s in plan_segments(5, (), None)] == [(1, 5)]


def test_reset_steps_at_the_same_fractions_of_every_arm():
    assert reset_steps(535, 2, None, round_to=5) == (180, 355)  # ProRL: 1/3 and 2/3 of 535, on multiples of 5
    assert reset_steps(191, 2, None, round_to=5) == (65, 125)  # BroRL: the same fractions of its 191 steps
    assert reset_steps(191, None, 200) == ()  # a 200-step period would leave BroRL without any reset
    assert reset_steps(535, None, 200) == (200, 400)
    assert reset_steps(6, 1, None) == (3,) and reset_steps(4, 1, None) == (2,)
    assert reset_steps(10, None, None) == () and reset_steps(3, 5, None, round_to=5) == ()  # never step 0 or the end


def test_paper_segments_cover_every_step(paper):
    for arm in ("prorl_n16", "brorl_n512"):
        plan = arm_plan(paper, arm)
        assert [s for seg in plan.segments for s in seg.steps] == list(range(1, plan.continued_steps + 1))
        assert all(seg.last_step - seg.first_step < paper["training"]["segment_max_steps"] for seg in plan.segments)
        resets = [seg.first_step - 1 for seg in plan.segments if seg.reset_reference]
        assert resets == {"prorl_n16": [180, 355], "brorl_n512": [65, 125]}[arm]  # both arms reset twice


def test_evaluation_steps_need_saved_steps(paper):
    assert evaluation_steps(paper, "brorl_n512") == (25, 50, 75, 100, 107, 125, 134, 150, 175, 191)
    config = copy.deepcopy(paper)
    config["evaluation"]["steps"]["every"] = 10
    with pytest.raises(RecipeError, match="not saved"):
        evaluation_steps(config, "brorl_n512")


def test_fingerprint_ignores_presentation(paper):
    config = copy.deepcopy(paper)
    config["arms"][0]["label"] = "renamed"
    config["arms"][0]["report_steps"] = [100]
    assert recipe_fingerprint(config, "prorl_n16") == recipe_fingerprint(paper, "prorl_n16")
    config["arms"][0]["seed"] = 99
    assert recipe_fingerprint(config, "prorl_n16") != recipe_fingerprint(paper, "prorl_n16")


def test_keep_groups_is_strict():
    scores = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0], [1, 1, 0]], float)
    assert keep_groups(scores, 0.0, 1.0).tolist() == [False, False, True, True]
    assert keep_groups(scores, 0.4, 1.0).tolist() == [False, False, False, True]


def test_reinforce_baseline_by_hand():
    rewards = np.array([[1.0, 0.0], [0.5, 0.5]])
    lengths = np.array([[2, 2], [2, 2]])
    # group-centred: [0.5, -0.5, 0, 0]; token mean 0; token variance (0.25+0.25)/4 = 0.125
    expected = np.array([[0.5, -0.5], [0.0, 0.0]]) / math.sqrt(0.125)
    assert np.allclose(reinforce_baseline(rewards, lengths), expected)
    # unequal lengths weight by tokens: centred [0.5, -0.5], weights 3/4, 1/4 -> mean 0.25
    adv = reinforce_baseline(np.array([[1.0, 0.0]]), np.array([[3, 1]]), std_norm=False)
    assert np.allclose(adv, [[0.25, -0.75]])
    with pytest.raises(ValueError, match="n >= 2"):
        reinforce_baseline(np.ones((2, 1)), np.ones((2, 1)))


def test_reinforce_baseline_matches_openrlhf_normalisation():
    """Same numbers as OpenRLHF's experience_maker normalisation written with torch on per-token tensors."""
    import torch

    rng = np.random.default_rng(0)
    rewards, lengths = rng.random((3, 4)), rng.integers(1, 6, (3, 4))
    centred = torch.tensor(rewards - rewards.mean(1, keepdims=True)).reshape(-1)
    tokens = torch.cat([centred[i].repeat(int(n)) for i, n in enumerate(lengths.reshape(-1))])
    mean = tokens.mean()
    rstd = ((tokens - mean).pow(2).mean()).clamp(min=1e-8).rsqrt()
    expected = ((centred - mean) * rstd).reshape(3, 4).numpy()
    assert np.allclose(reinforce_baseline(rewards, lengths), expected)


def _record(step: int, **values) -> dict:
    record = {k: None for k in FIELDS}
    record.update(step=step, segment=0, samples=8, generated_samples=16, **values)
    return record


def test_metrics_roundtrip_truncate_and_pass_rate(tmp_path):
    path = tmp_path / "metrics.jsonl"
    for step in (1, 2, 3):
        append_metrics(path, _record(step, reward_mean=float("nan")))
    assert [r["step"] for r in read_metrics(path)] == [1, 2, 3]
    assert read_metrics(path)[0]["reward_mean"] is None  # NaN is stored as null
    assert [r["step"] for r in truncate_after(path, 2)] == [1, 2]
    assert pass_rate(read_metrics(path)) == pytest.approx(0.5)
    with path.open("a") as handle:
        handle.write(json.dumps(_record(2)) + "\n")
    with pytest.raises(MetricsError, match="increase strictly"):
        read_metrics(path)
    with pytest.raises(MetricsError, match="missing keys"):
        append_metrics(path, {"step": 4})


def test_prompt_stream_resumes_exactly():
    items = [{"id": i} for i in range(5)]
    straight = PromptStream(items, seed=3)
    first = straight.take(7)
    rest = straight.take(6)
    resumed = PromptStream(items, seed=3)
    assert resumed.take(7) == first
    again = PromptStream.restore(items, 3, resumed.cursor())
    assert again.take(6) == rest
    assert sorted(i["id"] for i in first[:5]) == list(range(5))  # an epoch is a permutation
    assert derived_seed(1, 2, 0) != derived_seed(1, 2, 1)


@pytest.mark.workflow
def test_paper_dry_run_has_one_train_job_per_segment_and_one_export_per_evaluated_step(tmp_path):
    from brorl.training.recipe import enabled_arms
    from helpers import job_counts, output_of, snakemake

    cfg = yaml.safe_load(CONFIG.read_text())
    validate_config(cfg)
    proc = snakemake("-n", "--directory", tmp_path)
    assert proc.returncode == 0, output_of(proc)
    counts = job_counts(proc)
    arms = enabled_arms(cfg)
    # ProRL: 25-step jobs within 3 reset periods (23); BroRL: 15-step jobs (its own segment_max_steps) within 3 (14)
    assert counts["train_ppo"] == sum(len(arm_plan(cfg, a).segments) for a in arms) == 23 + 14
    assert counts["export_checkpoint"] == sum(len(evaluation_steps(cfg, a)) for a in arms)
    assert counts["finish_training"] == len(arms)
    text = output_of(proc)
    assert "--engine cluster" in text and "results/train/brorl_n512/segment8.json" in text
