"""SUMMARY.md's sections on Section 4.2's results (brorl.analysis.summary puts them in order), and the small formatters
of its numbers.

The statistics section: the paper's paired test at equal compute, twice (brorl.analysis.significance): at equal
training hours, flagged when the chosen hours differ by more than 10%, and at equal generated samples.

The tables: Table 1 and Tables 3-5 beside the paper's cells, with how many agree within the noise of a rerun
(brorl.stats.agreement) and which code score the paper reports.

Figure 4: the tasks' trajectory patterns, and the classes with their power (brorl.analysis.tasks).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..stats.agreement import ABOVE, AGREES, BELOW, NOT_IN_INTERVAL
from .paper import FAMILY_LABELS, NOT_RUN
from .tables import RG_CATEGORY, RG_TASK, as_number
from .tables import as_number as _num


def fixed(x: object, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or the not-run marker."""
    v = as_number(x)
    return NOT_RUN if v is None else f"{v:.{digits}f}"


def p_value(p: object) -> str:
    """A p-value, or n/a where the test is undefined (no variance: every score equal)."""
    v = as_number(p)
    return "n/a" if v is None else f"{v:.3g}"


def points(x: object) -> str:
    """A 0-1 difference as signed points."""
    v = as_number(x)
    return "n/a" if v is None else f"{100 * v:+.2f}"


def cell(x: object, digits: int = 2, sign: str = "") -> str:
    """A table cell: numbers rounded (signed for differences), markers as they are."""
    v = as_number(x)
    return str(x) if v is None else f"{round(v, digits) + 0.0:{sign}.{digits}f}"


# the short names the sections below call two of them by
_f, _cell = fixed, cell


def statistics_lines(sig: Mapping) -> list[str]:
    paper = sig["paper"]
    lines = [
        "### Statistics (paired one-tailed t-test over problem instances)",
        "",
        f"Paper: delta {paper['delta']}, t {paper['t']}, p {paper['p']} over {paper['n_text']} at ~"
        f"{paper['equal_time_hours']} h of equal training time, no correction.",
        "",
    ]
    if sig.get("status") != "ok":
        return lines + [f"Here: **not run**: {sig.get('reason')}", ""]
    p = sig["pooled"]
    sel = sig["selection"]
    lines.append(
        f"Here: {sig['treatment']['arm']} step {sig['treatment']['step']} vs {sig['control']['arm']} step "
        f"{sig['control']['step']} ({sel['rule']}): delta {p['delta']:.4f} (95% bootstrap CI "
        f"{p['ci_low']:.4f} .. {p['ci_high']:.4f}), t {_f(p['t'])}, p {p['p']:.3g} over n = {p['n']} "
        f"instances; effect size d_z {_f(p['effect_size'], 3)}. Significant at alpha {sig['alpha']}: "
        f"**{'yes' if p['reject'] else 'no'}**. Benchmarks significant: "
        f"{sum(r['reject'] for r in sig['benchmark'])} of {len(sig['benchmark'])} raw, "
        f"{sum(r['reject_holm'] for r in sig['benchmark'])} after Holm."
    )
    if p.get("ci_low_tasks") is not None:
        lines.append(
            f"Resampling whole tasks instead of problems (problems of one task move together): 95% CI "
            f"{p['ci_low_tasks']:.4f} .. {p['ci_high_tasks']:.4f} over {p['tasks']} tasks. Either interval covers "
            "evaluation sampling and problem heterogeneity, not training variance: each arm is one training run."
        )
    lines += ["", *compute_lines(sig)]
    return lines + [""]


def _spent(side: Mapping) -> str:
    """`arm` step k: h training hours, s k generated samples (+ start-ups apart)."""
    hours, samples, startup = side.get("hours"), side.get("samples_k"), side.get("startup_hours")
    text = f"`{side['arm']}` step {side['step']}: " + (f"{hours:.3g} h" if hours is not None else "hours not recorded")
    text += f", {samples:,.4g}k generated samples" if samples is not None else ", samples not recorded"
    return text + (f" (start-ups and relaunches apart: {startup:.3g} h)" if startup else "")


