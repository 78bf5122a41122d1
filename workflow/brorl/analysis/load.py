"""Read the evaluation outputs into per-instance units, and the training metrics into hours per step.

Scores: ``results/eval/{arm}/step{k}/{benchmark}.scores.parquet`` (columns id, sample_idx, score, correct, error;
brorl.evaluation). The path grammar gives arm, step and benchmark. Benchmark records
(``resources/benchmarks/{benchmark}.jsonl``) give each problem's family and task: Reasoning Gym items carry their
task in ``metadata.task``; any other problem's task is its benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from ..benchmarks.records import read_records
from ..stats.units import instance_means
from .checkpoints import hours_by_step, refill_mode, samples_by_step, startup_hours, step_sizes

SCORES_PATH = re.compile(r"(?:^|/)(?P<arm>[^/]+)/step(?P<step>\d+)/(?P<benchmark>[^/]+)\.scores\.parquet$")
UNIT_COLUMNS = (
    "arm",
    "step",
    "benchmark",
    "family",
    "task",
    "id",
    "n_samples",
    "score",
    "score_var",
    "tests_passed",
    "tests_passed_var",
    "score_first",
    "score_second",
)
Start = tuple[str, int, int]  # the start checkpoint's (arm, step) and its draws of n samples (evaluation.start_draws)
TESTS_PASSED = "tests_passed"  # the scores' optional code column (brorl.evaluation.score.TESTS_PASSED_COLUMN)


class AnalysisInputError(ValueError):
    """An input file that cannot be used (names the file and the problem)."""


def parse_scores_path(path: Path | str) -> tuple[str, int, str]:
    """(arm, step, benchmark) of ``.../{arm}/step{k}/{benchmark}.scores.parquet``."""
    match = SCORES_PATH.search(Path(path).as_posix())
    if match is None:
        raise AnalysisInputError(f"{path}: not a path of the form <arm>/step<k>/<benchmark>.scores.parquet")
    return match["arm"], int(match["step"]), match["benchmark"]


def item_table(benchmark_files: Iterable[Path | str]) -> pd.DataFrame:
    """One row per benchmark item: benchmark, id, family, task (from the records files)."""
    rows = []
    for path in benchmark_files:
        for rec in read_records(path):
            task = (rec.get("metadata") or {}).get("task") if rec["family"] == "reasoning_gym" else None
            rows.append((rec["benchmark"], str(rec["id"]), rec["family"], str(task or rec["benchmark"])))
    return pd.DataFrame(rows, columns=["benchmark", "id", "family", "task"])


def load_units(
    scores_files: Iterable[Path | str],
    benchmark_files: Iterable[Path | str],
    expected_samples: int | None = None,
    start: Start | None = None,
) -> pd.DataFrame:
    """Per-instance units of every (arm, step, benchmark) scores file: ``UNIT_COLUMNS``, score = mean over samples.

    Every scored id must be an item of its benchmark's records file (else AnalysisInputError naming the file);
    with ``expected_samples`` every instance must have exactly that many samples, the start checkpoint's ``start``
    (arm, step, draws) that many times its draws. With two or more draws the start's units also carry the means of
    its first and second draw of ``expected_samples`` (``score_first``, ``score_second``: each arm's test against the
    start takes its own, brorl.analysis.tasks); NaN elsewhere.
    """
    items = item_table(benchmark_files)
    known = set(items["benchmark"])
    frames = []
    for path in scores_files:
        arm, step, bench = parse_scores_path(path)
        if bench not in known:
            raise AnalysisInputError(f"{path}: no records file was given for benchmark {bench!r}")
        try:
            optional = [TESTS_PASSED] if TESTS_PASSED in pq.read_schema(path).names else []
            df = pd.read_parquet(path, columns=["id", "sample_idx", "score", *optional])
        except Exception as err:  # pyarrow raises several types for missing/corrupt files
            raise AnalysisInputError(f"{path}: cannot read the scores: {err}") from err
        df["id"] = df["id"].astype(str)
        unknown = set(df["id"]) - set(items.loc[items["benchmark"] == bench, "id"])
        if unknown:
            raise AnalysisInputError(
                f"{path}: {len(unknown)} id(s) not in the {bench} records, e.g. {sorted(unknown)[0]!r}"
            )
        frames.append(df.assign(arm=arm, step=step, benchmark=bench))
    if not frames:
        raise AnalysisInputError("no scores files given")
    samples = pd.concat(frames, ignore_index=True)
    is_start = _is_start(samples, start)
    try:
        units = instance_means(samples, keys=("arm", "step", "benchmark", "id"), carry=())
    except ValueError as err:
        raise AnalysisInputError(f"scores: {err}") from err
    if expected_samples is not None:
        _check_counts(units, expected_samples, start, "scores")
    units = _with_tests_passed(units, samples, expected_samples, start)
    units = _with_draws(units, samples[is_start], expected_samples, start)
    units = units.merge(items, on=["benchmark", "id"], how="left", validate="many_to_one")
    units["step"] = units["step"].astype(int)
    return units[list(UNIT_COLUMNS)].sort_values(["arm", "step", "benchmark", "id"]).reset_index(drop=True)


def _is_start(frame: pd.DataFrame, start: Start | None) -> pd.Series:
    if start is None:
        return pd.Series(False, index=frame.index)
    return (frame["arm"] == start[0]) & (frame["step"].astype(int) == int(start[1]))


def _check_counts(units: pd.DataFrame, n: int, start: Start | None, what: str) -> None:
    """Every instance has n samples, the start checkpoint's n x its draws (AnalysisInputError naming how many)."""
    is_start = _is_start(units, start)
    draws = start[2] if start else 1
    for rows, want in ((units[~is_start], n), (units[is_start], n * draws)):
        bad = rows[rows["n_samples"] != want]
        if len(bad):
            r = bad.iloc[0]
            raise AnalysisInputError(
                f"{what}: {len(bad)} instance(s) do not have {want} samples (e.g. {r['arm']} step {r['step']} "
                f"{r['benchmark']} {r['id']}: {int(r['n_samples'])})"
            )


