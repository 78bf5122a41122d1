"""The embedded training engine end to end on the tiny model: a run killed with SIGKILL mid-segment and rerun ends
with every step exactly once in metrics.jsonl and the same final weights as an uninterrupted run; a changed recipe
is refused; segment manifests and checkpoint exports are checked."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from brorl.benchmarks.records import write_records
from brorl.benchmarks.synthetic import sums
from brorl.config import load_yaml_config
from brorl.models.tiny import build_tiny_model
from brorl.training.embedded.warm_start import warm_start
from brorl.training.metrics import read_metrics
from brorl.training.recipe import arm_plan
from brorl.training.segments import CheckpointError, export_checkpoint, verify_checkpoint
from helpers import CONFIG, ROOT, TINY, wandb_runs
from safetensors.torch import load_file

ARM = "prorl_n4"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A warm-started tiny model, a sums train mix and a 3-step recipe in two segments (a reset after step 2)."""
    root = tmp_path_factory.mktemp("train")
    build_tiny_model(root / "tiny", context_length=1024)
    warm_start(
        root / "tiny",
        sums(256, seed=7, benchmark="ws"),
        root / "start",
        steps=80,
        lr=3e-3,
        batch_size=16,
        seed=7,
        progress=False,
    )
    write_records(root / "mix.jsonl", sums(64, seed=0, benchmark="sums"))
    config = load_yaml_config(CONFIG, TINY)
    arm = next(a for a in config["arms"] if a["name"] == ARM)
    arm.update(n=8, prompts_per_step=2, continued_steps=3, report_steps=[3])
    config["arms"] = [arm]
    config["training"].update(checkpoint_every=1, mini_batches_per_step=2)
    config["training"]["reference_reset"].update(enabled=True, resets=None, period_steps=2, round_to=1)
    recipe = {k: config[k] for k in ("arms", "training", "context")}
    recipe["train_data"] = {"name": "mix"}
    assert [(s.first_step, s.last_step) for s in arm_plan(recipe, ARM).segments] == [(1, 2), (3, 3)]
    return root, recipe


def segment_cmd(root: Path, recipe: dict, out: Path, segment: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "brorl.training",
        "segment",
        "--config",
        json.dumps(recipe),
        "--arm",
        ARM,
        "--segment",
        str(segment),
        "--engine",
        "embedded",
        "--start-model",
        str(root / "start"),
        "--train-data",
        str(root / "mix.jsonl"),
        "--out-dir",
        str(out),
        "--manifest",
        str(out / f"segment{segment}.json"),
        *extra,
    ]


def run(cmd: list[str], **env_extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), **env_extra}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def final_weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(out / "run" / "exports" / "step3" / "model.safetensors")


@pytest.fixture(scope="module")
def straight(setup):
    root, recipe = setup
    out = root / "straight"
    for segment in (0, 1):
        run(segment_cmd(root, recipe, out, segment))
    return out


@pytest.mark.engine
def test_uninterrupted_run_trains_and_writes_its_files(setup, straight):
    root, recipe = setup
    records = read_metrics(straight / "run" / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3]
    assert any(r["samples"] > 0 for r in records), "dynamic sampling dropped every group: nothing was trained"
    for r in records:
        assert r["generated_samples"] == r["generated_prompts"] * 8
        assert r["dynamic_sampling_pass_rate"] == pytest.approx(r["samples"] / r["generated_samples"])
        # the step's waves: the first of its 2 prompts, refills sized by refill_draw, surplus groups not trained
        assert r["refill"] == "rounds" and r["waves"][0]["prompts"] == 2 and r["prompts"] <= 2
        assert sum(w["prompts"] for w in r["waves"]) == r["generated_prompts"] and len(r["waves"]) <= 8
        assert r["wall_s"] >= r["step_s"] > 0 and r["gen_samples_per_s"] > 0
        if r["samples"]:  # PolicyLoss's rollout-vs-trainer mismatch, as OpenRLHF logs it
            assert abs(r["vllm_kl"]) < 0.05 and 0.0 <= r["is_filter_ratio"] <= 1.0
            # reinforce_baseline's advantages are normalised over the batch's tokens: unit RMS; a real gradient
            assert r["adv_rms"] == pytest.approx(1.0, abs=1e-6) and r["grad_norm"] > 0
        else:
            assert r["adv_rms"] is None and r["grad_norm"] is None  # nothing was updated
    assert records[2]["segment"] == 1 and records[2]["wall_s"] > records[1]["wall_s"]
    start = load_file(root / "start" / "model.safetensors")
    assert any(not torch.equal(start[k], v) for k, v in final_weights(straight).items())
    # segment 1 starts with a reference reset: the reference is the policy after step 2
    assert (straight / "run" / "reference" / "step2.pt").exists()
    manifest = json.loads((straight / "segment1.json").read_text())
    assert manifest["segment"]["reset_reference"] and list(manifest["exports"]) == ["3"]
    assert [r["step"] for r in manifest["steps"]] == [3]