def compute_lines(sig: Mapping) -> list[str]:
    """What each compared checkpoint cost, the unequal-compute flag, and the comparison at equal samples."""
    clock = (sig.get("clock") or {}).get("text", "training clock: steps and saves, brorl.analysis.checkpoints")
    lines = [
        f"Compute behind the compared checkpoints ({clock}): "
        + "; ".join(_spent(sig[role]) for role in ("control", "treatment"))
        + "."
    ]
    flag = sig["selection"].get("flag")
    if flag:
        lines.append(f"**Warning: {flag}.** The test above compares unequal training time; read it with that.")
    lines.append(_paper_samples())
    same = sig.get("equal_samples") or {}
    if same.get("status") == "ok":
        q = same["pooled"]
        lines.append(
            f"At equal generated samples ({same['samples_k']:,.4g}k, no hardware clock): "
            f"{same['treatment']['arm']} step {same['treatment']['step']} vs {same['control']['arm']} step "
            f"{same['control']['step']}: delta {q['delta']:.4f} (95% CI {q['ci_low']:.4f} .. {q['ci_high']:.4f}), "
            f"p {q['p']:.3g} over n = {q['n']}; significant: **{'yes' if q['reject'] else 'no'}**."
        )
    elif same:
        lines.append(f"At equal generated samples: not run ({same.get('reason')}).")
    lines += disagreement_lines(sig)
    ablation = sig.get("lr_ablation")
    if ablation and ablation.get("status") == "ok":
        q = ablation["pooled"]
        lines.append(
            f"The lr-rule ablation (`{ablation['treatment']['arm']}`: BroRL's N at the unscaled lr0) against "
            f"`{ablation['control']['arm']}` by the same test ({ablation['selection']['rule']}): delta {q['delta']:.4f} "
            f"(95% CI {q['ci_low']:.4f} .. {q['ci_high']:.4f}), p {q['p']:.3g}; significant: "
            f"**{'yes' if q['reject'] else 'no'}**. BroRL differs from ProRL in N and in lr (x 2.83): this pair "
            "keeps the lr."
        )
    elif ablation and ablation.get("status") == "off":
        lines.append(
            f"The lr-rule ablation `{ablation['arm']}` is not an enabled arm: BroRL's N and its learning-rate rule "
            "(the paper's sqrt rule: x 2.83) are not separated here (enable that arm to compare it with the control)."
        )
    elif ablation:
        lines.append(f"The lr-rule ablation `{ablation['arm']}`: not run ({ablation['reason']}).")
    return lines


def disagreement_lines(sig: Mapping) -> list[str]:
    """A warning when equal hours and equal generated samples give different verdicts (or signs): the hours
    depend on the hardware and on how dynamic sampling refills a step, the samples on neither."""
    same = sig.get("equal_samples") or {}
    if same.get("status") != "ok" or sig.get("status") != "ok":
        return []
    hours, samples = sig["pooled"], same["pooled"]
    if hours["reject"] == samples["reject"] and (hours["delta"] > 0) == (samples["delta"] > 0):
        return []
    return [
        f"**Equal hours and equal generated samples disagree** (delta {hours['delta']:.4f}, "
        f"{'significant' if hours['reject'] else 'not significant'}, against {samples['delta']:.4f}, "
        f"{'significant' if samples['reject'] else 'not significant'}): the verdict depends on the clock. Hours "
        "follow the hardware and the refill mode (refill: "
        f"{sig['control'].get('refill')} vs {sig['treatment'].get('refill')}); generated samples follow neither."
    ]


def _paper_samples() -> str:
    """Appendix D's "a comparable number of total generated samples" against the paper's own Table 1 cells."""
    from .paper import load_paper

    rows = [r for r in load_paper()["table1"] if r.get("samples_k")]
    control = max((r for r in rows if r["role"] == "control"), key=lambda r: r["continued_steps"])
    treatment = sorted((r for r in rows if r["role"] == "treatment"), key=lambda r: r["continued_steps"])
    nearest = min(treatment, key=lambda r: abs(r["samples_k"] - control["samples_k"]))
    return (
        f'Paper (Appendix D): the arms used "a comparable number of total generated samples"; its Table 1 gives ProRL '
        f"+{control['continued_steps']} {control['samples_k']:,}k and BroRL +{treatment[-1]['continued_steps']} "
        f"{treatment[-1]['samples_k']:,}k; the comparable BroRL row is +{nearest['continued_steps']} "
        f"({nearest['samples_k']:,}k)."
    )


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


