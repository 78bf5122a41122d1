"""Command line of the mass-balance probe: ``python -m brorl.probe {select,analyse,in-batch-prompts,in-batch}``.

Generation and scoring are the evaluation stage's own commands (``brorl.generation generate``, ``brorl.evaluation
score``) at the probe's settings; these commands choose the probe set and turn the scores into the table and figure.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..cli import run_command
from .in_batch_cli import add_arm_arguments
from .in_batch_cli import add_parsers as add_in_batch_parsers
from .select import ProbeError

SCORE_PATH = re.compile(r"(?P<arm>[^/]+)/step(?P<step>\d+)\.scores\.parquet$")
BASE_ARM = "base"  # the start checkpoint's arm name (workflow/rules/common.smk)


def _cmd_select(a: argparse.Namespace) -> None:
    from ..benchmarks.records import read_records
    from ..evaluation.score import read_table
    from .select import select_by_start_rate, select_probes

    records = read_records(a.benchmark)
    if a.start_scores is None:
        probes = select_probes(records, a.problems, str(a.benchmark))
        how = "the first distinct problems"
    else:
        scores = read_table(a.start_scores, ("id", "correct"), "start scores")
        rates = scores.assign(id=scores["id"].astype(str)).groupby("id")["correct"].mean().to_dict()
        probes = select_by_start_rate(records, rates, a.problems, tuple(a.band), str(a.benchmark))
        qualified = sum(a.band[0] <= v <= a.band[1] for v in rates.values())
        how = f"the first distinct problems with a start pass rate in {a.band[0]:g}-{a.band[1]:g} ({qualified} qualify)"
        unscored = sum(str(r["id"]) not in rates for r in records)
        if unscored:
            print(f"note: {unscored} problems of {a.benchmark} were not scored at the start (evaluation.max_items)")
        if len(probes) < a.problems:
            print(f"note: {len(probes)} of the {a.problems} probes asked for qualify; the probe uses them all")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in probes), encoding="utf-8")
    print(f"{len(probes)} probes, {how} of {a.benchmark} -> {a.out}")


def _point(path: Path, start_step: int) -> tuple[str, int]:
    """(arm, continued step) of a score file results/probe/<arm>/step<k>.scores.parquet; the start is step 0."""
    m = SCORE_PATH.search(path.as_posix())
    if not m:
        raise ProbeError(f"{path}: not a probe score file (<arm>/step<k>.scores.parquet)")
    arm, step = m["arm"], int(m["step"])
    if arm == BASE_ARM:
        if step != start_step:
            raise ProbeError(f"{path}: the start checkpoint is step {start_step}, not {step}")
        return arm, 0
    return arm, step


def _cmd_analyse(a: argparse.Namespace) -> None:
    from ..reporting.figure_points import report_points
    from ..reporting.tables import write_table
    from .figure import plot_probe, plot_probe_arms
    from .rates import RATE_COLUMNS, change_labels

    ids, frames = _read_frames(a)
    labels = json.loads(a.labels)
    trained = {arm for arm, _ in frames} - {BASE_ARM}
    arms = [arm for arm in labels if arm in trained] + sorted(trained - set(labels))  # the config's order first
    if not arms:
        raise ProbeError("no trained arm's probe scores: nothing to follow")
    start = frames[BASE_ARM, 0]
    steps = {arm: sorted(s for name, s in frames if name == arm and s > 0) for arm in arms}  # its saved steps
    trajectory = _trajectory(a, frames, start, arms, steps)
    rates = pd.concat([f.assign(arm=arm, step=step) for (arm, step), f in sorted(frames.items())], ignore_index=True)
    a.out_rates.parent.mkdir(parents=True, exist_ok=True)
    rates[RATE_COLUMNS].to_csv(a.out_rates, index=False)

    printed = _printed_trajectory(trajectory, labels)
    q05 = 100 * trajectory["worst_drop_null_q05"].iloc[0]
    write_table(
        printed,
        a.out_md,
        a.out_csv,
        title=f"Mass-balance probe: each probe's pass rate at the rollout temperature (fell / rose: beyond {a.z:g} SE; "
        f"with no change at all the worst drop of one probe is {q05:+.1f} points or lower in 5% of redraws)",
        csv_frame=trajectory,
    )
    _between_arms(a, frames, start, labels)
    points = plot_probe(trajectory, labels, a.z, a.engine, a.png, a.pdf)
    per_probe = pd.concat([rates[rates["arm"] != BASE_ARM], *[start.assign(arm=arm, step=0) for arm in arms]])
    changes = {arm: change_labels(start, frames[arm, steps[arm][-1]], a.z) for arm in arms}
    arm_points = plot_probe_arms(per_probe, changes, labels, a.engine, a.arms_png, a.arms_pdf)
    for name, drawn, png in (("probe", points, a.png), ("probe_arms", arm_points, a.arms_png)):
        if not report_points(name, drawn, png):
            raise ProbeError(f"{png}: the figure drew no data")
    print(f"{len(frames)} checkpoints x {len(ids)} probes -> {a.out_md}, {a.out_rates}")


def _read_frames(a: argparse.Namespace) -> tuple[list, dict[tuple[str, int], pd.DataFrame]]:
    """The probe ids and each checkpoint's (arm, step) pass rates; ProbeError when the start's scores are missing."""
    from ..benchmarks.records import read_records
    from ..evaluation.score import read_table
    from .rates import pass_rates

    ids = [r["id"] for r in read_records(a.probes)]
    frames: dict[tuple[str, int], pd.DataFrame] = {}
    for path in a.scores:
        arm, step = _point(path, a.start_step)
        scores = read_table(path, ("id", "sample_idx", "correct"), "probe scores")
        frames[arm, step] = pass_rates(scores, ids, a.samples, str(path))
    if (BASE_ARM, 0) not in frames:
        raise ProbeError("no score file of the start checkpoint (results/probe/base/step<start>.scores.parquet)")
    return ids, frames


def _trajectory(
    a: argparse.Namespace, frames: dict, start: pd.DataFrame, arms: list[str], steps: dict[str, list[int]]
) -> pd.DataFrame:
    """Each arm's checkpoints against the start, with the worst drop judged against the no-change null."""
    from .compare import NULL_REPLICATES, worst_drop_null, worst_drop_p
    from .rates import arm_trajectory

    trajectory = pd.concat(
        [arm_trajectory(start, [(s, frames[arm, s]) for s in steps[arm]], arm, a.z) for arm in arms],
        ignore_index=True,
    )
    # the worst drop against chance: the same null for every checkpoint (it depends on the start only)
    null = worst_drop_null(start, NULL_REPLICATES, np.random.default_rng(a.seed))
    trajectory["worst_drop_null_q05"] = float(np.quantile(null, 0.05))
    trajectory["worst_drop_p"] = [worst_drop_p(w, null) for w in trajectory["worst_drop"]]
    return trajectory


