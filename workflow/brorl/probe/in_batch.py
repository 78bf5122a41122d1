"""The in-batch probe: Theorem 1 on the model. Pure: step prompts and pass-rate frames in, numbers out.

The paper's explanation of BroRL speaks of the prompts a step sampled and updated: with few rollouts per prompt,
the unsampled tokens can drain probability from the correct ones; with many, the correct mass of each updated prompt
does not fall. The in-batch probe measures that where it is claimed: a probed step k's own prompts (their ids from
the step's rollout records, brorl.training.step_prompts) are sampled again at the policy just before k's update (the
export of step k - 1, or the start checkpoint for k = 1) and just after it (the export of k), ``samples`` times each
at the rollout temperature. Per arm and step: the mean change of the pass rate, and the share of the step's updated
prompts (``mixed``: neither all right nor all wrong at the step) whose pass rate fell beyond ``z`` standard errors of
the difference, against its null (both draws redrawn from the before-rates: no change at all).

Between the arms, at each step both probed: are the control's updated prompts more often among the fallen than the
treatment's? (Fisher's exact test, one-tailed.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..training.step_prompts import mixed
from .rates import moved, rate_se
from .select import ProbeError

NULL_REPLICATES = 2000
ROW_COLUMNS = [
    "arm",
    "step",
    "prompts",
    "updated",
    "samples",
    "step_pass_rate",
    "before",
    "after",
    "change",
    "change_se",
    "fell",
    "rose",
    "fell_updated",
    "rose_updated",
    "fell_share_updated",
    "null_q95",
    "p_fell",
]
BETWEEN_COLUMNS = [
    "step",
    "control",
    "treatment",
    "control_updated",
    "control_fell",
    "treatment_updated",
    "treatment_fell",
    "odds_ratio",
    "p",
    "note",
]


def choose_prompts(drawn: Sequence[Mapping], cap: int) -> list[dict]:
    """The step's prompts to sample again: the updated (mixed) ones first, then the rest, each in the order the step
    drew them, at most ``cap``. The updated ones are where the theorem speaks; the rest show what the step did to
    prompts it drew but could not learn from (all right or all wrong)."""
    ordered = [p for p in drawn if mixed(p)] + [p for p in drawn if not mixed(p)]
    return [dict(p) for p in ordered[:cap]]


def fell_share_null(
    before: pd.DataFrame, mask: np.ndarray, z: float, replicates: int, rng: np.random.Generator
) -> np.ndarray:
    """(replicates,) share of the ``mask`` prompts that fall beyond ``z`` SE when nothing changed: both draws redrawn
    from the before-rates with the same samples per prompt."""
    n = before["samples"].to_numpy(dtype=int)[mask]
    p = before["pass_rate"].to_numpy(dtype=float)[mask]
    if not len(n):
        return np.full(replicates, np.nan)
    a = rng.binomial(n, p, size=(replicates, len(p)))
    b = rng.binomial(n, p, size=(replicates, len(p)))
    se = np.hypot(rate_se(a, n), rate_se(b, n))
    return ((b / n - a / n) < -z * se).mean(axis=1)


def step_row(
    arm: str,
    step: int,
    drawn: pd.DataFrame,
    before: pd.DataFrame,
    after: pd.DataFrame,
    z: float,
    rng: np.random.Generator,
    replicates: int = NULL_REPLICATES,
) -> dict:
    """One probed step of one arm. ``drawn``: the sampled prompts' rollouts at the step (id, samples, correct, in the
    order of ``before`` and ``after``, whose pass rates come from brorl.probe.rates.pass_rates)."""
    if not (list(drawn["id"]) == list(before["id"]) == list(after["id"])):
        raise ProbeError(f"{arm} step {step}: the before and after samples hold other prompts than the step's")
    fell, rose = moved(before, after, z)
    updated = np.array([mixed(p) for p in drawn.to_dict("records")], dtype=bool)
    change = after["pass_rate"].to_numpy() - before["pass_rate"].to_numpy()
    se = np.hypot(rate_se(before["correct"], before["samples"]), rate_se(after["correct"], after["samples"]))
    null = fell_share_null(before, updated, z, replicates, rng)
    share = float(fell[updated].mean()) if updated.any() else float("nan")
    return {
        "arm": arm,
        "step": int(step),
        "prompts": len(drawn),
        "updated": int(updated.sum()),
        "samples": int(before["samples"].iloc[0]),
        "step_pass_rate": float(drawn["correct"].sum() / drawn["samples"].sum()),
        "before": float(before["pass_rate"].mean()),
        "after": float(after["pass_rate"].mean()),
        "change": float(change.mean()),
        "change_se": float(np.sqrt(np.sum(se**2)) / len(se)),
        "fell": int(fell.sum()),
        "rose": int(rose.sum()),
        "fell_updated": int(fell[updated].sum()),
        "rose_updated": int(rose[updated].sum()),
        "fell_share_updated": share,
        "null_q95": float(np.quantile(null, 0.95)) if updated.any() else float("nan"),
        "p_fell": float((null >= share).mean()) if updated.any() else float("nan"),
    }


def between_arms(rows: pd.DataFrame, control: str, treatment: str) -> pd.DataFrame:
    """At each step both arms probed: the control's and the treatment's updated prompts that fell, and Fisher's
    exact test of whether the control's fall more often (one-tailed)."""
    out = []
    steps = sorted(set(rows.loc[rows["arm"] == control, "step"]) | set(rows.loc[rows["arm"] == treatment, "step"]))
    for step in steps:
        pair = {arm: rows[(rows["arm"] == arm) & (rows["step"] == step)] for arm in (control, treatment)}
        base = {"step": int(step), "control": control, "treatment": treatment}
        missing = [arm for arm, r in pair.items() if r.empty]
        if missing:
            out.append(base | {"note": f"not probed in {', '.join(missing)}"})
            continue
        c, t = pair[control].iloc[0], pair[treatment].iloc[0]
        if not (c["updated"] and t["updated"]):
            out.append(base | {"note": "an arm updated none of the sampled prompts"})
            continue
        table = [
            [c["fell_updated"], c["updated"] - c["fell_updated"]],
            [t["fell_updated"], t["updated"] - t["fell_updated"]],
        ]
        odds, p = stats.fisher_exact(table, alternative="greater")
        out.append(
            base
            | {
                "control_updated": int(c["updated"]),
                "control_fell": int(c["fell_updated"]),
                "treatment_updated": int(t["updated"]),
                "treatment_fell": int(t["fell_updated"]),
                "odds_ratio": float(odds),
                "p": float(p),
                "note": "",
            }
        )
    return pd.DataFrame(out, columns=BETWEEN_COLUMNS)
