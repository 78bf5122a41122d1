"""SUMMARY.md's section on the checkpoints of evaluation.models (a released model, one's own): each against the start
checkpoint by the paired test, how many steps it was trained for as far as its model card says (`make pin` records
the sentence), and, for one that names a paper row, its gain over the start beside that row's gain over the paper's
Baseline: the released weights' step count is not the row's, so their gains are compared, not their levels."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .paper import NOT_RUN, checkpoint_key, load_paper
from .paper_tables import RG_TASK, gains_over_start

# an evaluation-only run without the start checkpoint (`make evaluate` without BASE=1): nothing to compare with
START_LEFT_OUT = (
    "{names}: no change against the start checkpoint is shown, because this run does not evaluate it "
    "(`evaluation.steps.include_start: false`, what `make evaluate` sets unless `BASE=1`). The pass@1 of each family "
    "is in Table 1 and of each benchmark in Tables 3-5; `make evaluate ... BASE=1` adds the start checkpoint and this "
    "paired test."
)
# Table 1 column -> the paper's Table 1 field it is compared with (Reasoning Gym: the paper's printed average)
GAIN_COLUMNS = {"Math": "math", "Code": "code", RG_TASK: "reasoning_gym"}


def paper_gain(paper_row: str) -> tuple[str, dict[str, float]]:
    """(the row's name, its points over the paper's Baseline per GAIN_COLUMNS column)."""
    rows = {checkpoint_key(r["role"], r["continued_steps"]): r for r in load_paper()["table1"]}
    row, base = rows[paper_row], rows[checkpoint_key("base", 0)]
    name = f"{row['method']} N={row['n']} +{row['continued_steps']}"
    return name, {c: row[f] - base[f] for c, f in GAIN_COLUMNS.items()}


def _points(gain: Mapping[str, float]) -> str:
    return ", ".join(f"{c} {v:+.2f}" for c, v in gain.items())


def model_lines(spec: Mapping, table1: pd.DataFrame, compared: list[str]) -> list[str]:
    """The section's lines: `compared` (summary._versus_start of significance.json's models, or nothing when the
    start is not evaluated), then per model its steps note and, with a paper row, the gains side by side."""
    models = spec.get("models") or []
    if not spec["evaluation"].get("include_start", True):
        return [START_LEFT_OUT.format(names=", ".join(f"`{m['name']}`" for m in models))] + [
            f"- `{m['name']}`: {m.get('steps_note') or 'steps: not known'}." for m in models
        ]
    lines = list(compared)
    for m in models:
        line = f"- `{m['name']}`: {m.get('steps_note') or 'steps: not known'}."
        if m.get("paper_row"):
            name, theirs = paper_gain(m["paper_row"])
            ours = gains_over_start(table1, m["name"], GAIN_COLUMNS)[1]
            line += (
                f" Its gain over the start here: {_points(ours) if ours else NOT_RUN}; the paper's {name} over its "
                f"Baseline: {_points(theirs)} (gains compared, not levels: the released weights are not known to be "
                "that row's step)."
            )
        lines.append(line)
    return lines