@pytest.mark.engine
def test_tracked_run_logs_the_metrics_to_offline_wandb_runs_and_tensorboard(setup, straight, tmp_path):
    """W&B offline (one run per segment, one group per arm, steps continuing the arm's curve) and TensorBoard files
    carry exactly the numeric metrics.jsonl fields at their steps; tracking leaves the training itself unchanged."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    root, recipe = setup
    out = tmp_path / "tracked"
    tracking = json.dumps({"wandb": {"enabled": True, "mode": "offline", "project": "t"}, "tensorboard": True})
    for segment in (0, 1):
        run(
            segment_cmd(root, recipe, out, segment, "--tracking", tracking),
            WANDB_MODE="offline",
            WANDB_DIR=str(tmp_path / "wandb"),
            WANDB_SILENT="true",
        )
    records = read_metrics(out / "run" / "metrics.jsonl")

    def measured(record: dict) -> dict:
        return {k: v for k, v in record.items() if k != "step" and isinstance(v, int | float)}

    runs = wandb_runs(tmp_path / "wandb")
    assert [r["run"]["display_name"] for r in runs] == [f"{ARM}-segment0", f"{ARM}-segment1"]
    assert {r["run"]["run_group"] for r in runs} == {ARM} and all(r["exit_code"] == 0 for r in runs)
    assert runs[0]["run"]["config"]["update"]["arms"][0]["name"] == ARM  # the recipe
    history = [entry for r in runs for entry in r["history"]]
    assert [step for step, _ in history] == [r["step"] for r in records] == [1, 2, 3]
    for (_, logged), record in zip(history, records):
        assert set(logged) == set(measured(record))
        assert logged == pytest.approx(measured(record))

    for segment, steps in ((0, [1, 2]), (1, [3])):
        scalars: dict[int, dict[str, float]] = {}
        folder = out / "run" / "tensorboard" / f"{ARM}-segment{segment}"
        for path in folder.glob("events.out.tfevents.*"):
            for event in EventFileLoader(str(path)).Load():
                for value in event.summary.value:
                    kind = value.WhichOneof("value")
                    number = value.simple_value if kind == "simple_value" else value.tensor.float_val[0]
                    scalars.setdefault(event.step, {})[value.tag] = number
        assert sorted(scalars) == steps
        for record in (r for r in records if r["step"] in steps):
            assert scalars[record["step"]] == pytest.approx(measured(record), rel=1e-6)
    ref, got = final_weights(straight), final_weights(out)
    assert all(torch.equal(ref[name], got[name]) for name in ref)
    assert not (straight / "run" / "tensorboard").exists() and not (straight / "run" / "wandb").exists()


@pytest.mark.engine
def test_sigkill_mid_segment_then_rerun_matches_the_uninterrupted_run(setup, straight):
    root, recipe = setup
    out = root / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    proc = subprocess.Popen(
        segment_cmd(root, recipe, out, 0),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    latest = out / "run" / "state" / "latest.json"
    deadline = time.time() + 600
    while time.time() < deadline and not latest.exists():  # kill right after step 1 is committed
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert json.loads(latest.read_text())["step"] == 1, "the kill came too late to test a mid-segment resume"
    assert not (out / "segment0.json").exists()  # an unfinished job leaves no manifest
    for segment in (0, 1):
        run(segment_cmd(root, recipe, out, segment))
    steps = [r["step"] for r in read_metrics(out / "run" / "metrics.jsonl")]
    assert steps == [1, 2, 3]  # each step exactly once
    ref = final_weights(straight)
    got = final_weights(out)
    assert ref.keys() == got.keys()
    for name in ref:
        assert torch.equal(ref[name], got[name]), f"{name} differs after resuming"


@pytest.mark.engine
def test_a_generality_arm_trains_with_its_own_advantage_estimator(setup, straight):
    """The same arm with advantage_estimator rloo (analysis.algorithms' pairs at tiny size): one step trains, from
    the same start, on the same first rollouts as the reinforce_baseline run, to other weights."""
    root, recipe = setup
    changed = copy.deepcopy(recipe)
    changed["arms"][0].update(advantage_estimator="rloo", continued_steps=1, report_steps=[1])
    changed["training"]["reference_reset"]["enabled"] = False
    out = root / "rloo"
    run(segment_cmd(root, changed, out, 0))
    (record,) = read_metrics(out / "run" / "metrics.jsonl")
    (first, *_) = read_metrics(straight / "run" / "metrics.jsonl")
    assert record["samples"] == first["samples"] > 0  # the same seed draws the same rollouts and keeps the same groups
    assert record["reward_mean"] == first["reward_mean"]
    assert json.loads((out / "run" / "recipe.json").read_text())["arm"]["advantage_estimator"] == "rloo"
    rloo = load_file(out / "run" / "exports" / "step1" / "model.safetensors")
    baseline = load_file(straight / "run" / "exports" / "step1" / "model.safetensors")
    assert any(not torch.equal(rloo[k], v) for k, v in baseline.items())  # another advantage, another update


@pytest.mark.engine
def test_changed_recipe_is_refused(setup, straight):
    root, recipe = setup
    changed = copy.deepcopy(recipe)
    changed["arms"][0]["seed"] = 2
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    before = (straight / "segment1.json").read_bytes()
    proc = subprocess.run(segment_cmd(root, changed, straight, 1), capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2 and "different recipe (changed: arm)" in proc.stderr, proc.stderr[-2000:]
    assert (straight / "segment1.json").read_bytes() == before  # the finished run is untouched


@pytest.mark.engine
def test_export_verifies_checksums(setup, straight, tmp_path):
    manifest = straight / "segment0.json"
    export_checkpoint(manifest, straight / "run", 2, tmp_path / "step2")
    assert verify_checkpoint(tmp_path / "step2")["step"] == 2
    with pytest.raises(CheckpointError, match="not a saved step"):
        export_checkpoint(manifest, straight / "run", 3, tmp_path / "step3")
    weights = tmp_path / "step2" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.unlink()  # a hard link: rewrite a copy, never the run folder's file
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256|checksum|size"):
        verify_checkpoint(tmp_path / "step2")


def test_one_update_moves_logprobs_the_way_the_advantages_point(tmp_path):
    """The sign and alignment of the whole update path: after one step on a group where sample 0 was right and
    sample 1 wrong, sample 0's response is more likely and sample 1's less likely (OpenRLHF's PolicyLoss + KL)."""
    import numpy as np
    from brorl.training.embedded.advantages import reinforce_baseline
    from brorl.training.embedded.batch import build_batch
    from brorl.training.embedded.trainer import LossSettings, PolicyTrainer, load_causal_lm

    build_tiny_model(tmp_path / "tiny", context_length=1024)
    policy, reference = load_causal_lm(str(tmp_path / "tiny")), load_causal_lm(str(tmp_path / "tiny"))
    loss = LossSettings(0.2, 0.28, "k2", 1e-4, 2.0, 1.0)
    trainer = PolicyTrainer(
        policy,
        reference,
        loss,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        grad_clip=1.0,
        micro_batch_size=1,
    )
    prompt, right, wrong = [5, 6, 7, 8], [40, 41, 42], [50, 51, 52, 53]
    adv = reinforce_baseline(np.array([[1.0, 0.0]]), np.array([[3, 4]]))[0]
    assert adv[0] > 0 > adv[1]
    batch = build_batch([prompt, prompt], [right, wrong], [[0.0] * 3, [0.0] * 4], adv.tolist(), pad_id=0)
    before = trainer.score_logprobs(batch)
    trainer.update(batch, before, trainer.score_logprobs(batch, reference=True), [[0, 1]])
    after = trainer.score_logprobs(batch)
    gain = ((after - before) * batch.action_mask).sum(dim=1)
    assert gain[0] > 0 > gain[1], gain
    # only response tokens are trained: the prompt positions carry no advantage
    assert batch.action_mask[0].tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0][: batch.action_mask.shape[1]]


@pytest.mark.engine
def test_a_replicate_of_an_arm_draws_other_prompts_with_the_same_recipe(setup, straight):
    """Seeds as an axis: replicate 1 of the arm (config arms[].replicates 2) trains with its own seed, everything else
    equal, so its first step draws other prompts than replicate 0 (the straight run)."""
    from brorl.training.config_checks import expand_replicates

    root, recipe = setup
    config = json.loads(json.dumps(recipe))
    config["arms"][0]["replicates"] = 2
    expand_replicates(config)
    first, second = config["arms"]
    assert second["name"] == f"{ARM}_r1" and second["replicate_of"] == ARM and second["seed"] == first["seed"] + 1000
    assert {k: v for k, v in second.items() if k not in ("name", "seed", "label", "replicate_of")} == {
        k: v for k, v in first.items() if k not in ("name", "seed", "label", "replicate_of")
    }
    replica = {**config, "arms": [second]}
    out = root / "replica"
    cmd = segment_cmd(root, replica, out, 0, "--stop-after", "1")
    cmd[cmd.index("--arm") + 1] = second["name"]
    run(cmd)
    drawn = {
        folder: [
            p["id"] for p in json.loads((folder / "run" / "step_prompts.jsonl").read_text().splitlines()[0])["prompts"]
        ]
        for folder in (straight, out)
    }
    assert drawn[straight] != drawn[out], drawn
