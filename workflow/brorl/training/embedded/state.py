"""The embedded engine's run folder (`results/train/<arm>/run/`): full training state after every step, the
reference weights of each reset, and the HF exports of the saved steps. Every write is atomic (temporary name,
fsync, rename), so a job killed at any instant leaves the last committed step intact and nothing half-written
that a later run could mistake for finished work (atomic writes: brorl.training.run_folder).

  run/state/step<k>.pt      policy + optimizer state, data cursor, wall time, reference step (last 2 kept)
  run/state/latest.json     {"step": k}: the committed step (written last)
  run/reference/step<r>.pt  the reference policy set at a reset after step r (r = 0: the start model)
  run/exports/step<k>/      HF folder (weights, config, tokenizer) of each saved step
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..run_folder import atomic_json, fsync_dir

KEEP_STATES = 2
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "generation_config.json",
    "added_tokens.json",
)


def atomic_torch_save(path: Path, payload: Any) -> None:
    """torch.save to `path` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        torch.save(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


def latest_step(run_dir: Path) -> int | None:
    """The committed step of the run, or None when no step was committed yet."""
    pointer = run_dir / "state" / "latest.json"
    if not pointer.exists():
        return None
    return int(json.loads(pointer.read_text())["step"])


def save_state(run_dir: Path, step: int, payload: dict) -> None:
    """Write step `step`'s full state, then commit it (latest.json), then drop states older than KEEP_STATES."""
    state_dir = run_dir / "state"
    atomic_torch_save(state_dir / f"step{step}.pt", payload)
    atomic_json(state_dir / "latest.json", {"step": step})
    for old in state_dir.glob("step*.pt"):
        if int(old.stem[4:]) <= step - KEEP_STATES:
            old.unlink()


def load_state(run_dir: Path, step: int) -> dict:
    """The full state committed at `step` (a clear error when it is missing)."""
    path = run_dir / "state" / f"step{step}.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the committed training state is missing; delete {run_dir} to restart the arm")
    return torch.load(path, map_location="cpu", weights_only=False)


def reference_path(run_dir: Path, step: int) -> Path:
    return run_dir / "reference" / f"step{step}.pt"


def save_reference(run_dir: Path, step: int, state_dict: dict) -> None:
    atomic_torch_save(reference_path(run_dir, step), state_dict)


def export_hf(
    model: torch.nn.Module, tokenizer_dir: Path, out_dir: Path, before_publish: Callable[[Path], None] | None = None
) -> None:
    """An HF folder of `model` at `out_dir` (written beside it, then renamed into place), tokenizer files copied
    from `tokenizer_dir`; `before_publish(tmp)` may add files (a manifest) before the rename."""
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copy2(tokenizer_dir / name, tmp / name)
    if before_publish is not None:
        before_publish(tmp)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.replace(out_dir)
    fsync_dir(out_dir.parent)
