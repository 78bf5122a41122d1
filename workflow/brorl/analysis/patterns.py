"""The three trajectory patterns of the paper's Figure 4, as a rule every evaluated task is classified by (pure).

The paper groups its per-task curves into (1) both arms improve, BroRL ahead; (2) ProRL degrades while BroRL
improves; (3) neither improves consistently, and says most tasks fall into 1 and 2, without a rule. The rule here
compares each arm's checkpoint at the equal-time point (the evaluated step nearest `analysis.equal_time_hours`, the
ones the significance test compares; the last evaluated ones when that is null) with the start checkpoint, on the
task's problems with the paper's paired one-tailed test (brorl.analysis.task_tests) at `analysis.alpha`:

    1  both improve:            p(treatment > start) < alpha and p(control > start) < alpha
    2  only the treatment does: p(treatment > start) < alpha, the control's improvement not shown
    3  the treatment does not:  BroRL's improvement not shown (p >= alpha, or too few problems to test)

``ahead``: the paired test of the treatment against the control over the trajectory gives p < alpha ("BroRL
consistently outperforms"). ``pattern_alpha0.01`` and ``pattern_alpha0.1`` are the same rule at other alphas, and
``pattern_margin`` the earlier point rule (each arm's change above a 1-point margin, ours), so the shares' dependence
on the rule shows in task_patterns.csv itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..stats.tests import holm
from .figure4_rule import change_verdicts, mde, task_class

PATTERNS = {1: "both improve", 2: "ProRL stalls or degrades, BroRL improves", 3: "BroRL does not improve"}
MARGIN = 1.0  # pass@1 points; NOT PUBLISHED


def pattern_of(control_change: float, treatment_change: float, margin: float = MARGIN) -> int:
    """The pattern (1, 2 or 3) of one task from the two arms' changes since the start (points)."""
    if treatment_change > margin:
        return 1 if control_change > margin else 2
    return 3


def classify_tasks(
    tasks: pd.DataFrame,
    control: str,
    treatment: str,
    base_arm: str,
    start_step: int,
    paper_patterns: dict[int, list[str]] | None = None,
    margin: float = MARGIN,
    steps: Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """task, start, control_final, treatment_final (pass@1 %), changes, pattern, ahead, the paper's pattern and the
    two steps compared.

    tasks: arm, step, task, pass1 (fraction), as brorl.analysis.trajectories.task_pass1 gives. steps: the checkpoint
    of each arm to compare (the equal-time point, brorl.analysis.checkpoints.select_checkpoints); None: each arm's
    last. A task needs the start checkpoint and those of both arms; others are left out (they cannot be classified).
    """
    paper_of = {t: k for k, names in (paper_patterns or {}).items() for t in names}
    rows = []
    for task, g in tasks.groupby("task", sort=True):
        start = g[(g["arm"] == base_arm) & (g["step"] == start_step)]["pass1"]
        at = {}
        for arm in (control, treatment):
            mine = g[g["arm"] == arm].sort_values("step")
            if steps is not None:
                mine = mine[mine["step"] == steps[arm]]
            at[arm] = mine
        if start.empty or at[control].empty or at[treatment].empty:
            continue
        s = 100 * float(start.iloc[0])
        c, t = (100 * float(at[arm]["pass1"].iloc[-1]) for arm in (control, treatment))
        rows.append(
            {
                "task": task,
                "control_step": int(at[control]["step"].iloc[-1]),
                "treatment_step": int(at[treatment]["step"].iloc[-1]),
                "start": s,
                "control_final": c,
                "treatment_final": t,
                "control_change": c - s,
                "treatment_change": t - s,
                "pattern": pattern_of(c - s, t - s, margin),
                "ahead": t > c,
                "paper_pattern": paper_of.get(task),
            }
        )
    columns = [
        "task",
        "control_step",
        "treatment_step",
        "start",
        "control_final",
        "treatment_final",
        "control_change",
        "treatment_change",
        "pattern",
        "ahead",
        "paper_pattern",
    ]
    return pd.DataFrame(rows, columns=columns)


def pattern_by_test(p_treatment: float, p_control: float, alpha: float) -> int:
    """The pattern (1, 2 or 3) of one task from its two paired tests against the start (NaN p: not shown)."""
    if p_treatment < alpha:
        return 1 if p_control < alpha else 2
    return 3


SENSITIVITY_ALPHAS = (0.01, 0.1)  # the rule's other alphas, beside analysis.alpha, in task_patterns.csv


def apply_tests(classified: pd.DataFrame, tests: pd.DataFrame, alpha: float, margin: float = MARGIN) -> pd.DataFrame:
    """``classified`` (classify_tasks) with the paired tests (brorl.analysis.task_tests) merged in and the pattern
    decided by them at ``alpha``; the point rule kept as ``pattern_margin``, the test rule at SENSITIVITY_ALPHAS as
    ``pattern_alpha<a>``. A task without a test (no problem evaluated at all three checkpoints) is pattern 3.
    Beside them, the rule with its power (brorl.analysis.figure4_rule, ``margin`` in points): each arm's verdict,
    its minimal detectable effect (points), and the task's ``figure4_class``."""
    out = classified.rename(columns={"pattern": "pattern_margin"}).merge(tests, on="task", how="left")
    out = with_verdicts(out, alpha, margin)
    p_t, p_c = out["p_treatment"].to_numpy(dtype=float), out["p_control"].to_numpy(dtype=float)
    out["pattern"] = [pattern_by_test(t, c, alpha) for t, c in zip(p_t, p_c)]
    for a in SENSITIVITY_ALPHAS:
        out[f"pattern_alpha{a:g}"] = [pattern_by_test(t, c, a) for t, c in zip(p_t, p_c)]
    out["ahead"] = out["p_ahead"].to_numpy(dtype=float) < alpha
    first = ["task", "control_step", "treatment_step", "figure4_class", "pattern", "ahead", "paper_pattern"]
    return out[first + [c for c in out.columns if c not in first]]


def with_verdicts(tests: pd.DataFrame, alpha: float, margin: float) -> pd.DataFrame:
    """Each arm's verdict (improves, worse, no gain, undetermined; Holm over the tasks) and minimal detectable effect
    in points, and the task's Figure 4 class (brorl.analysis.figure4_rule)."""
    out = tests.copy()
    df = out["n_problems"].to_numpy(dtype=float) - 1
    for arm in ("treatment", "control"):
        delta, se = out[f"{arm}_delta"].to_numpy(dtype=float), out[f"{arm}_se"].to_numpy(dtype=float)
        out[f"{arm}_verdict"] = change_verdicts(out[f"p_{arm}"].to_numpy(dtype=float), delta, se, df, alpha, margin)
        out[f"{arm}_mde"] = mde(se, df, alpha)
    declines = holm(out["p_control_decline"].to_numpy(dtype=float))
    out["control_declines"] = np.nan_to_num(declines, nan=1.0) <= alpha
    out["figure4_class"] = [
        task_class(t, c, bool(d))
        for t, c, d in zip(out["treatment_verdict"], out["control_verdict"], out["control_declines"])
    ]
    return out


def pattern_shares(classified: pd.DataFrame, column: str = "pattern") -> dict[int, float]:
    """Share of the classified tasks in each pattern of ``column`` (0 for an empty pattern)."""
    n = len(classified)
    return {k: (float((classified[column] == k).sum()) / n if n else 0.0) for k in PATTERNS}
