"""Tables 1 and 3-5 with the paper's value beside the reproduced one and their difference (pure: frames in, frames out),
and SUMMARY.md's section on the checkpoints of evaluation.models, which compares their gains with the paper's rows.

Rows are checkpoints (listed by brorl.analysis.paper.checkpoint_rows): the start checkpoint (arm base), every
report step of every enabled arm, every checkpoint of evaluation.models (e.g. a released model, beside the paper row
it names), and every checkpoint of the paper's Table 1 that this configuration has no row for (marked NOT_RUN, never
dropped). A reproduced row is paired with a paper row when its arm plays the paper row's role (analysis.comparison:
control = ProRL, treatment = BroRL) at the same continued step; other rows show NOT_GIVEN in the paper columns.
Values are pass@1 in percent.

Every reproduced pass@1 column ``X`` has ``X se`` (its standard error, points) and ``X n`` (problems x samples)
beside it when the input frames carry them (brorl.analysis.checkpoints); ``display`` writes ``62.10 ± 0.80`` and drops
the se column. The paper's values are shown as published (it gives no errors).

SUMMARY.md's section on the checkpoints of evaluation.models (a released model, one's own): each against the start
checkpoint by the paired test, how many steps it was trained for as far as its model card says (`make pin` records
the sentence), and, for one that names a paper row, its gain over the start beside that row's gain over the paper's
Baseline: the released weights' step count is not the row's, so their gains are compared, not their levels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from ..reporting.tables import plus_minus
from ..stats.agreement import NO_NOISE, agreement
from .paper import (
    BY_GAIN,
    FAMILY_LABELS,
    NOT_APPLICABLE,
    NOT_GIVEN,
    NOT_RUN,
    TINY_SCALE,
    Checkpoint,
    checkpoint_key,
    column_mean,
    load_paper,
    partial_text,
)

# Table 1's Reasoning Gym columns: the mean over the 11 categories is compared with the same mean of the paper's own
# Table 5 columns; the mean over tasks with the paper's printed "Avg." (its rule is unpublished; a mean over tasks is
# the closest published description, ProRL's "96 tasks"). The mean over items is shown without a paper value.
RG_CATEGORY = "Reasoning Gym (category mean)"
RG_TASK = "Reasoning Gym (task mean)"
RG_ITEM = "Reasoning Gym (item mean)"
SAMPLES = "samples (k)"
OURS = "ours: N x prompts"


def _is_num(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(float(x))


def as_number(x: object) -> float | None:
    """A table cell as a number, None for a marker (not run, n/a, ...) or NaN."""
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def gains_over_start(
    table1: pd.DataFrame, arm: str, columns: Sequence[str], measured: str | None = None
) -> tuple[pd.Series | None, dict[str, float]]:
    """The arm's last row of Table 1 (the last with a reproduced `measured` cell, when given) and its change from
    the start row (the table's first) in each of `columns` that both rows reproduce (points)."""
    rows = table1[table1["arm"] == arm]
    if measured is not None:
        rows = rows[rows[measured].map(lambda x: as_number(x) is not None)]
    if rows.empty:
        return None, {}
    last, base = rows.iloc[-1], table1.iloc[0]
    return last, {
        c: as_number(last[c]) - as_number(base[c])
        for c in columns
        if c in table1 and as_number(last[c]) is not None and as_number(base[c]) is not None
    }


def _value(table: pd.DataFrame, arm: str | None, step: int | None, column: str, **match) -> object:
    if arm is None or step is None:
        return NOT_RUN
    sel = (table["arm"] == arm) & (table["step"] == step)
    for k, v in match.items():
        sel &= table[k] == v
    hit = table.loc[sel, column]
    return float(hit.iloc[0]) if len(hit) else NOT_RUN


def _diff(repro: object, paper: object, withheld: str | None = None) -> object:
    """reproduced - paper; ``withheld`` (a marker saying why) in place of a difference that would compare unlike
    things (a tiny run, a partial family average)."""
    if not (_is_num(repro) and _is_num(paper)):
        return NOT_APPLICABLE
    return withheld or repro - paper


def _by_gain(cp: Checkpoint) -> bool:
    """A model whose training steps are not known, beside a trained paper row: only its gain is comparable (the
    Baseline row is the start model at 0 steps, where levels compare)."""
    return cp.model and not cp.continued and not (cp.paper_key or "").startswith("base@")


def _steps_text(cp: Checkpoint, start_step: int, paper: Mapping) -> str:
    if cp.model:
        return f"+{cp.continued} (model)" if cp.continued else "model"
    if cp.continued == 0 and cp.paper_key and cp.paper_key.startswith("base@"):
        total = next(r.get("total_steps") for r in paper["table1"] if r["role"] == "base")
        return f"start (here step {start_step}; paper {total})"
    return f"+{cp.continued}"


def _ours(cp: Checkpoint) -> str:
    """This configuration's N x prompts/step of a row (the paper's are in its paper row)."""
    if cp.model:
        return "evaluated, not trained here"
    if cp.continued == 0:
        return NOT_APPLICABLE
    return f"{cp.n:,} x {cp.prompts:,}" if cp.step is not None else NOT_RUN


def _paper_label(cp: Checkpoint, paper: Mapping) -> str:
    if cp.paper_key is None:
        return "no paper row"
    p = next(r for r in paper["table1"] if checkpoint_key(r["role"], r["continued_steps"]) == cp.paper_key)
    return f"{p['method']} N={p['n']} x {p['prompts_per_step']}, +{p['continued_steps']}"


def _triple(row: dict, label: str, repro: object, given: object, withheld: str | None = None) -> None:
    """``label``, ``label, paper`` and ``label diff`` cells of one row (``withheld``: see _diff)."""
    row[label] = repro
    row[f"{label}, paper"] = given if given is not None else NOT_GIVEN
    row[f"{label} diff"] = _diff(repro, given, withheld)


def _partial(family: pd.DataFrame, arm: str | None, step: int | None, fam: str, paper: Mapping) -> str | None:
    """The marker of a family average that lacks some of the paper's benchmarks of ``fam`` at this checkpoint."""
    names = set(paper["benchmark_tables"][fam]["benchmarks"])
    if "benchmarks" not in family.columns or arm is None or step is None:
        return None
    hit = family.loc[(family["arm"] == arm) & (family["step"] == step) & (family["family"] == fam), "benchmarks"]
    if not len(hit):
        return None
    present = names & set(str(hit.iloc[0]).split(","))
    return None if present == names else partial_text(len(present), len(names))


def _percent(x: object) -> object:
    return x * 100.0 if _is_num(x) else x


def _n_text(frame: pd.DataFrame, arm: str | None, step: int | None, items: str = "n_items", **match) -> object:
    """``problems x samples`` of one cell, or NOT_RUN."""
    problems = _value(frame, arm, step, items, **match)
    samples = _value(frame, arm, step, "n_samples", **match)
    return f"{int(problems)} x {int(samples)}" if _is_num(problems) and _is_num(samples) else NOT_RUN


def _with_error(row: dict, label: str, frame: pd.DataFrame, arm, step, se: str, items: str = "n_items", **match):
    """``label se`` (points) and ``label n`` of one reproduced cell, when ``frame`` has the error columns."""
    if se in frame.columns:
        row[f"{label} se"] = _percent(_value(frame, arm, step, se, **match))
        row[f"{label} n"] = _n_text(frame, arm, step, items, **match)


def table1(
    paper: Mapping,
    rows: Sequence[Checkpoint],
    family: pd.DataFrame,
    hours: pd.DataFrame,
    start_step: int,
    rg: pd.DataFrame | None = None,
    samples: pd.DataFrame | None = None,
    tiny: bool = False,
) -> pd.DataFrame:
    """Table 1: one row per checkpoint; generated samples, training hours and family pass@1 (%), each reproduced /
    paper / difference, with both Reasoning Gym averages (RG_CATEGORY, RG_TASK) and the item mean.

    Differences are TINY_SCALE for a tiny run (``tiny``) and the partial marker for a family average that lacks some
    of the paper's benchmarks (family's ``benchmarks`` column); the paper's values are shown either way.

    family: arm, step, family, pass1 (fraction); hours: arm, step, hours; rg: reasoning_gym_averages; samples: arm,
    step, samples_k (generated samples before filtering since the start, thousands).
    """
    paper_rows = {checkpoint_key(r["role"], r["continued_steps"]): r for r in paper["table1"]}
    rg = rg if rg is not None else pd.DataFrame(columns=["arm", "step", "category_mean", "task_mean", "item_mean"])
    samples = samples if samples is not None else pd.DataFrame(columns=["arm", "step", "samples_k"])
    out = []
    for cp in rows:
        p = paper_rows.get(cp.paper_key, {})
        row = {
            "method": cp.method,
            "arm": cp.arm or NOT_RUN,
            "paper row": _paper_label(cp, paper),
            "N": cp.n,
            "prompts/step": cp.prompts,
            OURS: _ours(cp),
            "continued steps": _steps_text(cp, start_step, paper),
        }
        _cost_cells(row, cp, p, samples, hours, tiny)
        _family_cells(row, cp, p, paper, family, rg, tiny)
        out.append(row)
    return pd.DataFrame(out)


def _cost_cells(row: dict, cp: Checkpoint, p: Mapping, samples: pd.DataFrame, hours: pd.DataFrame, tiny: bool) -> None:
    """Fills one Table 1 row's generated samples and training hours, each reproduced / paper / difference."""
    for label, frame, column, key in (
        (SAMPLES, samples, "samples_k", "samples_k"),
        ("time (h)", hours, "hours", "time_h"),
    ):
        if cp.continued == 0 or cp.model:  # the start checkpoint and models were not trained here
            row[label], row[f"{label}, paper"], row[f"{label} diff"] = (NOT_APPLICABLE,) * 3
        else:
            repro = _value(frame, cp.arm, cp.step, column) if cp.evaluated else NOT_RUN
            _triple(row, label, repro, p.get(key), TINY_SCALE if tiny else None)


def _family_cells(
    row: dict, cp: Checkpoint, p: Mapping, paper: Mapping, family: pd.DataFrame, rg: pd.DataFrame, tiny: bool
) -> None:
    """Fills one Table 1 row's pass@1 cells with their errors: Math, Code and both Reasoning Gym averages beside the
    paper's (the difference withheld where it would compare unlike things), and the item mean."""

    def withheld(fam: str, cp: Checkpoint = cp) -> str | None:
        if tiny:
            return TINY_SCALE
        return BY_GAIN if _by_gain(cp) else _partial(family, cp.arm, cp.step, fam, paper)

    for fam in ("math", "code"):
        repro = _percent(_value(family, cp.arm, cp.step, "pass1", family=fam))
        _triple(row, FAMILY_LABELS[fam], repro, p.get(fam), withheld(fam))
        _with_error(row, FAMILY_LABELS[fam], family, cp.arm, cp.step, "se", family=fam)
    category = column_mean(paper, "reasoning_gym", cp.paper_key) if cp.paper_key else None
    rg_withheld = withheld("reasoning_gym")
    _triple(row, RG_CATEGORY, _percent(_value(rg, cp.arm, cp.step, "category_mean")), category, rg_withheld)
    _with_error(row, RG_CATEGORY, rg, cp.arm, cp.step, "category_mean_se")
    repro = _percent(_value(rg, cp.arm, cp.step, "task_mean"))
    _triple(row, RG_TASK, repro, p.get("reasoning_gym"), rg_withheld)
    _with_error(row, RG_TASK, rg, cp.arm, cp.step, "task_mean_se")
    row[RG_ITEM] = _percent(_value(rg, cp.arm, cp.step, "item_mean"))
    _with_error(row, RG_ITEM, rg, cp.arm, cp.step, "item_mean_se")


def benchmark_table(
    paper: Mapping,
    family: str,
    rows: Sequence[Checkpoint],
    bench: pd.DataFrame,
    configured: Sequence[str] = (),
    tiny: bool = False,
    margin_points: float = 1.0,
) -> pd.DataFrame:
    """Table 3, 4 or 5 (``family``): one row per (benchmark, checkpoint), pass@1 (%) reproduced / paper / diff
    (TINY_SCALE in place of every difference of a tiny run), the difference's rerun standard error (``diff se``,
    brorl.stats.agreement: the sampling noise of two runs on the same problems, not the problem-level se) and the
    verdict ``vs paper``: agrees (within 2 se, or within ``margin_points``), above or below.

    bench: arm, step, family, benchmark, pass1 (fraction) and optionally se, n_items, n_samples, rerun_se. Benchmarks: the
    paper's, then those of this family that were evaluated or configured (evaluation.benchmarks, ``configured``) but
    are not in the paper's table.
    """
    cells = paper["benchmark_tables"][family]["benchmarks"]
    names = list(cells)
    extra = sorted((set(bench.loc[bench["family"] == family, "benchmark"]) | set(configured)) - set(names))
    out = []
    for name in [*names, *extra]:
        for cp in rows:
            repro = _value(bench, cp.arm, cp.step, "pass1", benchmark=name)
            repro = repro * 100.0 if _is_num(repro) else repro
            given = (cells.get(name) or {}).get(cp.paper_key) if cp.paper_key else None
            row = {
                "benchmark": name,
                "in paper": name in cells,
                "method": cp.method,
                "arm": cp.arm or NOT_RUN,
                "continued steps": f"+{cp.continued}",
                "pass@1": repro,
            }
            _with_error(row, "pass@1", bench, cp.arm, cp.step, "se", benchmark=name)
            row["pass@1, paper"] = given if given is not None else NOT_GIVEN
            row["diff"] = _diff(repro, given, TINY_SCALE if tiny else BY_GAIN if _by_gain(cp) else None)
            noise = (
                _percent(_value(bench, cp.arm, cp.step, "rerun_se", benchmark=name)) if "rerun_se" in bench else None
            )
            row["diff se"] = noise if _is_num(row["diff"]) else NOT_APPLICABLE
            row["vs paper"] = _verdict(row["diff"], row["diff se"], margin_points)
            if family == "code":
                _tests_passed(row, bench, cp, name, given, tiny, margin_points)
            out.append(row)
    return pd.DataFrame(out)


def _tests_passed(row: dict, bench: pd.DataFrame, cp: Checkpoint, name: str, given, tiny: bool, margin: float) -> None:
    """Table 4's second score: the mean fraction of tests passed (%), its se, and how it compares with the paper's
    number (the paper does not say which of the two it reports): the difference ± its rerun se, and the verdict."""
    value = (
        _percent(_value(bench, cp.arm, cp.step, "tests_passed", benchmark=name)) if "tests_passed" in bench else None
    )
    row["tests passed"] = value if _is_num(value) else NOT_RUN if row["pass@1"] == NOT_RUN else NOT_APPLICABLE
    if _is_num(value):
        row["tests passed se"] = _percent(_value(bench, cp.arm, cp.step, "tests_passed_se", benchmark=name))
    diff = _diff(value, given, TINY_SCALE if tiny else None)
    if not _is_num(diff):
        row["tests passed vs paper"] = str(diff)
        return
    se = _percent(_value(bench, cp.arm, cp.step, "tests_passed_rerun_se", benchmark=name))
    row["tests passed vs paper"] = f"{plus_minus(diff, se, sign='+')}: {_verdict(diff, se, margin)}"


def _verdict(diff: object, se: object, margin_points: float) -> str:
    """``agrees`` / ``above`` / ``below`` for a numeric difference (points) with its rerun se; markers kept."""
    if not _is_num(diff):
        return str(diff)
    if not _is_num(se):
        return NO_NOISE
    return agreement(float(diff) / 100, 0.0, float(se) / 100, margin_points / 100).verdict


def display(table: pd.DataFrame) -> pd.DataFrame:
    """Text cells as the paper prints them: pass@1 and hours to 2 / 1 decimals, differences signed; markers kept.
    A column ``X`` with ``X se`` beside it shows ``X ± se`` (the se column goes)."""
    errors = {c[: -len(" se")] for c in table.columns if c.endswith(" se") and c[: -len(" se")] in table.columns}

    def fmt(column: str, x: object) -> str:
        if not _is_num(x):
            return "yes" if x is True else "no" if x is False else str(x)
        if column in ("N", "prompts/step"):
            return f"{int(x):,}"
        # a tiny run's few hundred samples and seconds would print as 0
        small = abs(float(x)) < 1 and not column.endswith("diff")
        if column.startswith(SAMPLES):
            return f"{float(x):{'+' if column.endswith('diff') else ''},.{2 if small else 0}f}"
        digits = (3 if small else 1) if column.startswith("time") else 2
        sign = "+" if column.endswith("diff") else ""
        return f"{round(float(x), digits) + 0.0:{sign}.{digits}f}"  # + 0.0: no "-0.00" from rounding noise

    return pd.DataFrame(
        {
            c: [plus_minus(x, e, sign="+" if c.endswith("diff") else "") for x, e in zip(table[c], table[c + " se"])]
            if c in errors
            else [fmt(c, x) for x in table[c]]
            for c in table.columns
            if not (c.endswith(" se") and c[: -len(" se")] in errors)
        }
    )


TABLE1_MEASURES = ("Math", "Code", RG_CATEGORY, RG_TASK, RG_ITEM, SAMPLES, "time (h)")


def table1_long(shown: pd.DataFrame) -> pd.DataFrame:
    """Table 1 as printed (markdown, LaTeX): one row per checkpoint x measure, ten columns that fit a page, from
    ``display(table1(...))``; our N and the paper row's N in their own columns. Rows with nothing in them (the start
    checkpoint's training time) are left out; the CSV keeps the wide table."""
    out = []
    for r in shown.to_dict("records"):
        for m in TABLE1_MEASURES:
            if m not in r:
                continue
            cells = [r[m], r.get(f"{m}, paper", NOT_GIVEN), r.get(f"{m} diff", NOT_APPLICABLE)]
            if all(c == NOT_APPLICABLE for c in cells):
                continue
            out.append(
                {
                    "checkpoint": r["method"],
                    "arm": r["arm"],
                    OURS: r[OURS],
                    "paper row": r["paper row"],
                    "steps": r["continued steps"],
                    "measure": m,
                    "reproduced": cells[0],
                    "n": r.get(f"{m} n", ""),
                    "paper": cells[1],
                    "diff": cells[2],
                }
            )
    return pd.DataFrame(out)


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
