"""Does BroRL's N gain hold for other advantage estimators? One row per pair of analysis.algorithms.pairs: the pair's
N=512 arm against its N=16 arm, at the checkpoints the main comparison would choose (nearest
analysis.equal_time_hours, or the final ones), by the same paired one-tailed test over the common problems, the
verdict read on Holm's adjusted p over the rows (one family of tests: "the gain holds for estimator X").

Estimators differ in step size, not only in their baseline: GRPO's advantage of a lone success is ~22.6 at N=512 and
3.75 at N=16, RLOO's and Dr. GRPO's are not normalised, and the sqrt learning-rate rule was derived for a batch-
normalised estimator. So each arm's mean lr x RMS advantage (the size of its policy-gradient step, from metrics.jsonl)
and its mean gradient norm stand beside the test, over the steps up to the compared checkpoint;
training.advantage_batch_norm every_estimator puts every estimator on the same scale.

Pure: units, hours and step sizes in, a table out (the command writes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ..stats.tests import holm
from .checkpoints import SelectionError, select_checkpoints
from .significance import compare_checkpoints

# what the table's note says of every run: the analysis cannot see seeds it was not given, nor change the loss
NOTE = (
    'One seed per arm: a row\'s test is over problems and samples, not over training runs. "dr_grpo" is OpenRLHF '
    "0.11.2's estimator of that name (reward minus the group mean, no std division) trained with this run's "
    "token-mean loss, not Dr. GRPO's constant-normaliser loss. Step size = lr x RMS advantage (token-weighted), "
    "mean over the steps up to the compared checkpoint; the verdict reads Holm's p over the rows."
)

COLUMNS = [
    "estimator",
    "n16_arm",
    "n16_step",
    "n16_hours",
    "n512_arm",
    "n512_step",
    "n512_hours",
    "n16_step_size",
    "n512_step_size",
    "n16_grad_norm",
    "n512_grad_norm",
    "n",
    "n16_mean",
    "n512_mean",
    "delta",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "verdict",
]


def step_size(steps: Mapping[int, Mapping[str, float | None]], up_to: int) -> tuple[float | None, float | None]:
    """(mean lr x adv_rms, mean grad_norm) over an arm's steps <= up_to; None where no step recorded it (runs
    trained before metrics schema 8)."""

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    kept = [v for s, v in steps.items() if s <= up_to]
    sizes = [v["lr"] * v["adv_rms"] for v in kept if v.get("lr") is not None and v.get("adv_rms") is not None]
    return mean(sizes), mean([v["grad_norm"] for v in kept if v.get("grad_norm") is not None])


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
    step_sizes: Mapping[str, Mapping[int, Mapping[str, float | None]]] | None = None,
) -> pd.DataFrame:
    """One row per pair; a pair whose arms have no evaluated checkpoint says why in `verdict` (never dropped).
    `step_sizes`: arm -> {step: {lr, adv_rms, grad_norm}} (brorl.analysis.checkpoints.step_sizes)."""
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
        sizes = {arm: step_size((step_sizes or {}).get(arm, {}), chosen[arm]) for arm in (small, large)}
        rows.append(
            {
                **row,
                "n16_step_size": sizes[small][0],
                "n512_step_size": sizes[large][0],
                "n16_grad_norm": sizes[small][1],
                "n512_grad_norm": sizes[large][1],
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
            }
        )
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    tested = table["p"].notna()
    table.loc[tested, "p_holm"] = holm(table.loc[tested, "p"].to_numpy(dtype=float))
    for i in table.index[tested]:
        table.loc[i, "verdict"] = verdict(table.loc[i, "delta"], table.loc[i, "p_holm"], alpha)
    return table
