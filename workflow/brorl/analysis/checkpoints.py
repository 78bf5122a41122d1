"""Which checkpoints, and how each did: the checkpoint of each arm the significance test compares (the one nearest an
equal training time), and pass@1 per checkpoint with its error bar.

The clock (pure functions on plain mappings, no file I/O). The training clock of a step is read from its record in
``results/train/<arm>/metrics.jsonl``: ``wall_s`` (cumulative wall-clock seconds at the end of the step, across
segments) less the start-ups before each launch's first step (that record's ``overhead_s``: start-up, and with it
whatever the launch before it lost): the first step of each segment, and of each relaunch inside a segment (a retried
or requeued job; the records' ``launch``), so an arm that needed more segments, crashed, or met more time limits is
not charged for it; those hours are kept apart (``startup_hours``). Equal compute is the nearer of
``analysis.equal_time_hours`` and the hours every arm reached.

pass@1 per checkpoint from per-instance units: per benchmark, per family, per task, each with its error bar. pass@1 of
a benchmark = mean over its instances of each instance's sample mean (the evaluation stage's number); a family's = the
unweighted mean over its benchmarks present (the paper's Math and Code averages). Reasoning Gym has three averages
(``reasoning_gym_averages``): over its 11 categories (that family mean), over tasks and over items; the paper's
printed average follows an unpublished rule. Values are fractions in [0, 1].

Every pass@1 carries ``se`` (its standard error over problems), ``ci_low`` / ``ci_high`` (the 95% interval) and
``n_items`` / ``n_samples`` (problems x samples each), by brorl.stats.stderr: a benchmark's or a task's is the
analytic error of a mean over its problems, a family's (and the category mean's) ``sqrt(sum se^2) / k`` over its
benchmarks, the task mean's that of a weighted mean over items (docs/design.md#error-bars).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from ..stats.agreement import rerun_se
from ..stats.stderr import MeanError, mean_error, mean_of_errors, weighted_mean_error


class SelectionError(ValueError):
    """No checkpoint can be chosen for an arm (names the arm and why)."""


def _clock(records: Sequence[Mapping]) -> tuple[dict[int, float], float]:
    """({step: training-clock hours}, start-up hours kept apart) of one arm's records (module docstring)."""
    out: dict[int, float] = {}
    apart, launch = 0.0, object()
    for record in sorted(records, key=lambda r: int(r["step"])):
        wall = record.get("wall_s")
        if wall is None or not wall >= 0:
            raise SelectionError(f"step {record.get('step')}: wall_s is {wall!r}, not a number of seconds >= 0")
        if (record.get("segment"), record.get("launch")) != launch:  # a launch's first step: its overhead is start-up
            apart += float(record.get("overhead_s") or 0.0)
            launch = (record.get("segment"), record.get("launch"))
        out[int(record["step"])] = (float(wall) - apart) / 3600.0
    return out, apart / 3600.0


def hours_by_step(records: Sequence[Mapping]) -> dict[int, float]:
    """{continued step: training-clock hours at its end}: steps and saves, without start-ups (module docstring).

    A record with ``wall_s`` null or negative is an error: the equal-time comparison cannot place that step.
    """
    return _clock(records)[0]


def startup_hours(records: Sequence[Mapping]) -> float:
    """Hours of start-ups and relaunches before launches' first steps, kept out of the training clock."""
    return _clock(records)[1]


def refill_mode(records: Sequence[Mapping]) -> str:
    """How dynamic sampling refilled an arm's steps (metrics `refill`): its mode (modes joined by ' + ' if they
    differ), 'off' with dynamic sampling off, or 'not recorded' (metrics older than schema 9)."""
    if records and all(r.get("waves") is not None and r.get("refill") is None for r in records):
        return "off"
    modes = sorted({r["refill"] for r in records if r.get("refill")})
    return " + ".join(modes) if modes else "not recorded"


CLOCK = "the training clock: each step's wall-clock time and its saves, start-ups and relaunches apart"


def clock_statement(refill: Mapping[str, str]) -> dict:
    """Which clock the hours columns and the equal-hours comparison use, and each arm's refill mode: a step's hours
    depend on how dynamic sampling refills it (brorl.training.refill), which the paper does not publish."""
    modes = sorted(set(refill.values()))
    if len(modes) == 1:
        said = {"off": "dynamic sampling off", "not recorded": "dynamic sampling's refill not recorded"}
        text = said.get(modes[0], f"dynamic sampling refilled in {modes[0]} mode") + " in every arm"
    else:
        text = "dynamic sampling's refill by arm: " + "; ".join(f"{a}: {m}" for a, m in sorted(refill.items()))
    return {"clock": CLOCK, "refill": dict(refill), "text": f"{CLOCK}; {text} (the paper's refill is not published)"}


