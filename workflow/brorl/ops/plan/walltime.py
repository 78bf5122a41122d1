"""Training jobs against the site's time limit: the longest segment of each arm, priced with the plan's step model,
checked against the first attempt's walltime with a margin, and the segment length that would fit.

A training job that hits its time limit loses the steps since its last full-state save and a start-up of all its
GPUs, and is retried (docs/design.md#segment-lengths-and-walltime). Pure, except `partition_max_hours` (sinfo).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from .estimate import Estimates, training_hours

MARGIN = 0.85  # a job's estimate must stay under this share of the limit (the step model is a two-point fit)


@dataclass(frozen=True)
class Overrun:
    """An arm whose longest training job would not fit the limit with the margin."""

    arm: str
    steps: int  # its longest segment
    hours: float  # that job's estimate
    limit_hours: float
    fits: int  # the segment length that would fit (a multiple of `grid`, at least 1)

    def message(self) -> str:
        return (
            f"train_ppo[{self.arm}]: jobs of up to {self.steps} steps take ~{self.hours:.1f} h, over "
            f"{MARGIN:.0%} of the {self.limit_hours:.0f} h time limit of a first attempt: set the arm's "
            f"segment_max_steps (or training.segment_max_steps) to {self.fits} before it starts"
        )


def overruns(
    arms: dict[str, tuple[int, int]],
    nodes: int,
    est: Estimates,
    limit_hours: float,
    grid: int = 1,
    measured_step_hours: Mapping[str, float] | None = None,
) -> list[Overrun]:
    """arms: name -> (samples per step, steps of its longest segment). Each arm whose longest job's estimate
    exceeds MARGIN x limit_hours, with the longest segment (a multiple of `grid`) that stays under it. An arm's
    measured hours per step (a --measured run at the planned scale, e.g. the one-step 16K preset) replace the step
    model's."""
    found = []
    budget = MARGIN * limit_hours
    measured = measured_step_hours or {}
    for arm, (samples, steps) in arms.items():
        per_step = measured[arm] if arm in measured else training_hours(samples, 1, 0, nodes, est)
        hours = steps * per_step + est.segment_overhead_hours
        if hours <= budget:
            continue
        fits = math.floor((budget - est.segment_overhead_hours) / per_step)
        fits = max(1, fits // grid * grid if fits >= grid else fits)
        found.append(Overrun(arm, steps, hours, limit_hours, fits))
    return found


def parse_slurm_time(text: str) -> float | None:
    """Hours of a Slurm time limit as sinfo prints it ([D-]HH:MM:SS, MM:SS, minutes); None for infinite/unknown."""
    text = text.strip()
    match = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", text)
    if match:
        days, h, m, s = (int(x or 0) for x in match.groups())
        return days * 24 + h + m / 60 + s / 3600
    match = re.fullmatch(r"(\d+):(\d+)", text)
    if match:
        return int(match[1]) / 60 + int(match[2]) / 3600
    return int(text) / 60 if text.isdigit() else None


def partition_max_hours(partition: str) -> float | None:
    """The partition's MaxTime from sinfo where Slurm is reachable (None: no sinfo, no limit, or no answer)."""
    if not shutil.which("sinfo"):
        return None
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-p", partition, "-o", "%l"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    limits = [h for h in map(parse_slurm_time, out.split()) if h is not None]
    return min(limits) if limits else None


def longest_segments(config: dict) -> dict[str, tuple[int, int]]:
    """arm -> (samples per step, steps of its longest segment) of every enabled arm."""
    from ...training.recipe import arm_plan, enabled_arms

    plans = {name: arm_plan(config, name) for name in enabled_arms(config)}
    return {name: (p.samples_per_step, max(len(s.steps) for s in p.segments)) for name, p in plans.items()}
