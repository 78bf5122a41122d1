"""Per-task paired tests behind Figure 4's trajectory patterns (pure): on each task's problems, paired by problem,
the paper's paired one-tailed t-test (brorl.stats.tests.paired_one_tailed) of

    treatment: the treatment arm at its compared checkpoint against the start checkpoint (did BroRL improve?)
    control:   the control arm at its compared checkpoint against the start checkpoint (did ProRL improve?)
    decline:   the control's checkpoint nearest half its compared hours against its compared one (did ProRL fall
               from its own earlier level? ``midpoint_step``, one-tailed)
    ahead:     the treatment against the control over the trajectory: per problem, the mean over the treatment's
               checkpoints up to its compared one of (treatment - the control's checkpoint nearest in training hours,
               up to the control's compared one); with no hours, the two compared checkpoints only

A problem counts once per task (its score: the mean over its samples). The compared checkpoints are the equal-time
ones (brorl.analysis.checkpoints.select_checkpoints). With two draws of the start checkpoint (evaluation.start_draws),
the treatment's test uses the first and the control's the second, so the two are not tied to one draw of the start.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..stats.tests import paired_one_tailed

COLUMNS = [
    "task",
    "n_problems",
    "p_treatment",
    "p_control",
    "p_ahead",
    "ahead_delta",
    "compared_pairs",
    "treatment_delta",
    "treatment_se",
    "control_delta",
    "control_se",
    "lead_share",
    "control_mid_step",
    "p_control_decline",
]


def trajectory_pairs(
    treatment_steps: list[int],
    control_steps: list[int],
    hours: Mapping[str, Mapping[int, float]] | None,
    treatment: str,
    control: str,
) -> list[tuple[int, int]]:
    """(treatment step, control step) pairs over the trajectory: each treatment checkpoint with the control's
    nearest in training hours (ties: the earlier). Without hours for every step, the two last steps only."""
    t_hours, c_hours = (hours or {}).get(treatment, {}), (hours or {}).get(control, {})
    if not treatment_steps or not control_steps:
        return []
    if any(s not in t_hours for s in treatment_steps) or any(s not in c_hours for s in control_steps):
        return [(treatment_steps[-1], control_steps[-1])]
    return [(t, min(control_steps, key=lambda c: (abs(c_hours[c] - t_hours[t]), c))) for t in treatment_steps]


def midpoint_step(steps: list[int], compared: int, hours: Mapping[int, float] | None) -> int | None:
    """The control's own earlier checkpoint its decline is tested against, declared before any score is read: the
    evaluated step nearest half the compared checkpoint's training hours (without hours: half its step; ties: the
    earlier). None when the control has no other evaluated checkpoint."""
    earlier = [s for s in steps if s < compared]
    if not earlier:
        return None
    if hours and compared in hours and all(s in hours for s in earlier):
        return min(earlier, key=lambda s: (abs(hours[s] - hours[compared] / 2), s))
    return min(earlier, key=lambda s: (abs(s - compared / 2), s))


def _start_draws(units: pd.DataFrame, base_arm: str, start_step: int) -> pd.DataFrame | None:
    """The start checkpoint's two draw means per (task, benchmark, id) (brorl.analysis.load: evaluation.start_draws),
    or None where the start has one draw."""
    if "score_first" not in units:
        return None
    rows = units[(units["arm"] == base_arm) & (units["step"] == start_step)]
    if rows.empty or rows[["score_first", "score_second"]].isna().any().any():
        return None
    return rows.set_index(["task", "benchmark", "id"])[["score_first", "score_second"]]


def task_tests(
    units: pd.DataFrame,
    control: str,
    treatment: str,
    base_arm: str,
    start_step: int,
    steps: Mapping[str, int],
    hours: Mapping[str, Mapping[int, float]] | None = None,
) -> pd.DataFrame:
    """One row per task with the start checkpoint and both compared checkpoints: ``COLUMNS`` (p-values of the
    module docstring's three tests; ahead_delta, each arm's change since the start and its standard error in pass@1
    points; lead_share: the share of the trajectory's matched checkpoints at which the treatment's mean leads)."""
    evaluated = {
        arm: sorted(int(s) for s in units.loc[units["arm"] == arm, "step"].unique() if 0 < int(s) <= steps[arm])
        for arm in (control, treatment)
    }
    pairs = trajectory_pairs(evaluated[treatment], evaluated[control], hours, treatment, control)
    mid = midpoint_step(evaluated[control], steps[control], (hours or {}).get(control))
    needed = {(base_arm, start_step), (control, steps[control]), (treatment, steps[treatment])}
    needed |= {(treatment, t) for t, _ in pairs} | {(control, c) for _, c in pairs}
    needed |= {(control, mid)} if mid is not None else set()
    keep = units[[(a, int(s)) in needed for a, s in zip(units["arm"], units["step"])]]
    wide = keep.pivot_table(index=["task", "benchmark", "id"], columns=["arm", "step"], values="score")
    cols = sorted(needed)
    if any(c not in wide.columns for c in cols):  # a checkpoint with no units at all: no task can be tested
        return pd.DataFrame(columns=COLUMNS)
    draws = _start_draws(units, base_arm, start_step)
    rows = []
    for task, g in wide.groupby(level="task", sort=True):
        g = g[cols].dropna()
        if g.empty:
            continue
        start = {arm: g[(base_arm, start_step)].to_numpy() for arm in (treatment, control)}
        if draws is not None:  # each arm against its own draw of the start: two tests not tied to one draw
            start = {treatment: draws["score_first"].loc[g.index].to_numpy()}
            start[control] = draws["score_second"].loc[g.index].to_numpy()
        t_traj = np.mean([g[(treatment, t)].to_numpy() for t, _ in pairs], axis=0)
        c_traj = np.mean([g[(control, c)].to_numpy() for _, c in pairs], axis=0)
        ahead = paired_one_tailed(c_traj, t_traj)
        gain = {arm: paired_one_tailed(start[arm], g[(arm, steps[arm])].to_numpy()) for arm in (treatment, control)}
        leads = [g[(treatment, t)].mean() > g[(control, c)].mean() for t, c in pairs]
        rows.append(
            {
                "task": task,
                "n_problems": len(g),
                "p_treatment": gain[treatment].p,
                "p_control": gain[control].p,
                "p_ahead": ahead.p,
                "ahead_delta": 100 * ahead.delta,
                "compared_pairs": len(pairs),
                "treatment_delta": 100 * gain[treatment].delta,
                "treatment_se": 100 * gain[treatment].se,
                "control_delta": 100 * gain[control].delta,
                "control_se": 100 * gain[control].se,
                "lead_share": float(np.mean(leads)) if leads else float("nan"),
                "control_mid_step": mid,
                # one-tailed: the control's midpoint above its compared checkpoint (ProRL declines)
                "p_control_decline": (
                    paired_one_tailed(g[(control, steps[control])].to_numpy(), g[(control, mid)].to_numpy()).p
                    if mid is not None
                    else float("nan")
                ),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
