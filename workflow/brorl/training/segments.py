"""Training jobs, shared by both engines: what a job is given (SegmentJob) and what a finished one leaves behind.

results/train/<arm>/segment<s>.json   the job's steps (metrics), exported checkpoints with sha256, provenance
results/train/<arm>/step<k>/          a saved step's HF folder (hard links to the run folder's export), with
                                      brorl_manifest.json (sha256 of every file, arm, step, segment), the
                                      manifest every model folder carries (brorl.models.verify_model_dir)
results/train/<arm>/train.json        the arm's summary once its last segment is done (+ metrics.jsonl, complete)
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brorl.reporting.provenance import provenance, sha256_file

from .recipe import ArmPlan, Segment
from .run_folder import atomic_json
from .tracking import Tracking


class CheckpointError(RuntimeError):
    """A missing or corrupt exported checkpoint."""


@dataclass(frozen=True)
class SegmentJob:
    """One training job: segment `index` of the arm `plan`, from `start_model` on `train_data`, into `out_dir`
    (results/train/<arm>). What `python -m brorl.training segment` hands the engine's run_segment."""

    plan: ArmPlan
    index: int
    start_model: Path
    train_data: Path
    out_dir: Path
    stop_after: int | None = None  # embedded: end after this step, without a manifest (tests of resumption)
    ray_emulated: str | None = None  # cluster: the launcher's RAY_SLURM_EMULATED (None: leave it as it is)
    tracking: Tracking = dataclasses.field(default_factory=Tracking)  # config `logging` (default: off)
    stop: Any = None  # brorl.training.stop.StopRequests: asked after each saved step whether to stop there

    @property
    def segment(self) -> Segment:
        return self.plan.segments[self.index]


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every regular file directly in `folder`."""
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file()}


def write_segment_manifest(
    path: Path, plan: ArmPlan, segment: Segment, records: list[dict], run_dir: Path, extra: dict[str, Any]
) -> dict:
    """The job's manifest; every saved step of the segment must have its export (else CheckpointError)."""
    missing = [s for s in segment.steps if s not in {r["step"] for r in records}]
    if missing:
        raise CheckpointError(f"segment {segment.index} of {plan.name!r} ended without steps {missing}")
    exports = {}
    for step in (s for s in plan.saved_steps if s in segment.steps):
        folder = run_dir / "exports" / f"step{step}"
        if not folder.is_dir():
            raise CheckpointError(f"{folder}: the export of saved step {step} is missing")
        exports[str(step)] = file_hashes(folder)
    payload = {
        "arm": plan.name,
        "segment": dataclasses.asdict(segment),
        "plan": {k: v for k, v in dataclasses.asdict(plan).items() if k != "segments"},
        "steps": records,
        "exports": exports,
        **extra,
        "provenance": provenance(),
    }
    atomic_json(path, payload)
    return payload


def export_checkpoint(manifest_path: Path, run_dir: Path, step: int, out_dir: Path) -> None:
    """results/train/<arm>/step<k>/ from the run folder's export, verified against the segment manifest."""
    manifest = json.loads(Path(manifest_path).read_text())
    hashes = manifest["exports"].get(str(step))
    if hashes is None:
        raise CheckpointError(
            f"{manifest_path}: step {step} is not a saved step of this segment "
            f"(saved: {', '.join(manifest['exports']) or 'none'})"
        )
    src = Path(run_dir) / "exports" / f"step{step}"
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    from brorl.models.check import write_manifest
    from brorl.models.folders import link_or_copy

    for name in hashes:
        if not (src / name).is_file():
            raise CheckpointError(f"{src / name}: missing (the run folder lost part of the export)")
        link_or_copy(src / name, tmp / name)
    # the folder's own manifest hashes every file once; those hashes are the check against the segment manifest
    written = write_manifest(
        tmp,
        {
            "source": "trained",
            "arm": manifest["arm"],
            "step": step,
            "segment": manifest["segment"]["index"],
            "segment_manifest": str(manifest_path),
        },
    )
    for name, digest in hashes.items():
        if written["files"][name]["sha256"] != digest:
            raise CheckpointError(f"{src / name}: checksum differs from {manifest_path} (corrupt export)")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.replace(out_dir)


def verify_checkpoint(folder: Path) -> dict:
    """The manifest of an exported step, after checking every file's sha256 (CheckpointError otherwise)."""
    from brorl.models.check import ModelError
    from brorl.models.verify import verify_model_dir

    try:
        manifest = verify_model_dir(folder)
    except ModelError as error:
        raise CheckpointError(str(error)) from None
    if manifest.get("source") != "trained":
        raise CheckpointError(
            f"{folder}: not an exported training checkpoint (manifest source {manifest.get('source')!r})"
        )
    return manifest


def write_train_summary(
    path: Path, plan: ArmPlan, manifests: list[Path], metrics_path: Path, metrics_out: Path
) -> None:
    """train.json (the arm's plan, segments, final step, total training wall time) and the arm's complete
    metrics.jsonl (checked: steps 1..continued_steps, each once)."""
    from .metrics import read_metrics, write_metrics

    records = read_metrics(metrics_path)
    steps = [r["step"] for r in records]
    if steps != list(range(1, plan.continued_steps + 1)):
        raise CheckpointError(
            f"{metrics_path}: expected steps 1..{plan.continued_steps} exactly once, got {steps[:5]}...{steps[-5:]}"
        )
    write_metrics(metrics_out, records)
    atomic_json(
        Path(path),
        {
            "arm": plan.name,
            "final_step": plan.continued_steps,
            "wall_s": records[-1]["wall_s"],
            "segments": [str(m) for m in manifests],
            "saved_steps": list(plan.saved_steps),
            "plan": {k: v for k, v in dataclasses.asdict(plan).items() if k != "segments"},
            "provenance": provenance(),
        },
    )
