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

import pandas as pd
import pyarrow.parquet as pq

from ..benchmarks.records import read_records
from ..stats.units import instance_means
from .checkpoints import hours_by_step

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
)
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
    scores_files: Iterable[Path | str], benchmark_files: Iterable[Path | str], expected_samples: int | None = None
) -> pd.DataFrame:
    """Per-instance units of every (arm, step, benchmark) scores file: ``UNIT_COLUMNS``, score = mean over samples.

    Every scored id must be an item of its benchmark's records file (else AnalysisInputError naming the file);
    with ``expected_samples`` every instance must have exactly that many samples.
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
    try:
        units = instance_means(
            samples, keys=("arm", "step", "benchmark", "id"), expected_samples=expected_samples, carry=()
        )
    except ValueError as err:
        raise AnalysisInputError(f"scores: {err}") from err
    units = _with_tests_passed(units, samples, expected_samples)
    units = units.merge(items, on=["benchmark", "id"], how="left", validate="many_to_one")
    units["step"] = units["step"].astype(int)
    return units[list(UNIT_COLUMNS)].sort_values(["arm", "step", "benchmark", "id"]).reset_index(drop=True)


def _with_tests_passed(units: pd.DataFrame, samples: pd.DataFrame, expected_samples: int | None) -> pd.DataFrame:
    """``units`` with each code instance's mean fraction of tests passed and its variance (``tests_passed``,
    ``tests_passed_var``; NaN for other families and for code scored before the fraction was recorded)."""
    keys = ["arm", "step", "benchmark", "id"]
    scored = samples[samples[TESTS_PASSED].notna()] if TESTS_PASSED in samples.columns else samples.iloc[:0]
    if not len(scored):
        return units.assign(tests_passed=float("nan"), tests_passed_var=float("nan"))
    try:
        fractions = instance_means(
            scored.astype({TESTS_PASSED: float}),
            keys=keys,
            score=TESTS_PASSED,
            expected_samples=expected_samples,
            carry=(),
        )
    except ValueError as err:
        raise AnalysisInputError(f"scores ({TESTS_PASSED}): {err}") from err
    fractions = fractions[[*keys, TESTS_PASSED, f"{TESTS_PASSED}_var"]]
    return units.merge(fractions, on=keys, how="left", validate="one_to_one")


def load_hours(metrics_files: Iterable[Path | str], per_step=hours_by_step) -> dict[str, dict[int, float]]:
    """arm -> {continued step: training hours} from ``results/train/{arm}/metrics.jsonl`` files (arm = folder);
    ``per_step=samples_by_step`` gives the generated samples (thousands) instead."""
    from ..training.metrics import MetricsError, read_metrics

    out: dict[str, dict[int, float]] = {}
    for path in metrics_files:
        path = Path(path)
        try:
            out[path.parent.name] = per_step(read_metrics(path))
        except (MetricsError, ValueError, KeyError) as err:
            raise AnalysisInputError(f"{path}: {err}") from err
    return out


def hours_table(hours: Mapping[str, Mapping[int, float]], base_arm: str, start_step: int) -> pd.DataFrame:
    """Long table arm, step, hours (the start checkpoint at 0 h)."""
    rows = [(base_arm, start_step, 0.0)] + [(a, s, h) for a, by in hours.items() for s, h in sorted(by.items())]
    return pd.DataFrame(rows, columns=["arm", "step", "hours"])
