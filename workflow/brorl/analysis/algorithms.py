"""Does BroRL's N gain hold for other advantage estimators? One row per pair of analysis.algorithms.pairs: the pair's
N=512 arm against its N=16 arm, at the checkpoints the main comparison would choose (nearest
analysis.equal_time_hours, or the final ones), by the same paired one-tailed test over the common problems.

Pure: units and hours in, a table out (the command writes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .checkpoints import SelectionError, select_checkpoints
from .significance import compare_checkpoints

COLUMNS = [
    "estimator",
    "n16_arm",
    "n16_step",
    "n16_hours",
    "n512_arm",
    "n512_step",
    "n512_hours",
    "n",
    "n16_mean",
    "n512_mean",
    "delta",
    "ci_low",
    "ci_high",
    "p",
    "verdict",
]


def verdict(delta: float, p: float, alpha: float) -> str:
    """The paired test's reading: the gain holds (p < alpha, N=512 ahead) or is not resolved at this size."""
    return "N gain holds" if p < alpha and delta > 0 else f"not resolved (p >= {alpha:g})"


def algorithm_rows(
    units: pd.DataFrame,
    hours: Mapping[str, Mapping[int, float]],
    pairs: Sequence[Mapping[str, str]],
    *,
    target_hours: float | None,
    alpha: float,
    alternative: str,
    resamples: int,
    seed: int,
) -> pd.DataFrame:
    """One row per pair; a pair whose arms have no evaluated checkpoint says why in `verdict` (never dropped)."""
    rows = []
    for pair in pairs:
        small, large = pair["n16"], pair["n512"]
        row = {"estimator": pair["estimator"], "n16_arm": small, "n512_arm": large}
        evaluated = {arm: sorted(set(units.loc[units["arm"] == arm, "step"])) for arm in (small, large)}
        try:
            chosen = select_checkpoints(evaluated, hours, target_hours)
        except SelectionError as err:
            rows.append({**row, "verdict": f"not run: {err}"})
            continue
        pooled = compare_checkpoints(
            units,
            (small, chosen[small]),
            (large, chosen[large]),
            alpha=alpha,
            alternative=alternative,
            resamples=resamples,
            seed=seed,
        )["pooled"]
        rows.append(
            {
                **row,
                "n16_step": chosen[small],
                "n16_hours": hours.get(small, {}).get(chosen[small]),
                "n512_step": chosen[large],
                "n512_hours": hours.get(large, {}).get(chosen[large]),
                "n": pooled["n"],
                "n16_mean": pooled["baseline_mean"],
                "n512_mean": pooled["treatment_mean"],
                "delta": pooled["delta"],
                "ci_low": pooled["ci_low"],
                "ci_high": pooled["ci_high"],
                "p": pooled["p"],
                "verdict": verdict(pooled["delta"], pooled["p"], alpha),
            }
        )
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
