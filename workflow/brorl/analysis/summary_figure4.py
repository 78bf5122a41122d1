"""SUMMARY.md's Figure 4 section: the tasks' trajectory patterns, and the classes with their power
(brorl.analysis.patterns, brorl.analysis.figure4_rule)."""

from __future__ import annotations

import pandas as pd

from .paper import NOT_RUN


def figure4_lines(classified: pd.DataFrame | None) -> list[str]:
    """Figure 4's trajectory patterns: the share of classified tasks in each (the paper: most in 1 and 2), and how
    the shares move with the rule (other alphas, the point rule)."""
    from .patterns import MARGIN, PATTERNS, SENSITIVITY_ALPHAS, pattern_shares

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
    """Figure 4's classes with their power (brorl.analysis.figure4_rule): counts, shares over the determined tasks,
    and what the run could detect."""
    from .figure4_rule import CLASSES, class_shares

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
    improve: does the sweep's largest N (brorl.analysis.sweep_tasks)?"""
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
