"""Command line of the mass-balance probe: ``python -m brorl.probe {select,analyse}``.

Generation and scoring are the evaluation stage's own commands (``brorl.generation generate``, ``brorl.evaluation
score``) at the probe's settings; these commands choose the probe set and turn the scores into the table and figure.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

from ..cli import run_command
from .select import ProbeError

SCORE_PATH = re.compile(r"(?P<arm>[^/]+)/step(?P<step>\d+)\.scores\.parquet$")
BASE_ARM = "base"  # the start checkpoint's arm name (workflow/rules/common.smk)


def _cmd_select(a: argparse.Namespace) -> None:
    from ..benchmarks.records import read_records
    from .select import select_probes

    probes = select_probes(read_records(a.benchmark), a.problems, str(a.benchmark))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in probes), encoding="utf-8")
    print(f"{len(probes)} probes, the first distinct problems of {a.benchmark} -> {a.out}")


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
    from ..benchmarks.records import read_records
    from ..evaluation.score import read_table
    from ..figure_points import report_points
    from ..tables import plus_minus, write_table
    from .figure import plot_probe, plot_probe_arms
    from .rates import RATE_COLUMNS, arm_trajectory, change_labels, pass_rates

    ids = [r["id"] for r in read_records(a.probes)]
    frames: dict[tuple[str, int], pd.DataFrame] = {}
    for path in a.scores:
        arm, step = _point(path, a.start_step)
        scores = read_table(path, ("id", "sample_idx", "correct"), "probe scores")
        frames[arm, step] = pass_rates(scores, ids, a.samples, str(path))
    if (BASE_ARM, 0) not in frames:
        raise ProbeError("no score file of the start checkpoint (results/probe/base/step<start>.scores.parquet)")
    labels = json.loads(a.labels)
    trained = {arm for arm, _ in frames} - {BASE_ARM}
    arms = [arm for arm in labels if arm in trained] + sorted(trained - set(labels))  # the config's order first
    if not arms:
        raise ProbeError("no trained arm's probe scores: nothing to follow")
    start = frames[BASE_ARM, 0]
    steps = {arm: sorted(s for name, s in frames if name == arm and s > 0) for arm in arms}  # its saved steps
    trajectory = pd.concat(
        [arm_trajectory(start, [(s, frames[arm, s]) for s in steps[arm]], arm, a.z) for arm in arms],
        ignore_index=True,
    )
    rates = pd.concat([f.assign(arm=arm, step=step) for (arm, step), f in sorted(frames.items())], ignore_index=True)
    a.out_rates.parent.mkdir(parents=True, exist_ok=True)
    rates[RATE_COLUMNS].to_csv(a.out_rates, index=False)

    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    printed = pd.DataFrame(
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
        }
    )
    write_table(
        printed,
        a.out_md,
        a.out_csv,
        title=f"Mass-balance probe: each probe's pass rate at the rollout temperature (fell / rose: beyond {a.z:g} SE)",
        csv_frame=trajectory,
    )
    points = plot_probe(trajectory, labels, a.z, a.engine, a.png, a.pdf)
    per_probe = pd.concat([rates[rates["arm"] != BASE_ARM], *[start.assign(arm=arm, step=0) for arm in arms]])
    changes = {arm: change_labels(start, frames[arm, steps[arm][-1]], a.z) for arm in arms}
    arm_points = plot_probe_arms(per_probe, changes, labels, a.engine, a.arms_png, a.arms_pdf)
    for name, drawn, png in (("probe", points, a.png), ("probe_arms", arm_points, a.arms_png)):
        if not report_points(name, drawn, png):
            raise ProbeError(f"{png}: the figure drew no data")
    print(f"{len(frames)} checkpoints x {len(ids)} probes -> {a.out_md}, {a.out_rates}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m brorl.probe", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("select", help="the probe set: the first K distinct problems of a prepared benchmark")
    s.add_argument("--benchmark", required=True, type=Path, help="prepared records (JSONL)")
    s.add_argument("--problems", required=True, type=int, help="K")
    s.add_argument("--out", required=True, type=Path)
    s.set_defaults(func=_cmd_select)
    s = sub.add_parser("analyse", help="pass rates, shares that fell and rose, worst drop: table and figure")
    s.add_argument("--probes", required=True, type=Path, help="the probe set (select's output)")
    s.add_argument("--scores", required=True, nargs="+", type=Path, help="results/probe/<arm>/step<k>.scores.parquet")
    s.add_argument("--samples", required=True, type=int, help="samples per probe")
    s.add_argument("--start-step", required=True, type=int, help="base_model.start_step (the start's file name)")
    s.add_argument("--z", type=float, default=2.0, help="standard errors a change must exceed to count")
    s.add_argument("--engine", required=True, help="config engine (the figure names the scale)")
    s.add_argument("--labels", default="{}", help="JSON: arm -> label, in the order the arms are shown")
    for name in ("out-rates", "out-md", "out-csv", "png", "pdf", "arms-png", "arms-pdf"):
        s.add_argument(f"--{name}", required=True, type=Path)
    s.set_defaults(func=_cmd_analyse)
    return p


def main(argv: list[str] | None = None) -> None:
    from ..benchmarks.records import RecordError
    from ..evaluation.score import EvaluationError

    run_command(build_parser().parse_args(argv), (ProbeError, RecordError, EvaluationError), hard_exit=True)
