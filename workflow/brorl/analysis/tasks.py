"""Figure 4's tasks (pure): the paper's three trajectory patterns as a rule every evaluated task is classified by, the
per-task paired tests that decide it, and the classes with their power beside it.

The paper groups its per-task curves into (1) both arms improve, BroRL ahead; (2) ProRL degrades while BroRL
improves; (3) neither improves consistently, and says most tasks fall into 1 and 2, without a rule. The rule here
compares each arm's checkpoint at the equal-time point (the evaluated step nearest `analysis.equal_time_hours`, the
ones the significance test compares; the last evaluated ones when that is null) with the start checkpoint, on the
task's problems with the paper's paired one-tailed test (``task_tests``) at `analysis.alpha`:

    1  both improve:            p(treatment > start) < alpha and p(control > start) < alpha
    2  only the treatment does: p(treatment > start) < alpha, the control's improvement not shown
    3  the treatment does not:  BroRL's improvement not shown (p >= alpha, or too few problems to test)

``ahead``: the paired test of the treatment against the control over the trajectory gives p < alpha ("BroRL
consistently outperforms"). ``pattern_alpha0.01`` and ``pattern_alpha0.1`` are the same rule at other alphas, and
``pattern_margin`` the earlier point rule (each arm's change above a 1-point margin, ours), so the shares' dependence
on the rule shows in task_patterns.csv itself.

The per-task paired tests behind the patterns: on each task's problems, paired by problem, the paper's paired
one-tailed t-test (brorl.stats.tests.paired_one_tailed) of

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

Figure 4's classes with their power: what a task's paired tests can and cannot tell at the run's size. The paper's
caption sorts tasks into "both improve" and "BroRL improves while ProRL stalls or declines" (and says most tasks are
one of those), with no rule. A rule that only asks "is the gain significant?" measures detectability: at 100 problems
x 16 samples a 1-point gain is seen about one time in six, so most tasks would land in "neither" whether or not the
paper is right. Here each arm's change since the start checkpoint gets one of four verdicts:

    improves      the gain is shown (one-tailed paired test, Holm over the tasks, at alpha)
    worse         the loss is shown (the other tail, Holm, at alpha)
    no gain       the change is shown to lie within the practical margin (two one-sided tests, Holm, at alpha)
    undetermined  none of these: the interval straddles the margin (the run is too small to tell)

and a task's class follows from its two arms' verdicts and from ProRL's decline: its compared checkpoint against its
own checkpoint nearest half the compared hours, one-tailed, Holm over the tasks, declared before any score is read
(``task_class``; Table 1's ProRL falls from its 62.10 peak while staying above the start, which no test against the
start can see). A task with an undetermined arm that could change its class is "undetermined", kept apart from
"neither". Beside each verdict: the minimal detectable effect, the gain the one-tailed test finds with 80% power at
the run's size (``mde``), so a reader sees what "not shown" could hide. The margin is ``analysis.practical_margin``
(1 point: the paper's example panels move 0.6-2.5 points).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ..stats.tests import holm, paired_one_tailed

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

    tasks: arm, step, task, pass1 (fraction), as brorl.analysis.checkpoints.task_pass1 gives. steps: the checkpoint
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
    """``classified`` (classify_tasks) with the paired tests (``task_tests``) merged in and the pattern
    decided by them at ``alpha``; the point rule kept as ``pattern_margin``, the test rule at SENSITIVITY_ALPHAS as
    ``pattern_alpha<a>``. A task without a test (no problem evaluated at all three checkpoints) is pattern 3.
    Beside them, the rule with its power (``with_verdicts``, ``margin`` in points): each arm's verdict,
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
    in points, and the task's Figure 4 class (``task_class``)."""
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
        rows.append(_task_row(task, g, start, pairs, mid, control=control, treatment=treatment, steps=steps))
    return pd.DataFrame(rows, columns=COLUMNS)


