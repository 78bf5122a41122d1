"""What OpenRLHF 0.11.2 + DeepSpeed 0.19.6 leave on disk, judged before a launch trusts it.

  <ckpt>/_actor/latest                  the newest tag, rewritten in place by DeepSpeed (may be read empty mid-write)
  <ckpt>/_actor/global_step<g>/         full state: mp_rank_00_model_states.pt (ZeRO 0-2; zero_pp_rank_<r>_... at 3)
                                        + one *_optim_states.pt per data-parallel rank, each a torch zip archive
  <ckpt>/global_step<g>_hf/             HF export: save_pretrained (config, safetensors), then the tokenizer files

A job killed inside a save leaves a tag directory without all its shards, or a `latest` that names a tag whose other
ranks were still writing (DeepSpeed writes it on rank 0 before its final barrier), or an HF export with config.json
but truncated weights. `repair` rolls such a run back to the newest save that is whole, and removes what a killed
first save left, so OpenRLHF's --ckpt.load_enable never loads half a checkpoint nor fails on an empty `_actor/`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TAG = re.compile(r"^global_step(\d+)$")
HF_REQUIRED = ("config.json", "tokenizer_config.json", "tokenizer.json")  # the tokenizer is written last


class CheckpointStateError(RuntimeError):
    """A checkpoint folder this code will not guess about (names the folder and what is wrong)."""


def latest_global_step(ckpt: Path) -> int | None:
    """Global step named by DeepSpeed's `latest` tag file; None when there is none yet (or it is mid-write)."""
    tag_file = Path(ckpt) / "_actor" / "latest"
    if not tag_file.is_file():
        return None
    tag = tag_file.read_text().strip()
    if not tag:
        return None  # rewritten in place: an empty read is "not yet", the next poll sees the tag
    match = TAG.match(tag)
    if not match:
        raise CheckpointStateError(f"{tag_file}: unexpected tag {tag!r} (expected global_step<N>)")
    return int(match[1])


def saved_tags(ckpt: Path) -> list[int]:
    """Global steps with a tag directory under _actor/, ascending (complete or not)."""
    actor = Path(ckpt) / "_actor"
    found = [int(m[1]) for p in actor.iterdir() if p.is_dir() and (m := TAG.match(p.name))] if actor.is_dir() else []
    return sorted(found)


def tag_problem(ckpt: Path, step: int, ranks: int) -> str | None:
    """Why the full state of global step `step` is not whole (None when it is): every rank's optimizer shard and
    the model states present, each a complete zip archive (torch.save writes the central directory last)."""
    folder = Path(ckpt) / "_actor" / f"global_step{step}"
    if not folder.is_dir():
        return f"{folder} is missing"
    files = sorted(folder.glob("*.pt"))
    optim = [p for p in files if p.name.endswith("_optim_states.pt")]
    model = [p for p in files if p.name.endswith("_model_states.pt")]
    if len(optim) != ranks:
        return f"{folder}: {len(optim)} optimizer shards, {ranks} ranks saved"
    if not model:
        return f"{folder}: no model states"
    for path in files:
        if not zipfile.is_zipfile(path):
            return f"{path} is truncated (not a complete torch archive)"
    return None


def safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file is not whole: its header must parse and its data must reach the last tensor's end."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"{path}: shorter than its header"
        (length,) = struct.unpack("<Q", head)
        if 8 + length > size:
            return f"{path}: header runs past the end of the file"
        try:
            header = json.loads(handle.read(length))
        except ValueError:
            return f"{path}: unreadable header"
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    return None if 8 + length + end <= size else f"{path}: truncated ({size} of {8 + length + end} bytes)"


def hf_export_problem(folder: Path) -> str | None:
    """Why an HF export is not whole (None when it is): config and tokenizer files, every JSON readable, every
    weight file (all shards of an index) complete."""
    folder = Path(folder)
    if not folder.is_dir():
        return f"{folder} is missing"
    for name in HF_REQUIRED:
        if not (folder / name).is_file():
            return f"{folder}: no {name} (the export was interrupted)"
    for path in folder.glob("*.json"):
        try:
            json.loads(path.read_text())
        except ValueError:
            return f"{path}: not valid JSON (cut short)"
    index = folder / "model.safetensors.index.json"
    weights = (
        sorted({folder / f for f in json.loads(index.read_text())["weight_map"].values()})
        if index.is_file()
        else [folder / "model.safetensors"]
    )
    for path in weights:
        if not path.is_file():
            return f"{path} is missing"
        problem = safetensors_problem(path)
        if problem:
            return problem
    return None


