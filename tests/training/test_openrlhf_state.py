"""The cluster engine's judgement of what OpenRLHF left on disk (brorl.training.openrlhf.checkpoint), the prompt file
it writes (shuffled passes, openrlhf.dataset), its launch bookkeeping, and the job-level start-up hook.

Checkpoints here are written with the formats OpenRLHF/DeepSpeed use (torch.save zip archives, safetensors, JSON),
then cut the way a SIGKILL inside a save cuts them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from brorl.training.openrlhf.checkpoint import (
    CheckpointStateError,
    hf_export_problem,
    keep_up_to,
    latest_global_step,
    prune_exports,
    repair,
    tag_problem,
)
from brorl.training.openrlhf.dataset import passes_needed, shuffled_passes, write_openrlhf_dataset
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
RANKS = 2


def _save_tag(ckpt: Path, step: int, ranks: int = RANKS) -> Path:
    folder = ckpt / "_actor" / f"global_step{step}"
    folder.mkdir(parents=True)
    torch.save({"module": torch.zeros(4)}, folder / "mp_rank_00_model_states.pt")
    for rank in range(ranks):
        torch.save({"optimizer": torch.ones(8)}, folder / f"bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt")
    (ckpt / "_actor" / "latest").write_text(f"global_step{step}")
    return folder


def _save_hf(ckpt: Path, step: int) -> Path:
    folder = ckpt / f"global_step{step}_hf"
    folder.mkdir(parents=True)
    save_file({"w": torch.arange(64, dtype=torch.float32)}, str(folder / "model.safetensors"))
    for name in ("config.json", "tokenizer_config.json", "tokenizer.json", "generation_config.json"):
        (folder / name).write_text(json.dumps({"name": name}))
    return folder


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_whole_saves_pass_and_every_cut_is_named(tmp_path):
    ckpt = tmp_path / "ckpt"
    _save_tag(ckpt, 1)
    hf = _save_hf(ckpt, 1)
    assert tag_problem(ckpt, 1, RANKS) is None and hf_export_problem(hf) is None
    assert "2 optimizer shards, 4 ranks" in tag_problem(ckpt, 1, 4)
    _truncate(ckpt / "_actor" / "global_step1" / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt")
    assert "truncated" in tag_problem(ckpt, 1, RANKS)
    _truncate(hf / "model.safetensors", 0.9)
    assert "truncated" in hf_export_problem(hf)
    (hf / "model.safetensors").write_bytes(b"\x01")
    assert "shorter than its header" in hf_export_problem(hf)
    (hf / "tokenizer.json").unlink()
    assert "no tokenizer.json" in hf_export_problem(hf)
    (hf / "tokenizer.json").write_text('{"cut": ')
    (hf / "model.safetensors").unlink()
    assert "not valid JSON" in hf_export_problem(hf)


def test_latest_tag_read_empty_mid_write_is_not_yet(tmp_path):
    (tmp_path / "_actor").mkdir()
    assert latest_global_step(tmp_path) is None
    (tmp_path / "_actor" / "latest").write_text("")
    assert latest_global_step(tmp_path) is None  # DeepSpeed rewrites the file in place
    (tmp_path / "_actor" / "latest").write_text("global_step12\n")
    assert latest_global_step(tmp_path) == 12
    (tmp_path / "_actor" / "latest").write_text("step12")
    with pytest.raises(CheckpointStateError, match="unexpected tag"):
        latest_global_step(tmp_path)


def test_repair_rolls_back_a_save_killed_midway(tmp_path):
    ckpt = tmp_path / "ckpt"
    _save_tag(ckpt, 2), _save_hf(ckpt, 2)
    partial = _save_tag(ckpt, 3)  # rank 0 wrote `latest` = global_step3 while rank 1 was still writing
    _truncate(partial / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt")
    fixed = repair(ckpt, RANKS, needs_export=lambda step: True, fresh_allowed=False)
    assert fixed.resume_step == 2 and fixed.latest_rewritten
    assert latest_global_step(ckpt) == 2 and not partial.exists()


def test_repair_rolls_back_when_a_needed_export_was_cut(tmp_path):
    ckpt = tmp_path / "ckpt"
    _save_tag(ckpt, 2), _save_hf(ckpt, 2)
    _save_tag(ckpt, 3)
    _truncate(_save_hf(ckpt, 3) / "model.safetensors")  # full state whole, HF export cut
    assert repair(ckpt, RANKS, needs_export=lambda step: False, fresh_allowed=False).resume_step == 3  # not needed
    fixed = repair(ckpt, RANKS, needs_export=lambda step: step == 3, fresh_allowed=False)
    assert fixed.resume_step == 2 and not (ckpt / "global_step3_hf").exists() and latest_global_step(ckpt) == 2


def test_repair_of_a_first_save_killed_early(tmp_path):
    ckpt = tmp_path / "ckpt"
    (ckpt / "_actor" / "global_step1").mkdir(parents=True)  # _actor/ exists, no `latest`: OpenRLHF would KeyError
    with pytest.raises(CheckpointStateError, match="no whole saved state"):
        repair(ckpt, RANKS, needs_export=lambda step: True, fresh_allowed=False)  # a later segment: never guess
    fixed = repair(ckpt, RANKS, needs_export=lambda step: True, fresh_allowed=True)
    assert fixed.resume_step is None and not (ckpt / "_actor").exists()
    assert repair(tmp_path / "none", RANKS, needs_export=lambda s: True, fresh_allowed=False).resume_step is None


def test_a_segment_ends_at_its_last_step_even_if_openrlhf_saved_the_next(tmp_path):
    """OpenRLHF runs on into the step after a segment until it is stopped; a save of it (under the segment's
    reference) must not become the next segment's start, which may reset the reference."""
    ckpt = tmp_path / "ckpt"
    _save_tag(ckpt, 2), _save_hf(ckpt, 2)
    _save_tag(ckpt, 3), _save_hf(ckpt, 3)
    removed = keep_up_to(ckpt, 2, RANKS)
    assert latest_global_step(ckpt) == 2 and not (ckpt / "_actor" / "global_step3").exists()
    assert len(removed) == 2 and not (ckpt / "global_step3_hf").exists()
    assert keep_up_to(ckpt, 2, RANKS) == []  # nothing beyond: nothing to do
    _truncate(ckpt / "_actor" / "global_step2" / "mp_rank_00_model_states.pt")
    with pytest.raises(CheckpointStateError, match="last save is not whole"):
        keep_up_to(ckpt, 2, RANKS)


