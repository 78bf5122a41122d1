"""Experiment tracking of evaluation (config `logging`, docs/stages.md#experiment-tracking): each evaluated
checkpoint's pass@1 to Weights & Biases and TensorBoard, so the curves of Figure 1 grow while an arm trains.

The settings, the key check and the errors are training's (brorl.training.tracking); this module only adds what
evaluation logs and where:

- metrics: ``eval/<benchmark>/pass1`` and ``eval/<benchmark>/pass1_se`` for every benchmark summary of the
  checkpoint, and ``eval/<family>_avg/pass1`` (``_se``) for each family present: the unweighted mean of its
  benchmarks, ``se = sqrt(sum se^2) / k`` (the evaluation table's family averages); a standard error the summary
  leaves null (one problem) is not logged;
- W&B: one run per arm, ``<arm>-eval``, in the arm's group, with a run id derived from (entity, project, group, arm),
  so every checkpoint's job resumes the same run (``resume="allow"``). The x axis is the metric ``eval/step`` (the
  checkpoint's RL step), not W&B's own step: checkpoints may finish evaluation out of order, and W&B drops rows
  logged at a step below a run's current one. Jobs of one arm take a file lock, so two never write the run at once;
- TensorBoard: one event file per checkpoint, ``<folder>/tensorboard/events.out.tfevents.step<step>.eval``, so a
  rerun replaces its checkpoint's file and TensorBoard reads the files (sorted by name) in step order.

``checkpoint_metrics`` is pure (summaries -> metrics); ``track_checkpoint`` does the I/O. Nothing imports wandb or
tensorboard until a run is opened with that tracking switched on.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..training.tracking import Tracking, TrackingError, WandbSettings, check_key

PREFIX = "eval"
STEP_METRIC = f"{PREFIX}/step"  # the x axis of every eval/* metric in W&B
TENSORBOARD_FOLDER = "tensorboard"
LOCK_FILE = ".tracking.lock"


# ------------------------------------------------------------------------------------------------------ pure part
def combined_se(ses: Sequence[float]) -> float:
    """``sqrt(sum se^2) / k``: brorl.stats.stderr.combined_se (the evaluation table's family averages), restated so
    that the tracking job never imports brorl.stats, whose package imports scipy, which its environment
    (envs/train.yaml) does not pin; tests/evaluation/test_eval_tracking.py holds the two equal."""
    return math.sqrt(sum(x * x for x in ses)) / len(ses)


def run_name(arm: str) -> str:
    """The W&B run of an arm's evaluations (every checkpoint of the arm appends to it)."""
    return f"{arm}-eval"


def run_id(settings: WandbSettings, arm: str) -> str:
    """The arm's evaluation run id: the same for every checkpoint job of one experiment (so they resume one run),
    another for another entity, project or group (a new experiment in a new group starts a new run)."""
    key = "\n".join([settings.entity or "", settings.project, settings.group_of(arm), run_name(arm)])
    return "eval-" + hashlib.sha256(key.encode()).hexdigest()[:24]


def _se(value: object) -> float | None:
    """A standard error as logged: None where the summary has none (null, NaN)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def checkpoint_of(summaries: Sequence[Mapping[str, Any]]) -> tuple[str, int]:
    """The (arm, step) the summaries share; TrackingError if they are none or of several checkpoints."""
    points = {(s.get("arm"), s.get("step")) for s in summaries}
    if len(points) != 1:
        raise TrackingError(
            f"the summaries of one tracked checkpoint must share arm and step, got {sorted(points, key=str) or 'none'}"
        )
    arm, step = points.pop()
    if not isinstance(arm, str) or not isinstance(step, int) or isinstance(step, bool):
        raise TrackingError(f"a summary without an arm name and an integer step: arm {arm!r}, step {step!r}")
    return arm, step


def checkpoint_metrics(summaries: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The metrics of one checkpoint from its benchmark summaries (brorl.evaluation.summary records): per benchmark
    eval/<benchmark>/pass1 and pass1_se, per family eval/<family>_avg/pass1 and pass1_se (unweighted mean over the
    family's benchmarks; its se only where every benchmark has one). Benchmarks sorted, then family averages."""
    checkpoint_of(summaries)
    by_benchmark: dict[str, Mapping[str, Any]] = {}
    for s in summaries:
        benchmark, family = s.get("benchmark"), s.get("family")
        if not isinstance(benchmark, str) or not isinstance(family, str):
            raise TrackingError(f"a summary of {s.get('arm')}/step{s.get('step')} mixes benchmarks or families")
        if benchmark in by_benchmark:
            raise TrackingError(f"two summaries of benchmark {benchmark!r} for one checkpoint")
        by_benchmark[benchmark] = s
    metrics: dict[str, float] = {}
    families: dict[str, list[tuple[float, float | None]]] = {}
    for benchmark, s in sorted(by_benchmark.items()):
        pass1, se = float(s["pass_at_1"]), _se(s.get("pass_at_1_stderr"))
        metrics[f"{PREFIX}/{benchmark}/pass1"] = pass1
        if se is not None:
            metrics[f"{PREFIX}/{benchmark}/pass1_se"] = se
        families.setdefault(s["family"], []).append((pass1, se))
    for family, values in sorted(families.items()):
        name = f"{PREFIX}/{family}_avg"
        if f"{name}/pass1" in metrics:
            raise TrackingError(f"benchmark {family}_avg would hide the average of family {family!r}")
        metrics[f"{name}/pass1"] = sum(p for p, _ in values) / len(values)
        ses = [se for _, se in values]
        if all(se is not None for se in ses):
            metrics[f"{name}/pass1_se"] = combined_se(ses)
    return metrics


# ---------------------------------------------------------------------------------------------------------- I/O
@contextmanager
def _arm_lock(folder: Path) -> Iterator[None]:
    """One tracking job per arm folder at a time (the jobs of an arm resume one W&B run)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def log_wandb(settings: WandbSettings, arm: str, step: int, metrics: Mapping[str, float], folder: Path) -> dict:
    """Append one checkpoint's metrics to the arm's evaluation run (created by its first checkpoint); local files go
    to $WANDB_DIR, else to ``folder`` (wandb/). Returns what the marker records about the run."""
    check_key(settings)
    import wandb

    local = Path(os.environ.get("WANDB_DIR") or folder)
    local.mkdir(parents=True, exist_ok=True)
    name, ident, group = run_name(arm), run_id(settings, arm), settings.group_of(arm)
    try:
        run = wandb.init(
            project=settings.project,
            entity=settings.entity,
            group=group,
            name=name,
            id=ident,
            resume="allow",
            job_type="eval",
            mode=settings.mode,
            dir=str(local),
            config={"arm": arm},
            reinit="create_new",
        )
    except wandb.errors.Error as error:
        raise TrackingError(f"W&B refused the run {name!r} (logging.wandb): {error}") from error
    try:
        run.define_metric(STEP_METRIC)
        run.define_metric(f"{PREFIX}/*", step_metric=STEP_METRIC)
        run.log({STEP_METRIC: step, **metrics})
    except BaseException:
        run.finish(exit_code=1)
        raise
    run.finish()
    return {
        "run_id": ident,
        "name": name,
        "group": group,
        "project": settings.project,
        "entity": settings.entity,
        "mode": settings.mode,
    }


def tensorboard_file(folder: Path, step: int) -> Path:
    """The event file of one checkpoint: zero-padded step, so the name order is the step order."""
    return Path(folder) / TENSORBOARD_FOLDER / f"events.out.tfevents.step{int(step):010d}.eval"


def write_tensorboard(folder: Path, step: int, metrics: Mapping[str, float]) -> Path:
    """One checkpoint's scalars in its own event file (replaced atomically on a rerun)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    path = tensorboard_file(folder, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.parent / f".step{int(step)}.partial"  # no "tfevents" in the name: TensorBoard never reads it
    now = time.time()
    values = [summary_pb2.Summary.Value(tag=tag, simple_value=value) for tag, value in metrics.items()]
    with open(partial, "wb") as handle:
        writer = RecordWriter(handle)
        writer.write(event_pb2.Event(wall_time=now, file_version="brain.Event:2").SerializeToString())
        event = event_pb2.Event(wall_time=now, step=int(step), summary=summary_pb2.Summary(value=values))
        writer.write(event.SerializeToString())
        writer.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)
    return path


def track_checkpoint(tracking: Tracking, summaries: Sequence[Mapping[str, Any]], folder: Path) -> dict:
    """Log one checkpoint's summaries where `tracking` says (W&B, TensorBoard, both or neither); ``folder`` is the
    arm's evaluation folder (results/eval/<arm>). Returns the marker record: arm, step, the metrics, and where they
    went (null: not logged there). With W&B online and no key nothing is written (TrackingError)."""
    arm, step = checkpoint_of(summaries)
    metrics = checkpoint_metrics(summaries)
    check_key(tracking.wandb)  # before anything is written
    folder = Path(folder)
    record: dict[str, Any] = {"arm": arm, "step": step, "metrics": metrics, "wandb": None, "tensorboard": None}
    if not (tracking.wandb.enabled or tracking.tensorboard):
        return record
    with _arm_lock(folder):
        if tracking.wandb.enabled:
            record["wandb"] = log_wandb(tracking.wandb, arm, step, metrics, folder)
        if tracking.tensorboard:
            record["tensorboard"] = str(write_tensorboard(folder, step, metrics))
    return record


def write_marker(record: Mapping[str, Any], out: Path) -> None:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