def figure4_lines(classified: pd.DataFrame | None) -> list[str]:
    """Figure 4's trajectory patterns: the share of classified tasks in each (the paper: most in 1 and 2), and how
    the shares move with the rule (other alphas, the point rule)."""
    from .tasks import MARGIN, PATTERNS, SENSITIVITY_ALPHAS, pattern_shares

    tested = classified is not None and "pattern_margin" in classified
    rule = (
        "each arm's checkpoint at the equal-compute point against the start checkpoint, on the task's problems with "
        "the paired one-tailed test (p < alpha); BroRL ahead when its paired test against ProRL over the "
        "trajectory gives p < alpha"
        if tested
        else f"each arm's change from the start to its compared checkpoint, margin {MARGIN} point"
    )
    lines = [
        "### Figure 4 trajectory patterns",
        "",
        f"Rule (ours; the paper gives none): {rule}. The paper says most tasks fall into patterns 1 and 2.",
        "",
    ]
    if classified is None or classified.empty:
        return lines + [f"{NOT_RUN}: no task has the start checkpoint and both arms evaluated.", ""]
    if "figure4_class" in classified:
        lines += _classes(classified)
    if "sweep_largest_verdict" in classified:
        lines += _sweep(classified)
    shares = pattern_shares(classified)
    lines += [
        f"- pattern {k} ({PATTERNS[k]}): {int((classified['pattern'] == k).sum())} of {len(classified)} "
        f"tasks ({100 * shares[k]:.0f}%)"
        for k in PATTERNS
    ]
    if tested:
        ahead = int(classified["ahead"].sum())
        lines.append(f"- BroRL ahead of ProRL over the trajectory (paired test): {ahead} of {len(classified)} tasks")
        others = [(f"alpha {a:g}", f"pattern_alpha{a:g}") for a in SENSITIVITY_ALPHAS]
        others.append((f"the {MARGIN:g}-point rule", "pattern_margin"))
        for name, column in others:
            moved = pattern_shares(classified, column)
            lines.append(f"- with {name}: " + ", ".join(f"pattern {k} {100 * moved[k]:.0f}%" for k in PATTERNS))
    known = classified.dropna(subset=["paper_pattern"])
    if len(known):
        same = int((known["pattern"] == known["paper_pattern"].astype(int)).sum())
        lines.append(f"- the paper's Figure 4 tasks evaluated here: {same} of {len(known)} in the paper's pattern.")
    return lines + [""]


def _classes(classified: pd.DataFrame) -> list[str]:
    """Figure 4's classes with their power (brorl.analysis.tasks): counts, shares over the determined tasks,
    and what the run could detect."""
    from .tasks import CLASSES, class_shares

    classes = classified["figure4_class"].astype(str).tolist()
    shares = class_shares(classes)
    undetermined = classes.count("undetermined")
    lines = [
        "Classes with their power (each arm against the start: improves, worse, no gain within the practical margin, "
        "or undetermined; Holm over the tasks; a task is undetermined when an undetermined arm could change its class):",
        "",
    ]
    lines += [
        f"- {CLASSES[k]}: {classes.count(k)} of {len(classes)} tasks"
        + (f" ({100 * shares[k]:.0f}% of the {len(classes) - undetermined} determined)" if k in shares else "")
        for k in CLASSES
    ]
    mdes = [
        f"{name} {classified[f'{arm}_mde'].median():.1f}"
        for arm, name in (("treatment", "BroRL"), ("control", "ProRL"))
        if classified[f"{arm}_mde"].notna().any()
    ]
    if mdes:
        lines.append(
            "- the smallest gain a task's test finds 4 times in 5 at this run's size (median over tasks, pass@1 "
            f"points): {', '.join(mdes)}; the patterns below ask only whether a gain was detected"
        )
    if "lead_share" in classified and classified["lead_share"].notna().any():
        lines.append(
            "- BroRL leads at a median "
            f"{100 * classified['lead_share'].median():.0f}% of the matched checkpoints of a task's trajectory"
        )
    return lines + [""]


def _sweep(classified: pd.DataFrame) -> list[str]:
    """Section 4.2.2's "N = 512 might not be large enough for some harder problems", on the tasks BroRL did not
    improve: does the sweep's largest N (brorl.analysis.extensions)?"""
    has = classified.dropna(subset=["sweep_largest_verdict"])
    if has.empty:
        return []
    arm = has["sweep_largest_arm"].iloc[0]
    column = "treatment_verdict" if "treatment_verdict" in has else None
    stuck = has[has[column] != "improves"] if column else has[has["pattern"] == 3]
    moved = stuck[stuck["sweep_largest_verdict"] == "improves"]
    names = ", ".join(map(str, moved["task"].head(10))) + (", ..." if len(moved) > 10 else "")
    return [
        f"- The N sweep on the {len(stuck)} tasks BroRL did not improve: the largest N (`{arm}`) improves "
        f"{len(moved)} of them (paired test against the start, Holm over the tasks){': ' + names if names else ''}.",
        "",
    ]
