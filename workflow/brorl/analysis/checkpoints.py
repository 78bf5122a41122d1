"""Which checkpoint of each arm the significance test compares: the one nearest an equal training time.

Pure functions on plain mappings (no file I/O): the training hours of a step come from ``wall_s`` of its record in
``results/train/<arm>/metrics.jsonl`` (cumulative wall-clock seconds at the end of the step, across segments).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


class SelectionError(ValueError):
    """No checkpoint can be chosen for an arm (names the arm and why)."""


def hours_by_step(records: Sequence[Mapping]) -> dict[int, float]:
    """{continued step: cumulative training hours at its end} from metrics records (``wall_s`` / 3600).

    A record with ``wall_s`` null or negative is an error: the equal-time comparison cannot place that step.
    """
    out: dict[int, float] = {}
    for record in records:
        wall = record.get("wall_s")
        if wall is None or not wall >= 0:
            raise SelectionError(f"step {record.get('step')}: wall_s is {wall!r}, not a number of seconds >= 0")
        out[int(record["step"])] = float(wall) / 3600.0
    return out


def samples_by_step(records: Sequence[Mapping]) -> dict[int, float]:
    """{continued step: generated samples since the start, in thousands} (before dynamic-sampling filtering, as the
    paper's Table 1 counts them)."""
    out, total = {}, 0
    for record in sorted(records, key=lambda r: int(r["step"])):
        total += int(record["generated_samples"])
        out[int(record["step"])] = total / 1000.0
    return out


def select_checkpoints(
    evaluated: Mapping[str, Iterable[int]],
    hours: Mapping[str, Mapping[int, float]],
    target_hours: float | None,
) -> dict[str, int]:
    """For each arm, the evaluated step whose training hours are nearest ``target_hours`` (ties: the earlier step).

    evaluated: arm -> continued steps that have evaluation outputs (step 0, the start checkpoint, is not a
    candidate); hours: arm -> {step: hours} (from ``hours_by_step``). ``target_hours`` None picks each arm's last
    evaluated step (the final checkpoints), without needing hours. Raises SelectionError when an arm has no
    evaluated step after the start or, with a target, an evaluated step has no hours.
    """
    if target_hours is not None and not target_hours > 0:
        raise SelectionError(f"target hours must be > 0 or None, got {target_hours!r}")
    chosen: dict[str, int] = {}
    for arm, steps in evaluated.items():
        candidates = sorted({int(s) for s in steps if int(s) > 0})
        if not candidates:
            raise SelectionError(f"arm {arm!r} has no evaluated checkpoint after the start")
        if target_hours is None:
            chosen[arm] = candidates[-1]
            continue
        arm_hours = hours.get(arm, {})
        missing = [s for s in candidates if s not in arm_hours]
        if missing:
            raise SelectionError(f"arm {arm!r}: no training metrics (wall_s) for evaluated step(s) {missing}")
        chosen[arm] = min(candidates, key=lambda s: (abs(arm_hours[s] - target_hours), s))
    return chosen