def _task_row(
    task: str,
    g: pd.DataFrame,
    start: Mapping[str, np.ndarray],
    pairs: list[tuple[int, int]],
    mid: int | None,
    *,
    control: str,
    treatment: str,
    steps: Mapping[str, int],
) -> dict:
    """One task's row of COLUMNS from its problems' scores ``g`` (a column per (arm, step)) and the start scores
    each arm's test takes."""
    t_traj = np.mean([g[(treatment, t)].to_numpy() for t, _ in pairs], axis=0)
    c_traj = np.mean([g[(control, c)].to_numpy() for _, c in pairs], axis=0)
    ahead = paired_one_tailed(c_traj, t_traj)
    gain = {arm: paired_one_tailed(start[arm], g[(arm, steps[arm])].to_numpy()) for arm in (treatment, control)}
    leads = [g[(treatment, t)].mean() > g[(control, c)].mean() for t, c in pairs]
    return {
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


CLASSES = {
    "both": "both improve",
    "brorl_only": "BroRL improves while ProRL stalls or declines",
    "prorl_only": "only ProRL improves",
    "neither": "neither improves",
    "undetermined": "undetermined",
}
POWER = 0.8  # of the minimal detectable effect
NOT_UP = ("no gain", "worse")  # verdicts that rule an improvement out


def mde(se: np.ndarray, df: np.ndarray, alpha: float, power: float = POWER) -> np.ndarray:
    """The true gain (in the units of ``se``) the one-tailed paired t-test at ``alpha`` finds with ``power``:
    (t_{1-alpha} + t_{power}) x se, both quantiles at ``df`` (the normal approximation with t's tails)."""
    se, df = np.asarray(se, dtype=float), np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        return (stats.t.ppf(1 - alpha, df) + stats.t.ppf(power, df)) * se


def equivalence_p(delta: np.ndarray, se: np.ndarray, df: np.ndarray, margin: float) -> np.ndarray:
    """p of the two one-sided tests that the mean change lies within (-margin, +margin): the larger of the two."""
    delta, se, df = (np.asarray(x, dtype=float) for x in (delta, se, df))
    with np.errstate(divide="ignore", invalid="ignore"):
        above = stats.t.sf((delta + margin) / se, df)  # H0: change <= -margin
        below = stats.t.cdf((delta - margin) / se, df)  # H0: change >= +margin
    p = np.maximum(above, below)
    exact = se == 0  # every problem changed by the same amount: inside the margin or not, without doubt
    return np.where(exact, np.where(np.abs(delta) < margin, 0.0, 1.0), p)


def verdicts(p_up: np.ndarray, p_equivalent: np.ndarray, alpha: float) -> np.ndarray:
    """Each task's verdict on one arm from its raw p-values over the tasks: the gain's (one-tailed), the loss's
    (its complement) and the equivalence's, each Holm-corrected over the tasks. NaN p (too few problems): undetermined."""
    p_up = np.asarray(p_up, dtype=float)
    up, down = holm(p_up), holm(1.0 - p_up)
    same = holm(np.asarray(p_equivalent, dtype=float))
    out = np.full(p_up.shape, "undetermined", dtype=object)
    out[np.nan_to_num(same, nan=1.0) <= alpha] = "no gain"
    out[np.nan_to_num(down, nan=1.0) <= alpha] = "worse"
    out[np.nan_to_num(up, nan=1.0) <= alpha] = "improves"
    return out


def change_verdicts(
    p_up: np.ndarray, delta: np.ndarray, se: np.ndarray, df: np.ndarray, alpha: float, margin: float
) -> np.ndarray:
    """``verdicts`` of one arm's change per task from its paired tests: the gain's p, and the change and its
    standard error (points) for the equivalence test within ``margin``."""
    return verdicts(p_up, equivalence_p(delta, se, df, margin), alpha)


def task_class(treatment: str, control: str, control_declines: bool = False) -> str:
    """The task's class (a key of CLASSES) from the verdicts on BroRL (treatment) and ProRL (control) against the
    start, and whether ProRL's decline from its own earlier checkpoint is shown (``control_declines``)."""
    if treatment == "improves":
        if control_declines:
            return "brorl_only"
        if control == "improves":
            return "both"
        return "brorl_only" if control in NOT_UP else "undetermined"
    if treatment in NOT_UP:
        if control == "improves":
            return "prorl_only"
        return "neither" if control in NOT_UP else "undetermined"
    return "undetermined"


def class_shares(classes: list[str] | np.ndarray) -> dict[str, float]:
    """Share of each class among the determined tasks (every class but "undetermined"; 0 where none is)."""
    determined = [c for c in classes if c != "undetermined"]
    n = len(determined)
    return {k: (determined.count(k) / n if n else 0.0) for k in CLASSES if k != "undetermined"}
