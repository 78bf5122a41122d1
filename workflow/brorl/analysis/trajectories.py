"""pass@1 per checkpoint from per-instance units: per benchmark, per family, per task, each with its error bar.

pass@1 of a benchmark = mean over its instances of each instance's sample mean (the evaluation stage's number);
a family's = the unweighted mean over its benchmarks present (the paper's Math and Code averages). Reasoning Gym has
three averages (``reasoning_gym_averages``): over its 11 categories (that family mean), over tasks and over items; the
paper's printed average follows an unpublished rule. Values are fractions in [0, 1].

Every pass@1 carries ``se`` (its standard error over problems), ``ci_low`` / ``ci_high`` (the 95% interval) and
``n_items`` / ``n_samples`` (problems x samples each), by brorl.stats.stderr: a benchmark's or a task's is the
analytic error of a mean over its problems, a family's (and the category mean's) ``sqrt(sum se^2) / k`` over its
benchmarks, the task mean's that of a weighted mean over items (docs/design.md#error-bars).
"""

from __future__ import annotations

import pandas as pd

from ..stats.agreement import rerun_se
from ..stats.stderr import MeanError, mean_error, mean_of_errors, weighted_mean_error

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