UNEQUAL = 0.10  # chosen checkpoints whose hours differ by more than this share are flagged


def unequal_compute(chosen_hours: Mapping[str, float | None], tolerance: float = UNEQUAL) -> str | None:
    """A warning when the compared checkpoints' training hours differ by more than ``tolerance`` of the smaller
    (None when they agree, or when an arm's hours are unknown)."""
    known = {arm: h for arm, h in chosen_hours.items() if h is not None}
    if len(known) < 2:
        return None
    low, high = min(known.values()), max(known.values())
    gap = (high - low) / low if low > 0 else float("inf")
    if gap <= tolerance:
        return None
    shown = ", ".join(f"{arm} {h:.3g} h" for arm, h in known.items())
    return f"unequal compute: the compared checkpoints' training hours differ by {100 * gap:.0f}% ({shown})"


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
    """For each arm, the evaluated step whose training hours are nearest t* (``equal_point``; ties: the earlier
    step).

    evaluated: arm -> continued steps that have evaluation outputs (step 0, the start checkpoint, is not a
    candidate); hours: arm -> {step: hours} (from ``hours_by_step``). ``target_hours`` None picks each arm's last
    evaluated step (the final checkpoints), without needing hours. Raises SelectionError when an arm has no
    evaluated step after the start or, with a target, an evaluated step has no hours.
    """
    return nearest_checkpoints(evaluated, hours, equal_point(evaluated, hours, target_hours))


def nearest_checkpoints(
    evaluated: Mapping[str, Iterable[int]], clock: Mapping[str, Mapping[int, float]], point: float | None
) -> dict[str, int]:
    """For each arm, the evaluated step whose ``clock`` reading is nearest ``point`` (ties: the earlier step; None:
    the last evaluated step). ``point`` comes from ``equal_point``, which has checked that every step has a reading."""
    chosen: dict[str, int] = {}
    for arm, candidates in _candidates(evaluated).items():
        if point is None:
            chosen[arm] = candidates[-1]
            continue
        readings = clock[arm]
        chosen[arm] = min(candidates, key=lambda s: (abs(readings[s] - point), s))
    return chosen


def _candidates(evaluated: Mapping[str, Iterable[int]]) -> dict[str, list[int]]:
    out = {arm: sorted({int(s) for s in steps if int(s) > 0}) for arm, steps in evaluated.items()}
    for arm, candidates in out.items():
        if not candidates:
            raise SelectionError(f"arm {arm!r} has no evaluated checkpoint after the start")
    return out


def equal_point(
    evaluated: Mapping[str, Iterable[int]], hours: Mapping[str, Mapping[int, float]], target_hours: float | None
) -> float | None:
    """t* = min(target_hours, each arm's hours at its last evaluated checkpoint): the point every arm reached
    (None with no target: the final checkpoints). ``hours`` may be any clock (generated samples too)."""
    if target_hours is not None and not target_hours > 0:
        raise SelectionError(f"target hours must be > 0 or None, got {target_hours!r}")
    candidates = _candidates(evaluated)
    if target_hours is None:
        return None
    reached = []
    for arm, steps in candidates.items():
        arm_hours = hours.get(arm, {})
        missing = [s for s in steps if s not in arm_hours]
        if missing:
            raise SelectionError(f"arm {arm!r}: no training metrics (wall_s) for evaluated step(s) {missing}")
        reached.append(arm_hours[steps[-1]])
    return min([target_hours, *reached])


def step_sizes(records: Sequence[Mapping]) -> dict[int, dict[str, float | None]]:
    """{continued step: its lr, token-weighted RMS advantage and gradient norm} (brorl.analysis.extensions)."""
    return {int(r["step"]): {k: r.get(k) for k in ("lr", "adv_rms", "grad_norm")} for r in records}


ERROR_COLUMNS = ("se", "ci_low", "ci_high", "n_items", "n_samples")


def _errors(err: MeanError, g: pd.DataFrame) -> dict:
    return {"se": err.se, "ci_low": err.low, "ci_high": err.high, "n_items": len(g), "n_samples": _samples(g)}


def _samples(g: pd.DataFrame) -> int:
    """Samples per problem of a group (the fewest, should they differ)."""
    return int(g["n_samples"].min()) if "n_samples" in g and len(g) else 0