def _printed_trajectory(trajectory: pd.DataFrame, labels: dict) -> pd.DataFrame:
    """The trajectory as printed in the Markdown table: labelled arms, percentages, worst drops with their probe."""
    from ..reporting.tables import plus_minus

    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    return pd.DataFrame(
        {
            "arm": [labels.get(x, x) for x in trajectory["arm"]],
            "step": trajectory["step"],
            "probes x samples": [f"{p} x {n}" for p, n in zip(trajectory["probes"], trajectory["samples"])],
            "mean pass rate (%)": [
                plus_minus(m, s, scale=100) for m, s in zip(trajectory["mean_pass_rate"], trajectory["mean_se"])
            ],
            "fell since previous": trajectory["fell_since_previous"].map(pct),
            "fell since start": trajectory["fell_since_start"].map(pct),
            "rose since start": trajectory["rose_since_start"].map(pct),
            "worst drop (points)": [
                f"{100 * d:+.1f} ({i})" for d, i in zip(trajectory["worst_drop"], trajectory["worst_drop_id"])
            ],
            "worst drop's p (no change)": trajectory["worst_drop_p"].map(lambda p: f"{p:.3f}"),
        }
    )


def _between_arms(a: argparse.Namespace, frames: dict, start: pd.DataFrame, labels: dict) -> None:
    """The treatment against the control, paired by probe, at equal compute and equal steps (brorl.probe.compare)."""
    from ..analysis.load import load_clocks
    from ..reporting.tables import write_table
    from .compare import between_arms

    hours = load_clocks(a.metrics)["hours"]
    table = between_arms(frames, start, a.control, a.treatment, hours, a.target_hours, a.z, a.resamples, a.seed)
    title = (
        f"Probe between arms: {labels.get(a.treatment, a.treatment)} against {labels.get(a.control, a.control)}, "
        "paired by probe (pass rate: one-tailed t over probes; fell since the start in one arm only: exact binomial)"
    )
    write_table(table, a.out_arms_md, a.out_arms_csv, title=title)
    for row in table.itertuples():
        if row.probes == row.probes:
            print(
                f"{row.basis}: delta {100 * row.delta:+.1f} points (p {row.p:.3g}); fell only in the control "
                f"{row.fell_only_control}, only in the treatment {row.fell_only_treatment} (p {row.p_fell:.3g})"
            )
        else:
            print(f"{row.basis}: {row.note}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m brorl.probe", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("select", help="the probe set: the first K distinct problems of a prepared benchmark")
    s.add_argument("--benchmark", required=True, type=Path, help="prepared records (JSONL)")
    s.add_argument("--problems", required=True, type=int, help="K")
    s.add_argument("--start-scores", type=Path, default=None, help="the start checkpoint's evaluation scores")
    s.add_argument("--band", type=float, nargs=2, default=(0.2, 0.8), help="start pass rates to keep (with scores)")
    s.add_argument("--out", required=True, type=Path)
    s.set_defaults(func=_cmd_select)
    s = sub.add_parser("analyse", help="pass rates, shares that fell and rose, worst drop: table and figure")
    s.add_argument("--probes", required=True, type=Path, help="the probe set (select's output)")
    s.add_argument("--scores", required=True, nargs="+", type=Path, help="results/probe/<arm>/step<k>.scores.parquet")
    s.add_argument("--samples", required=True, type=int, help="samples per probe")
    s.add_argument("--start-step", required=True, type=int, help="base_model.start_step (the start's file name)")
    add_arm_arguments(s)
    s.add_argument("--metrics", nargs="*", default=[], type=Path, help="the two arms' metrics.jsonl (hours)")
    s.add_argument("--target-hours", type=float, default=None, help="analysis.equal_time_hours (none: final steps)")
    s.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples over probes")
    s.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the worst drop's null")
    for name in ("out-rates", "out-md", "out-csv", "png", "pdf", "arms-png", "arms-pdf", "out-arms-md", "out-arms-csv"):
        s.add_argument(f"--{name}", required=True, type=Path)
    s.set_defaults(func=_cmd_analyse)
    add_in_batch_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> None:
    from ..analysis.load import AnalysisInputError
    from ..benchmarks.records import RecordError
    from ..evaluation.score import EvaluationError
    from ..training.step_prompts import StepPromptsError

    errors = (ProbeError, RecordError, EvaluationError, AnalysisInputError, StepPromptsError)
    run_command(build_parser().parse_args(argv), errors, hard_exit=True)
