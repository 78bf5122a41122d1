"""SUMMARY.md's Section 4.2 tables: Table 1 and Tables 3-5 beside the paper's cells, with how many agree within the
noise of a rerun (brorl.stats.agreement) and which code score the paper reports."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..stats.agreement import ABOVE, AGREES, BELOW, NOT_IN_INTERVAL
from .paper import FAMILY_LABELS, NOT_RUN
from .paper_tables import RG_CATEGORY, RG_TASK
from .paper_tables import as_number as _num
from .summary_text import cell as _cell


def _with_se(row: Mapping, column: str) -> str:
    """``62.10 ± 0.80 (n 30 x 16)`` of a reproduced cell with its error columns; the marker of one not run."""
    if _num(row[column]) is None or f"{column} se" not in row:
        return _cell(row[column])
    se = _num(row[f"{column} se"])
    return f"{_cell(row[column])} ± {'n/a' if se is None else _cell(se)} (n {row.get(f'{column} n', '?')})"


def table1_lines(table1: pd.DataFrame, clock: str | None = None) -> list[str]:
    """Table 1 beside the paper's cells; `clock`: which clock its time column is (brorl.analysis.checkpoints)."""
    lines = [
        "### Table 1 (family pass@1, %)",
        "",
        "Reasoning Gym twice: the mean over its 11 categories beside the same mean of the paper's Table 5 "
        "columns, and the mean over tasks beside the paper's printed average (rule unpublished). Reproduced "
        "values: pass@1 ± its standard error over problems, n = problems x samples (docs/design.md#error-bars).",
        "",
        "| row | arm | steps | time h (paper) | Math (paper, diff) | Code (paper, diff) | RG category mean (paper "
        "columns, diff) | RG task mean (paper printed, diff) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table1.to_dict("records"):
        cells = [
            f"{_with_se(r, c)} ({_cell(r[c + ', paper'])}, {_cell(r[c + ' diff'], sign='+')})"
            for c in ("Math", "Code", RG_CATEGORY, RG_TASK)
        ]
        time = f"{_cell(r['time (h)'], 3)} ({_cell(r['time (h), paper'], 1)})"
        lines.append(f"| {r['method']} | {r['arm']} | {r['continued steps']} | {time} | " + " | ".join(cells) + " |")
    if clock:
        lines += ["", f"time h: {clock}."]
    return lines + [""]


def benchmark_lines(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    lines = ["### Tables 3-5 (per benchmark)", ""]
    for fam, t in tables.items():
        given = t[t["pass@1, paper"].map(lambda x: _num(x) is not None)]
        both = given[given["pass@1"].map(lambda x: _num(x) is not None)]
        diffs = both["diff"].map(_num).dropna()
        if len(diffs):
            text = f"mean |diff| {diffs.abs().mean():.2f} points, largest {diffs.abs().max():.2f}"
        elif len(both):
            text = "no differences computed: a tiny run is not comparable with the paper"
        else:
            text = "none of them was reproduced in this configuration"
        lines.append(
            f"- {FAMILY_LABELS[fam]}: the paper gives {len(given)} cells; {len(both)} have a reproduced "
            f"value here ({text}); {int((t['pass@1'] == NOT_RUN).sum())} rows are not run."
        )
        lines += _verdicts(both)
        if fam == "code":
            lines += _code_scoring(both)
    return lines + [""]


def _code_scoring(both: pd.DataFrame) -> list[str]:
    """Which code score reproduces the paper's Baseline row (the start checkpoint, the same weights): all tests
    passing (pass@1) or the fraction of tests passed; the paper does not say which it reports."""
    base = both[both["continued steps"] == "+0"] if "tests passed vs paper" in both else both.iloc[:0]
    judged = base[base["vs paper"].isin([AGREES, ABOVE, BELOW])]
    if not len(judged):
        return ["  - which code score the paper reports: not measured here (no Baseline code cell was reproduced)."]
    all_pass = int((judged["vs paper"] == AGREES).sum())
    fraction = int(judged["tests passed vs paper"].str.endswith(f": {AGREES}").sum())
    n = len(judged)
    reading = (
        "all tests passing"
        if all_pass > fraction
        else "the fraction of tests passed"
        if fraction > all_pass
        else "neither more than the other"
    )
    return [
        f"  - which code score the paper reports: against its Baseline row, all tests passing agrees on {all_pass} "
        f"of {n} benchmarks and the fraction of tests passed on {fraction} of {n}: {reading}."
    ]


def _verdicts(both: pd.DataFrame) -> list[str]:
    """How many reproduced cells agree with the paper's within the noise of a rerun on the same problems, and which
    do not (brorl.stats.agreement); nothing where no difference was computed."""
    if "vs paper" not in both or not len(both):
        return []
    judged = both[both["vs paper"].isin([AGREES, ABOVE, BELOW])]
    if not len(judged):
        return []
    counts = judged["vs paper"].value_counts()
    off = [
        f"{r['benchmark']} {r['method']} {r['continued steps']}: {_pts_cell(r['diff'])} ± "
        f"{_pts_cell(r['diff se'], sign='')} points, {r['vs paper']}"
        for r in judged[judged["vs paper"] != AGREES].to_dict("records")
    ]
    return [
        f"  - against the paper, within 2 rerun se (or 1 point): {int(counts.get(AGREES, 0))} agree, "
        f"{int(counts.get(ABOVE, 0))} above, {int(counts.get(BELOW, 0))} below"
        + (f" ({'; '.join(off)})" if off else "")
        + f"; {NOT_IN_INTERVAL}."
    ]


def _pts_cell(x: object, sign: str = "+") -> str:
    v = _num(x)
    return "n/a" if v is None else f"{v:{sign}.2f}"
