"""The cluster engine's judgement of what OpenRLHF left on disk (brorl.training.openrlhf_checkpoint), the prompt file
it writes (shuffled passes, openrlhf_data), its launch bookkeeping, and the job-level start-up hook.

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
from safetensors.torch import save_file

from brorl.training.openrlhf_checkpoint import (CheckpointStateError, hf_export_problem, latest_global_step,
                                                 prune_exports, repair, tag_problem)  # fmt: skip
from brorl.training.openrlhf_data import passes_needed, shuffled_passes, write_openrlhf_dataset

ROOT = Path(__file__).resolve().parents[1]
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


def test_prune_exports_keeps_only_what_is_asked(tmp_path):
    for step in (1, 2, 3):
        _save_hf(tmp_path, step)
    assert prune_exports(tmp_path, keep={2}) == [1, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["global_step2_hf"]


def test_prompt_file_holds_seeded_shuffled_passes(tmp_path):
    assert (passes_needed(100, 30), passes_needed(10, 30), passes_needed(0, 30)) == (4, 1, 1)
    rows = [{"input": str(i), "label": "{}"} for i in range(10)]
    order = shuffled_passes(rows, 3, seed=1)
    assert len(order) == 30 and all(sorted(r["input"] for r in order[i * 10:(i + 1) * 10]) == sorted(map(str, range(10))) for i in range(3))
    assert order[:10] != order[10:20]  # each pass in its own order
    assert order == shuffled_passes(rows, 3, seed=1) and order != shuffled_passes(rows, 3, seed=2)
    mix = tmp_path / "mix.jsonl"
    mix.write_text("".join(json.dumps({"id": f"m/{i}", "benchmark": "m", "family": "math", "prompt": f"{i}+1?",
                                       "answer": str(i + 1), "scorer": "math", "metadata": {}}) + "\n" for i in range(7)))  # fmt: skip
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