def test_prune_exports_keeps_only_what_is_asked(tmp_path):
    for step in (1, 2, 3):
        _save_hf(tmp_path, step)
    assert prune_exports(tmp_path, keep={2}) == [1, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["global_step2_hf"]


def test_prompt_file_holds_seeded_shuffled_passes(tmp_path):
    assert (passes_needed(100, 30), passes_needed(10, 30), passes_needed(0, 30)) == (4, 1, 1)
    rows = [{"input": str(i), "label": "{}"} for i in range(10)]
    order = shuffled_passes(rows, 3, seed=1)
    assert len(order) == 30 and all(
        sorted(r["input"] for r in order[i * 10 : (i + 1) * 10]) == sorted(map(str, range(10))) for i in range(3)
    )
    assert order[:10] != order[10:20]  # each pass in its own order
    assert order == shuffled_passes(rows, 3, seed=1) and order != shuffled_passes(rows, 3, seed=2)
    mix = tmp_path / "mix.jsonl"
    mix.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"m/{i}",
                    "benchmark": "m",
                    "family": "math",
                    "prompt": f"{i}+1?",
                    "answer": str(i + 1),
                    "scorer": "math",
                    "metadata": {},
                }
            )
            + "\n"
            for i in range(7)
        )
    )
    summary = write_openrlhf_dataset(mix, tmp_path / "prompts.jsonl", prompts_needed=20, seed=5)
    assert (summary["passes"], summary["prompts"]) == (3, 21)
    assert len((tmp_path / "prompts.jsonl").read_text().splitlines()) == 21


def test_job_hook_seeds_torch_in_a_fresh_process(tmp_path):
    """torch 2.13 seeds its global RNG from the OS; with the job hook on PYTHONPATH and BRORL_TORCH_SEED set, two
    fresh processes draw the same numbers (OpenRLHF's prompt loader takes its shuffling seed from that RNG)."""
    code = "import torch; print(torch.empty((), dtype=torch.int64).random_().item())"
    hook = str(ROOT / "workflow" / "scripts" / "openrlhf_site")

    def draw(seed: str | None) -> str:
        env = {**os.environ, "PYTHONPATH": hook}
        env.pop("BRORL_TORCH_SEED", None)
        if seed is not None:
            env["BRORL_TORCH_SEED"] = seed
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout

    assert draw("7") == draw("7") != draw("8")
    assert draw(None) != draw(None)  # what OpenRLHF's trainer process gets without the hook