@dataclass(frozen=True)
class Repair:
    """What repair() found and did (for the job log and the segment manifest)."""

    resume_step: int | None  # the global step OpenRLHF will resume from (None: a fresh start)
    removed: tuple[str, ...]  # folders deleted: incomplete tags and exports newer than resume_step
    latest_rewritten: bool


def _write_tag(tag_file: Path, step: int) -> None:
    tmp = tag_file.with_name(tag_file.name + ".tmp")
    tmp.write_text(f"global_step{step}")
    os.replace(tmp, tag_file)


def repair(ckpt: Path, ranks: int, needs_export: Callable[[int], bool], fresh_allowed: bool) -> Repair:
    """Make `ckpt` safe to resume: the newest tag whose full state is whole (and whose HF export is whole where
    `needs_export(step)`) becomes `latest`; newer tags and their exports are removed. With no whole tag, a fresh
    start is made possible by removing `_actor/` (finding: a first save killed early leaves `_actor/` without
    `latest`, and OpenRLHF then fails on every relaunch) -- only when `fresh_allowed`, else CheckpointStateError."""
    ckpt = Path(ckpt)
    actor = ckpt / "_actor"
    if not actor.exists():
        return Repair(None, (), False)
    tags = saved_tags(ckpt)
    good = [
        s
        for s in tags
        if tag_problem(ckpt, s, ranks) is None
        and not (needs_export(s) and hf_export_problem(ckpt / f"global_step{s}_hf"))
    ]
    resume = max(good, default=None)
    removed = []
    if resume is None:
        if not fresh_allowed:
            problems = [tag_problem(ckpt, s, ranks) or hf_export_problem(ckpt / f"global_step{s}_hf") for s in tags]
            raise CheckpointStateError(
                f"{actor}: no whole saved state to resume from ({'; '.join(problems) or 'no tags'})"
            )
        shutil.rmtree(actor)
        removed.append(str(actor))
    for step in (s for s in tags if resume is None or s > resume):
        for folder in (actor / f"global_step{step}", ckpt / f"global_step{step}_hf"):
            if folder.exists():
                shutil.rmtree(folder)
                removed.append(str(folder))
    rewritten = False
    if resume is not None:
        try:
            current = latest_global_step(ckpt)
        except CheckpointStateError:
            current = None
        if current != resume:
            _write_tag(actor / "latest", resume)
            rewritten = True
    return Repair(resume, tuple(removed), rewritten)


def keep_up_to(ckpt: Path, step: int, ranks: int) -> list[str]:
    """After a segment: its last step `step` becomes the newest state. OpenRLHF runs on into the next step until it
    is stopped, and may save it first (under this segment's reference, which a reset must not inherit): tags and
    exports beyond `step` are removed and `latest` names `step`, whose save must be whole. Returns what was removed."""
    problem = tag_problem(ckpt, step, ranks)
    if problem:
        raise CheckpointStateError(f"the segment's last save is not whole: {problem}")
    removed = []
    for later in (s for s in saved_tags(ckpt) if s > step):
        for folder in (Path(ckpt) / "_actor" / f"global_step{later}", Path(ckpt) / f"global_step{later}_hf"):
            if folder.exists():
                shutil.rmtree(folder)
                removed.append(str(folder))
    if latest_global_step(ckpt) != step:
        _write_tag(Path(ckpt) / "_actor" / "latest", step)
    return removed


def prune_exports(ckpt: Path, keep: set[int]) -> list[int]:
    """Delete OpenRLHF's HF exports `global_step<g>_hf` of steps not in `keep` (OpenRLHF rotates only _actor/;
    at paper scale each export is ~3.5 GB). Returns the removed steps."""
    removed = []
    for path in sorted(Path(ckpt).glob("global_step*_hf")):
        match = re.match(r"^global_step(\d+)_hf$", path.name)
        if match and int(match[1]) not in keep:
            shutil.rmtree(path)
            removed.append(int(match[1]))
    return removed
