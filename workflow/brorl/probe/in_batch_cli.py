"""Commands of the in-batch probe (brorl.probe.in_batch): ``python -m brorl.probe {in-batch-prompts,in-batch}``.

in-batch-prompts  a probed step's own prompts, as records of the train mix, from the run folder's step record
in-batch          per arm and step the before/after pass rates, the shares that fell, the test between arms
Generation and scoring between them are the evaluation stage's commands (workflow/rules/probe.smk).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .select import ProbeError

# results/probe/in_batch/<arm>/step<k>.<side>.scores.parquet; the step's prompts and rollouts lie beside it
SCORE_PATH = re.compile(r"(?P<arm>[^/]+)/step(?P<step>\d+)\.(?P<side>before|after)\.scores\.parquet$")


def _cmd_prompts(a: argparse.Namespace) -> None:
    from ..benchmarks.records import read_records
    from ..training.step_prompts import mixed, read_steps
    from .in_batch import choose_prompts

    steps = read_steps(a.step_prompts)
    if a.step not in steps:
        raise ProbeError(
            f"{a.step_prompts}: no record of step {a.step} (recorded: {sorted(steps)[:5]}...): the step's prompts "
            "are unknown, so its in-batch probe cannot be drawn"
        )
    chosen = choose_prompts(steps[a.step], a.prompts)
    mix = {str(r["id"]): r for r in read_records(a.train_data)}
    unknown = [p["id"] for p in chosen if p["id"] not in mix]
    if unknown:
        raise ProbeError(f"{a.train_data}: step {a.step}'s prompts {unknown[:5]} are not in the train mix")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(json.dumps(mix[p["id"]], sort_keys=True) + "\n" for p in chosen), encoding="utf-8")
    pd.DataFrame(chosen, columns=["id", "samples", "correct"]).to_csv(a.out_rollouts, index=False)
    updated = sum(map(mixed, chosen))
    print(
        f"step {a.step}: {len(chosen)} of its {len(steps[a.step])} prompts ({updated} updated: neither all right nor "
        f"all wrong at the step) -> {a.out}"
    )


def _cmd_analyse(a: argparse.Namespace) -> None:
    from ..reporting.figure_points import report_points
    from ..reporting.tables import write_table
    from .figure import plot_in_batch
    from .in_batch import ROW_COLUMNS, between_arms

    sides = _score_sides(a.scores)
    rng = np.random.default_rng(a.seed)
    labels = json.loads(a.labels)
    rows, rates = _step_rows(a, sides, list(labels), rng)  # the config's order of the arms, then any other by name
    if not rows:
        raise ProbeError("no in-batch score files given")
    table = pd.DataFrame(rows, columns=ROW_COLUMNS)
    a.out_rates.parent.mkdir(parents=True, exist_ok=True)
    pd.concat(rates, ignore_index=True)[["arm", "step", "side", "id", "correct", "samples", "pass_rate"]].to_csv(
        a.out_rates, index=False
    )
    write_table(
        _printed_steps(table, labels),
        a.out_md,
        a.out_csv,
        title=f"In-batch probe: each probed step's own prompts sampled just before and just after its update (fell: "
        f"beyond {a.z:g} SE; updated: neither all right nor all wrong at the step)",
        csv_frame=table,
    )
    arms = between_arms(table, a.control, a.treatment)
    write_table(
        arms,
        a.out_arms_md,
        a.out_arms_csv,
        title=f"In-batch probe between arms: do {labels.get(a.control, a.control)}'s updated prompts fall more often "
        f"than {labels.get(a.treatment, a.treatment)}'s? (Fisher's exact test, one-tailed)",
    )
    for row in table.itertuples():
        print(
            f"{row.arm} step {row.step}: {row.prompts} prompts, mean {100 * row.before:.1f} -> {100 * row.after:.1f}; "
            f"{row.fell_updated} of {row.updated} updated fell (p {row.p_fell:.3g})"
        )
    points = plot_in_batch(pd.concat(rates, ignore_index=True), table, labels, a.z, a.engine, a.png, a.pdf)
    if not report_points("probe_in_batch", points, a.png):
        raise ProbeError(f"{a.png}: the figure drew no data")


def _score_sides(scores: list[Path]) -> dict[tuple[str, int], dict[str, Path]]:
    """The given score files by (arm, step), then side ("before" / "after"); ProbeError for a foreign file name."""
    sides: dict[tuple[str, int], dict[str, Path]] = {}
    for path in scores:
        m = SCORE_PATH.search(path.as_posix())
        if not m:
            raise ProbeError(f"{path}: not an in-batch score file (<arm>/step<k>.<before|after>.scores.parquet)")
        sides.setdefault((m["arm"], int(m["step"])), {})[m["side"]] = path
    return sides


def _step_rows(
    a: argparse.Namespace, sides: dict[tuple[str, int], dict[str, Path]], order: list[str], rng: np.random.Generator
) -> tuple[list[dict], list[pd.DataFrame]]:
    """Each (arm, step)'s row (arms in ``order``, then by name) and its prompts' pass rates on both sides."""
    from ..benchmarks.records import read_records
    from ..evaluation.score import read_table
    from .in_batch import step_row
    from .rates import pass_rates

    rows, rates = [], []
    for (arm, step), files in sorted(sides.items(), key=lambda kv: (_rank(kv[0][0], order), kv[0])):
        if set(files) != {"before", "after"}:
            raise ProbeError(f"{arm} step {step}: only its {', '.join(files)} samples were given")
        folder = files["before"].parent
        ids = [str(r["id"]) for r in read_records(folder / f"step{step}.prompts.jsonl")]
        drawn = pd.read_csv(folder / f"step{step}.rollouts.csv", dtype={"id": str})
        frames = {}
        for side, path in files.items():
            scores = read_table(path, ("id", "sample_idx", "correct"), "in-batch probe scores")
            frames[side] = pass_rates(scores, ids, a.samples, str(path))
            rates.append(frames[side].assign(arm=arm, step=step, side=side))
        rows.append(step_row(arm, step, drawn, frames["before"], frames["after"], a.z, rng))
    return rows, rates


def _printed_steps(table: pd.DataFrame, labels: dict) -> pd.DataFrame:
    """The step rows as printed in the Markdown table: labelled arms, percentages, changes with their SE."""
    from ..reporting.tables import plus_minus

    pct = lambda x: "" if x != x else f"{100 * x:.1f}%"  # noqa: E731
    return pd.DataFrame(
        {
            "arm": [labels.get(x, x) for x in table["arm"]],
            "step": table["step"],
            "prompts (updated) x samples": [
                f"{p} ({u}) x {n}" for p, u, n in zip(table["prompts"], table["updated"], table["samples"])
            ],
            "pass rate at the step's rollouts": table["step_pass_rate"].map(pct),
            "before -> after (%)": [f"{100 * b:.1f} -> {100 * x:.1f}" for b, x in zip(table["before"], table["after"])],
            "change (points)": [plus_minus(c, s, scale=100) for c, s in zip(table["change"], table["change_se"])],
            "updated prompts that fell": [
                f"{f} of {u} ({pct(s)})"
                for f, u, s in zip(table["fell_updated"], table["updated"], table["fell_share_updated"])
            ],
            "no change: 95% point": table["null_q95"].map(pct),
            "p (no change)": table["p_fell"].map(lambda p: "" if p != p else f"{p:.3f}"),
        }
    )


def _rank(arm: str, order: list[str]) -> int:
    """Where an arm is shown: its place among the labelled arms, after them when unlabelled."""
    return order.index(arm) if arm in order else len(order)


def add_arm_arguments(s: argparse.ArgumentParser) -> None:
    """The noise threshold, the scale and the arms' labels and comparison: both probes' analyses take them."""
    s.add_argument("--z", type=float, default=2.0, help="standard errors a change must exceed to count")
    s.add_argument("--engine", required=True, help="config engine (the figure names the scale)")
    s.add_argument("--labels", default="{}", help="JSON: arm -> label, in the order the arms are shown")
    s.add_argument("--control", required=True, help="analysis.comparison.control")
    s.add_argument("--treatment", required=True, help="analysis.comparison.treatment")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The two commands, on the probe's command line (brorl.probe.cli)."""
    s = sub.add_parser("in-batch-prompts", help="a probed step's own prompts from the run folder's step record")
    s.add_argument("--step-prompts", required=True, type=Path, help="<run>/step_prompts.jsonl")
    s.add_argument("--train-data", required=True, type=Path, help="the train mix the run drew from")
    s.add_argument("--step", required=True, type=int, help="the continued step")
    s.add_argument("--prompts", required=True, type=int, help="at most this many (the updated ones first)")
    s.add_argument("--out", required=True, type=Path, help="the prompts as records (JSONL)")
    s.add_argument("--out-rollouts", required=True, type=Path, help="their samples and correct ones at the step (CSV)")
    s.set_defaults(func=_cmd_prompts)
    s = sub.add_parser("in-batch", help="before/after pass rates of each probed step's prompts: tables and figure")
    s.add_argument("--scores", required=True, nargs="+", type=Path, help="<arm>/step<k>.<before|after>.scores.parquet")
    s.add_argument("--samples", required=True, type=int, help="samples per prompt and side")
    add_arm_arguments(s)
    s.add_argument("--seed", type=int, default=0, help="seed of the no-change null")
    for name in ("out-rates", "out-md", "out-csv", "out-arms-md", "out-arms-csv", "png", "pdf"):
        s.add_argument(f"--{name}", required=True, type=Path)
    s.set_defaults(func=_cmd_analyse)