def test_code_rewards_refuse_an_old_sandbox_python(tmp_path):
    from brorl.scoring.sandbox import sandbox_python_problem

    assert sandbox_python_problem(sys.executable) is None
    old = tmp_path / "python3"
    old.write_text("#!/bin/sh\necho 3 6\n")  # what RHEL 8's /usr/bin/python3 would say
    old.chmod(0o755)
    assert "Python 3.6, older than 3.8" in sandbox_python_problem(str(old))
    assert "does not run" in sandbox_python_problem(str(tmp_path / "missing"))


# ------------------------------------------------------------------------------------ launch, watchdog, env
def _paths(tmp_path):
    from brorl.training.openrlhf.command import ClusterPaths

    paths = ClusterPaths(tmp_path / "start", tmp_path / "mix.jsonl", tmp_path / "out", tmp_path / "reward.py")
    for folder in (paths.reward_log_dir, paths.tensorboard_dir, paths.logs_dir):
        folder.mkdir(parents=True)
    return paths


def _fake_launcher(tmp_path, body: str) -> Path:
    script = tmp_path / "launcher.sh"
    script.write_text("#!/usr/bin/env bash\ntrap 'echo terminated > \"$DONE\"; exit 143' TERM\n" + body)
    script.chmod(0o755)
    return script


def test_launch_is_stopped_once_the_last_step_is_saved_and_the_next_generates(tmp_path):
    from brorl.training.openrlhf.launch import launch as _launch

    paths = _paths(tmp_path)
    ckpt = tmp_path / "ckpt"
    (ckpt / "_actor").mkdir(parents=True)
    body = (
        f"echo -n global_step2 > {ckpt}/_actor/latest; sleep 1\n"  # the save of the last step, then
        f'echo "{{}}" >> {paths.reward_log_dir}/host-1.jsonl\n'  # the next step's first reward
        "while :; do sleep 0.1; done\n"
    )
    launcher = _fake_launcher(tmp_path, body)
    done = tmp_path / "done"
    status = _launch([str(launcher)], {**os.environ, "DONE": str(done)}, paths, ckpt, 2, poll_s=0.1, watchdog_s=60)
    assert status == "stopped" and done.read_text().strip() == "terminated"


def test_watchdog_stops_a_launch_that_makes_no_progress(tmp_path):
    from brorl.training.openrlhf.launch import ClusterRunError
    from brorl.training.openrlhf.launch import launch as _launch

    paths = _paths(tmp_path)
    launcher = _fake_launcher(tmp_path, "while :; do sleep 0.1; done\n")  # a placement group never placed
    done = tmp_path / "done"
    with pytest.raises(ClusterRunError, match="no progress for"):
        _launch(
            [str(launcher)], {**os.environ, "DONE": str(done)}, paths, tmp_path / "ckpt", 2, poll_s=0.1, watchdog_s=1.0
        )
    assert done.read_text().strip() == "terminated"  # stopped, not left running


