"""Figure 4's classes with their power (pure): what a task's paired tests can and cannot tell at the run's size.

The paper's caption sorts tasks into "both improve" and "BroRL improves while ProRL stalls or declines" (and says most
tasks are one of those), with no rule. A rule that only asks "is the gain significant?" measures detectability: at
100 problems x 16 samples a 1-point gain is seen about one time in six, so most tasks would land in "neither" whether
or not the paper is right. Here each arm's change since the start checkpoint gets one of four verdicts:

    improves      the gain is shown (one-tailed paired test, Holm over the tasks, at alpha)
    worse         the loss is shown (the other tail, Holm, at alpha)
    no gain       the change is shown to lie within the practical margin (two one-sided tests, Holm, at alpha)
    undetermined  none of these: the interval straddles the margin (the run is too small to tell)

and a task's class follows from its two arms' verdicts and from ProRL's decline: its compared checkpoint against its
own checkpoint nearest half the compared hours, one-tailed, Holm over the tasks, declared before any score is read
(``task_class``; Table 1's ProRL falls from its 62.10 peak while staying above the start, which no test against the
start can see). A task with an undetermined arm that could change its class is "undetermined", kept apart from
"neither". Beside each verdict: the minimal detectable effect,
the gain the one-tailed test finds with 80% power at the run's size (``mde``), so a reader sees what "not shown"
could hide. The margin is ``analysis.practical_margin`` (1 point: the paper's example panels move 0.6-2.5 points).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..stats.tests import holm

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