def _with_draws(units: pd.DataFrame, start_samples: pd.DataFrame, n: int | None, start: Start | None) -> pd.DataFrame:
    """``units`` with the start checkpoint's first and second draw means (NaN without two draws)."""
    out = units.assign(score_first=float("nan"), score_second=float("nan"))
    if start is None or start[2] < 2 or not n or not len(start_samples):
        return out
    keys = ["arm", "step", "benchmark", "id"]
    draw = start_samples["sample_idx"].astype(int) // n
    means = start_samples.assign(draw=draw)[draw < 2].groupby([*keys, "draw"])["score"].mean().unstack("draw")
    means = means.rename(columns={0: "score_first", 1: "score_second"}).reset_index()
    out = out.drop(columns=["score_first", "score_second"]).merge(means, on=keys, how="left", validate="one_to_one")
    return out


def _with_tests_passed(
    units: pd.DataFrame, samples: pd.DataFrame, expected_samples: int | None, start: Start | None
) -> pd.DataFrame:
    """``units`` with each code instance's mean fraction of tests passed and its variance (``tests_passed``,
    ``tests_passed_var``; NaN for other families and for code scored before the fraction was recorded)."""
    keys = ["arm", "step", "benchmark", "id"]
    scored = samples[samples[TESTS_PASSED].notna()] if TESTS_PASSED in samples.columns else samples.iloc[:0]
    if not len(scored):
        return units.assign(tests_passed=float("nan"), tests_passed_var=float("nan"))
    try:
        fractions = instance_means(scored.astype({TESTS_PASSED: float}), keys=keys, score=TESTS_PASSED, carry=())
    except ValueError as err:
        raise AnalysisInputError(f"scores ({TESTS_PASSED}): {err}") from err
    if expected_samples is not None:  # every sample of a code instance carries its fraction
        _check_counts(fractions, expected_samples, start, f"scores ({TESTS_PASSED})")
    fractions = fractions[[*keys, TESTS_PASSED, f"{TESTS_PASSED}_var"]]
    return units.merge(fractions, on=keys, how="left", validate="one_to_one")


def load_clocks(metrics_files: Iterable[Path | str]) -> dict[str, dict[str, Any]]:
    """The training clocks of ``results/train/{arm}/metrics.jsonl`` files (arm = folder), each file read once:
    ``hours`` arm -> {continued step: training-clock hours}, ``samples`` arm -> {step: generated samples, thousands},
    ``startup`` arm -> hours of start-ups kept apart, ``step_size`` arm -> {step: lr, adv_rms, grad_norm},
    ``refill`` arm -> how dynamic sampling refilled its steps (brorl.analysis.checkpoints)."""
    from ..training.metrics import MetricsError, read_metrics

    clocks = {
        "hours": hours_by_step,
        "samples": samples_by_step,
        "startup": startup_hours,
        "step_size": step_sizes,
        "refill": refill_mode,
    }
    out: dict[str, dict[str, Any]] = {name: {} for name in clocks}
    for path in metrics_files:
        path = Path(path)
        try:
            records = read_metrics(path)
            for name, clock in clocks.items():
                out[name][path.parent.name] = clock(records)
        except (MetricsError, ValueError, KeyError) as err:
            raise AnalysisInputError(f"{path}: {err}") from err
    return out


def hours_table(hours: Mapping[str, Mapping[int, float]], base_arm: str, start_step: int) -> pd.DataFrame:
    """Long table arm, step, hours (the start checkpoint at 0 h)."""
    rows = [(base_arm, start_step, 0.0)] + [(a, s, h) for a, by in hours.items() for s, h in sorted(by.items())]
    return pd.DataFrame(rows, columns=["arm", "step", "hours"])