def test_launch_environment_loads_the_device_layer_only_on_cpu(tmp_path):
    import yaml
    from brorl.config import validate_config
    from brorl.training.openrlhf.command import run_layout
    from brorl.training.openrlhf.launch import DEVICE_LAYER, JOB_HOOK, ClusterRunError, launch_env
    from brorl.training.recipe import arm_plan

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    validate_config(config)
    layout = run_layout(config, arm_plan(config, "prorl_n16"), 0)
    base = {"PYTHONPATH": "/site", "SLURM_JOB_ID": "77"}
    gpu = launch_env(config, layout, _paths(tmp_path), base, emulated="0", special_tokens=["<eos>"])
    entries = gpu["PYTHONPATH"].split(os.pathsep)
    assert entries[0] == str(JOB_HOOK) and str(DEVICE_LAYER) not in entries and entries[-1] == "/site"
    assert "BRORL_CPU_REHEARSAL" not in gpu and "DS_ACCELERATOR" not in gpu
    assert gpu["BRORL_TORCH_SEED"] == str(layout.seed) and gpu["RAY_SLURM_EMULATED"] == "0"
    # the job hook's partition and its log, the reward's special tokens, a JIT folder of this job on the node
    assert gpu["BRORL_PARTITION"] == "lpt" and gpu["BRORL_PARTITION_LOG_DIR"].endswith("openrlhf/partition")
    assert json.loads(gpu["BRORL_SPECIAL_TOKENS"]) == ["<eos>"]
    assert gpu["BRORL_TRUNCATED_REWARD"] == config["training"]["reward"]["truncated"] == "zero"
    # the reward tells a response cut at its budget by the missing EOS: without special tokens it could not
    with pytest.raises(ClusterRunError, match="training.reward.truncated is zero"):
        launch_env(config, layout, _paths(tmp_path / "none"), base)
    assert gpu["TQDM_NCOLS"] == "0"  # progress bars never cut their status (the smoke verdict reads the KL from it)
    assert gpu["TORCH_EXTENSIONS_DIR"] == "/tmp/brorl-torch-extensions-77"
    assert gpu["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True" and "RAY_SLURM_IFACE" not in gpu
    # ... switched off around the CUDA-IPC weight sync by the job hook (ipc_hook), which logs each sync
    assert gpu["BRORL_IPC_LEGACY_SEGMENTS"] == "1" and gpu["BRORL_IPC_LOG_DIR"].endswith("openrlhf/ipc")
    # the rollout engines' scheduler limits (vllm_scheduler) for the job hook, and where it records what they run with
    assert json.loads(gpu["BRORL_VLLM_SCHEDULER"]) == {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}
    assert gpu["BRORL_SCHEDULER_LOG_DIR"].endswith("openrlhf/scheduler")
    config["training"]["cluster"]["network_interface"] = "ib0"
    assert (
        launch_env(config, layout, _paths(tmp_path / "ib"), base, special_tokens=["<eos>"])["RAY_SLURM_IFACE"] == "ib0"
    )
    config["training"]["cluster"]["device"] = "cpu"
    cpu = launch_env(config, layout, _paths(tmp_path / "cpu"), {}, special_tokens=["<eos>"])
    assert "BRORL_IPC_LEGACY_SEGMENTS" not in cpu and "PYTORCH_CUDA_ALLOC_CONF" not in cpu
    assert cpu["PYTHONPATH"].split(os.pathsep)[:2] == [str(DEVICE_LAYER), str(JOB_HOOK)]
    assert "TORCH_EXTENSIONS_DIR" not in cpu
    assert cpu["BRORL_CPU_REHEARSAL"] == "1" and cpu["DS_ACCELERATOR"] == "cpu" and "RAY_SLURM_EMULATED" not in cpu


def test_reward_log_is_read_for_the_segments_window_only(tmp_path):
    from brorl.training.openrlhf.logs import read_reward_log

    old, new = tmp_path / "a-1.jsonl", tmp_path / "b-2.jsonl"
    old.write_text(json.dumps({"t": 10.0, "rewards": [1.0], "scores": [1.0]}) + "\n")
    os.utime(old, (20.0, 20.0))  # last written long before the segment began: not opened
    new.write_text(
        json.dumps({"t": 50.0, "rewards": [0.0], "scores": [0.0]})
        + "\n"
        + json.dumps({"t": 150.0, "rewards": [0.5], "scores": [0.0], "errors": ["timeout after 5 s"]})
        + "\n"
        + '{"t": 160.0, "rewa'
    )  # a line torn by a kill
    calls = read_reward_log(tmp_path, since=100.0)
    assert [(c.time, c.rewards, c.errors) for c in calls] == [(150.0, [0.5], ["timeout after 5 s"])]
    assert [c.errors for c in read_reward_log(tmp_path)] == [[None], [None], ["timeout after 5 s"]]


def test_a_training_job_refuses_to_run_inside_a_container():
    from brorl.training.openrlhf.job_environment import container_problem

    assert container_problem({}) is None
    problem = container_problem({"APPTAINER_CONTAINER": "/images/brorl-gpu.sif"})
    assert "brorl-gpu.sif" in problem and "--sdm conda apptainer" in problem


def test_code_rewards_need_the_bubblewrap_sandbox_unless_the_config_allows_less():
    from brorl.scoring.sandbox import isolation_problem

    setting = "training.cluster.allow_unsandboxed_code"
    assert isolation_problem("bwrap", allowed=False, setting=setting) is None
    problem = isolation_problem("rlimits", allowed=False, setting=setting)
    assert "'rlimits'" in problem and "training.cluster.allow_unsandboxed_code: true" in problem
    assert isolation_problem("rlimits+netns", allowed=True, setting=setting) is None