def _per_group(units: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    rows = []
    for key, g in units.groupby(keys, sort=True):
        err = mean_error(g["score"].to_numpy(dtype=float))
        rows.append({**dict(zip(keys, key)), "pass1": err.mean, **_errors(err, g)})
    return pd.DataFrame(rows, columns=[*keys, "pass1", *ERROR_COLUMNS])


def benchmark_pass1(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, family, benchmark, pass1, se, ci_low, ci_high, n_items, n_samples (per benchmark and checkpoint),
    and SECOND: the noise of a rerun on the same problems (brorl.stats.agreement; NaN without ``score_var``), and for
    code the mean fraction of tests passed with its errors (NaN elsewhere)."""
    keys = ["arm", "step", "family", "benchmark"]
    out = _per_group(units, keys)
    extra = [{**dict(zip(keys, key)), **_second_scores(g)} for key, g in units.groupby(keys, sort=True)]
    return out.merge(pd.DataFrame(extra, columns=[*keys, *SECOND]), on=keys, how="left", validate="one_to_one")


# per benchmark beside pass1: its rerun noise, and code's mean fraction of tests passed with its se and rerun noise
SECOND = ("rerun_se", "tests_passed", "tests_passed_se", "tests_passed_rerun_se")


def _second_scores(g: pd.DataFrame) -> dict:
    """The columns of SECOND for one benchmark's units (NaN where the units lack what they need)."""
    nan = float("nan")
    out = dict.fromkeys(SECOND, nan)
    if "score_var" in g:
        out["rerun_se"] = rerun_se(g["score_var"].to_numpy(dtype=float), _samples(g))
    if "tests_passed" in g and g["tests_passed"].notna().all():
        err = mean_error(g["tests_passed"].to_numpy(dtype=float))
        out.update(tests_passed=err.mean, tests_passed_se=err.se)
        out["tests_passed_rerun_se"] = rerun_se(g["tests_passed_var"].to_numpy(dtype=float), _samples(g))
    return out


def _family_error(g: pd.DataFrame) -> MeanError:
    """The unweighted mean over the benchmarks of ``g`` and its error ``sqrt(sum se^2) / k``."""
    errs = [mean_error(b["score"].to_numpy(dtype=float)) for _, b in g.groupby("benchmark", sort=True)]
    return mean_of_errors([e.mean for e in errs], [e.se for e in errs], len(g))


def family_pass1(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, family, n_benchmarks, benchmarks, pass1, se, ci_low, ci_high, n_items, n_samples."""
    rows = []
    for (arm, step, family), g in units.groupby(["arm", "step", "family"], sort=True):
        err = _family_error(g)
        rows.append(
            {
                "arm": arm,
                "step": int(step),
                "family": family,
                "n_benchmarks": int(g["benchmark"].nunique()),
                "benchmarks": ",".join(sorted(g["benchmark"].unique())),
                "pass1": err.mean,
                **_errors(err, g),
            }
        )
    return pd.DataFrame(rows)


RG_AVERAGES = ("category_mean", "task_mean", "item_mean")


def reasoning_gym_averages(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, then per average of ``RG_AVERAGES`` its value and ``<average>_se``, and n_tasks, n_items, n_samples
    of the Reasoning Gym units per checkpoint.

    category_mean: mean of the category benchmarks' pass@1 (se over categories as for a family); task_mean: mean of
    each task's pass@1 (a task = one Reasoning Gym dataset, ``task`` of its units; se of a weighted mean over items,
    as tasks may hold one item); item_mean: mean over all items. They differ when categories hold different numbers
    of tasks, or tasks different numbers of items.
    """
    rg = units[units["family"] == "reasoning_gym"]
    rows = []
    for (arm, step), g in rg.groupby(["arm", "step"], sort=True):
        scores = g["score"].to_numpy(dtype=float)
        per_task = g.groupby("task")["score"].transform("size").to_numpy(dtype=float)
        errs = {
            "category_mean": _family_error(g),
            "task_mean": weighted_mean_error(scores, 1.0 / per_task),
            "item_mean": mean_error(scores),
        }
        row = {"arm": arm, "step": int(step)}
        for name, err in errs.items():
            row[name], row[f"{name}_se"] = err.mean, err.se
        row.update(n_tasks=int(g["task"].nunique()), n_items=int(len(g)), n_samples=_samples(g))
        rows.append(row)
    columns = ["arm", "step", *[c for a in RG_AVERAGES for c in (a, f"{a}_se")], "n_tasks", "n_items", "n_samples"]
    return pd.DataFrame(rows, columns=columns)


def task_pass1(units: pd.DataFrame) -> pd.DataFrame:
    """arm, step, benchmark, task, pass1 and its errors (Reasoning Gym tasks; other benchmarks are their own task;
    a task of one item has se NaN)."""
    return _per_group(units, ["arm", "step", "benchmark", "task"])


def with_hours(frame: pd.DataFrame, hours: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the training hours of each (arm, step) (NaN where the metrics have no such step)."""
    return frame.merge(hours, on=["arm", "step"], how="left", validate="many_to_one")
