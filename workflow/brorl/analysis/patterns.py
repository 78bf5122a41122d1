"""The three trajectory patterns of the paper's Figure 4, as a rule every evaluated task is classified by (pure).

The paper groups its per-task curves into (1) both arms improve, BroRL ahead; (2) ProRL degrades while BroRL
improves; (3) neither improves consistently, and says most tasks fall into 1 and 2, without a rule. The rule here,
on each arm's change from the start checkpoint to its checkpoint at the equal-time point (the evaluated step nearest
`analysis.equal_time_hours`, as the significance test picks it; the last evaluated one when that is null), in
pass@1 points:

    1  both improve:            treatment > +margin and control > +margin
    2  only the treatment does: treatment > +margin and control <= +margin (flat or worse)
    3  the treatment does not:  treatment <= +margin

``ahead`` says whether the treatment ends above the control. The margin (1 point by default) is ours: the paper
gives none.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

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


def pattern_shares(classified: pd.DataFrame) -> dict[int, float]:
    """Share of the classified tasks in each pattern (0 for an empty pattern)."""
    n = len(classified)
    return {k: (float((classified["pattern"] == k).sum()) / n if n else 0.0) for k in PATTERNS}
