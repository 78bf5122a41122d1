"""Experiment tracking of training segments (config `logging`, docs/stages.md#experiment-tracking): Weights & Biases
and TensorBoard files.

One W&B run per segment job, named <arm>-segment<s>, in the arm's group (logging.wandb.group), its steps the arm's
continued RL steps, so an arm's segments continue one curve. The API key comes from the environment (WANDB_API_KEY)
only: never the config, a command line or a file the workflow writes. Nothing here imports wandb or torch until a
run is opened with tracking switched on.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

KEY_ENV = "WANDB_API_KEY"
TRACKING_ENV = "BRORL_TRACKING"  # config `logging` as JSON, how the workflow hands it to train_ppo's jobs


class TrackingError(RuntimeError):
    """Tracking that cannot start (a missing key, a W&B server that refuses the run)."""


@dataclass(frozen=True)
class WandbSettings:
    """config logging.wandb (schema: workflow/schemas/config.schema.yaml)."""

    enabled: bool = False
    project: str = "brorl"
    entity: str | None = None
    group: str = "{arm}"  # template: {arm} = the arm name
    mode: str = "online"  # online | offline | disabled

    def group_of(self, arm: str) -> str:
        return self.group.format(arm=arm)


@dataclass(frozen=True)
class Tracking:
    """config `logging`: where a training segment's metrics go besides metrics.jsonl."""

    wandb: WandbSettings = field(default_factory=WandbSettings)
    tensorboard: bool = False  # embedded engine: TensorBoard event files (the cluster engine always writes them)

    @classmethod
    def from_config(cls, logging: Mapping[str, Any] | None) -> Tracking:
        """From the validated config's `logging` section (None: tracking off)."""
        logging = logging or {}
        return cls(WandbSettings(**logging.get("wandb", {})), bool(logging.get("tensorboard", False)))

    @classmethod
    def from_json(cls, text: str | None) -> Tracking:
        return cls.from_config(json.loads(text) if text else None)


def run_name(arm: str, segment: int) -> str:
    """The W&B run (and TensorBoard folder) of one segment job."""
    return f"{arm}-segment{segment}"


def check_key(settings: WandbSettings, environ: Mapping[str, str] = os.environ) -> None:
    """Raise TrackingError when W&B would stream online without WANDB_API_KEY in the environment."""
    if settings.enabled and settings.mode == "online" and not environ.get(KEY_ENV):
        raise TrackingError(
            f"logging.wandb is enabled in online mode but the environment has no {KEY_ENV}: export "
            f"{KEY_ENV}=<your key> (https://wandb.ai/authorize) before starting the workflow (it is read from the "
            "environment only, never from the config), or set logging.wandb.mode: offline (upload later with "
            "`wandb sync`) or logging.wandb.enabled: false"
        )


def numeric_fields(record: Mapping[str, Any]) -> dict[str, float]:
    """The record's measured numbers, by their metrics.jsonl names: `step` is the x axis; nulls (and NaN/inf, which
    metrics.jsonl stores as null) are not logged."""
    return {
        key: value
        for key, value in record.items()
        if key != "step" and isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


class SegmentLogger:
    """The W&B run and TensorBoard writer of one segment (each only when configured); `log` takes metrics.jsonl
    records. A context manager: a run left by an exception is marked failed."""

    def __init__(
        self, tracking: Tracking, arm: str, segment: int, run_dir: Path, recipe: Mapping[str, Any] | None = None
    ) -> None:
        self.wandb_run = None
        self.writer = None
        name = run_name(arm, segment)
        if tracking.wandb.enabled:
            self.wandb_run = _open_wandb(tracking.wandb, arm, name, Path(run_dir), recipe)
        if tracking.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard" / name))

    def log(self, record: Mapping[str, Any]) -> None:
        values = numeric_fields(record)
        if self.wandb_run is not None:
            self.wandb_run.log(values, step=record["step"])
        if self.writer is not None:
            for key, value in values.items():
                self.writer.add_scalar(key, value, record["step"])
            self.writer.flush()

    def close(self, failed: bool = False) -> None:
        if self.wandb_run is not None:
            self.wandb_run.finish(exit_code=1 if failed else 0)
            self.wandb_run = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def __enter__(self) -> SegmentLogger:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close(failed=kind is not None)


def _open_wandb(settings: WandbSettings, arm: str, name: str, run_dir: Path, recipe: Mapping[str, Any] | None):
    """A new W&B run for one segment; its local files go to $WANDB_DIR, else to the run folder (run/wandb/)."""
    check_key(settings)
    import wandb

    folder = Path(os.environ.get("WANDB_DIR") or run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return wandb.init(
            project=settings.project,
            entity=settings.entity,
            group=settings.group_of(arm),
            name=name,
            job_type="train",
            mode=settings.mode,
            dir=str(folder),
            config=dict(recipe or {}),
            reinit="create_new",
        )
    except wandb.errors.Error as error:
        raise TrackingError(f"W&B refused the run {name!r} (logging.wandb): {error}") from error
