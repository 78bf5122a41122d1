"""The probe's two tests. Pure: pass-rate frames (brorl.probe.rates.pass_rates) in, numbers out.

* The worst drop against chance: with 64 samples per probe, the largest fall of one probe among 128 comes out at
  -17 to -20 points with no change at all. Its null distribution redraws every probe twice from the start's own
  pass rate (binomial, the probe's samples) and keeps the worst drop of each redraw; the observed worst drop's p is
  the share of redraws at or below it.
* The two arms against each other, paired by probe: the treatment's pass rate minus the control's on each probe
  (a paired one-tailed t-test over probes, alternative treatment > control, with a paired bootstrap CI), and the
  probes that fell since the start in one arm only (an exact binomial test on those discordant probes: does the
  control lose more probes than the treatment?). At two pairs of checkpoints: equal compute (nearest
  analysis.equal_time_hours of training, as the main comparison chooses) and equal optimizer steps (the last step
  both arms probed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..analysis.checkpoints import SelectionError, select_checkpoints
from ..stats.tests import paired_bootstrap_ci, paired_one_tailed
from .rates import moved

NULL_REPLICATES = 2000  # redraws of the start: the p of a worst drop is resolved to ~0.0005
COMPARE_COLUMNS = [
    "basis",
    "control",
    "control_step",
    "control_hours",
    "treatment",
    "treatment_step",
    "treatment_hours",
    "probes",
    "control_mean",
    "treatment_mean",
    "delta",
    "ci_low",
    "ci_high",
    "p",
    "control_fell",
    "treatment_fell",
    "fell_only_control",
    "fell_only_treatment",
    "p_fell",
    "note",
]


def worst_drop_null(start: pd.DataFrame, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """(replicates,) worst drop of one probe between two independent redraws of the start (no change at all)."""
    n = start["samples"].to_numpy(dtype=int)
    p = start["pass_rate"].to_numpy(dtype=float)
    before = rng.binomial(n, p, size=(replicates, len(p))) / n
    after = rng.binomial(n, p, size=(replicates, len(p))) / n
    return (after - before).min(axis=1)


def worst_drop_p(observed: float, null: np.ndarray) -> float:
    """One-sided p of an observed worst drop: the share of the null at or below it (counting the observation)."""
    return float((np.sum(null <= observed) + 1) / (null.size + 1))


def compare_arms(
    start: pd.DataFrame, control: pd.DataFrame, treatment: pd.DataFrame, z: float, resamples: int, seed: int
) -> dict:
    """The paired tests of one pair of checkpoints (frames in the same probe order)."""
    from scipy.stats import binomtest

    if list(control["id"]) != list(treatment["id"]):
        raise ValueError("the two arms' probe frames hold different probes")
    c, t = control["pass_rate"].to_numpy(float), treatment["pass_rate"].to_numpy(float)
    test = paired_one_tailed(c, t)
    ci = paired_bootstrap_ci(c, t, resamples=resamples, rng=np.random.default_rng(seed))
    fell_c, _ = moved(start, control, z)
    fell_t, _ = moved(start, treatment, z)
    only_c, only_t = int(np.sum(fell_c & ~fell_t)), int(np.sum(fell_t & ~fell_c))
    p_fell = binomtest(only_c, only_c + only_t, 0.5, alternative="greater").pvalue if only_c + only_t else 1.0
    return {
        "probes": len(c),
        "control_mean": float(c.mean()),
        "treatment_mean": float(t.mean()),
        "delta": test.delta,
        "ci_low": ci.low,
        "ci_high": ci.high,
        "p": test.p,
        "control_fell": int(fell_c.sum()),
        "treatment_fell": int(fell_t.sum()),
        "fell_only_control": only_c,
        "fell_only_treatment": only_t,
        "p_fell": float(p_fell),
        "note": test.note,
    }


def checkpoint_pairs(
    steps: Mapping[str, Sequence[int]], hours: Mapping[str, Mapping[int, float]], target_hours: float | None
) -> dict[str, dict[str, int] | str]:
    """basis -> {arm: step} for "equal compute" and "equal optimizer steps", or why that pair cannot be formed."""
    out: dict[str, dict[str, int] | str] = {}
    try:
        out["equal compute"] = select_checkpoints(steps, hours, target_hours)
    except SelectionError as error:
        out["equal compute"] = f"not run: {error}"
    common = set.intersection(*(set(s) for s in steps.values())) if steps else set()
    last = max(common, default=None)
    out["equal optimizer steps"] = (
        {arm: last for arm in steps} if last else "not run: the two arms share no probed step"
    )
    return out


def between_arms(
    frames: Mapping[tuple[str, int], pd.DataFrame],
    start: pd.DataFrame,
    control: str,
    treatment: str,
    hours: Mapping[str, Mapping[int, float]],
    target_hours: float | None,
    z: float,
    resamples: int,
    seed: int,
) -> pd.DataFrame:
    """One row per basis (COMPARE_COLUMNS); a pair that cannot be formed keeps its row with the reason in `note`."""
    steps = {arm: sorted(s for a, s in frames if a == arm and s > 0) for arm in (control, treatment)}
    rows = []
    for basis, chosen in checkpoint_pairs(steps, hours, target_hours).items():
        row = {"basis": basis, "control": control, "treatment": treatment}
        if isinstance(chosen, str):
            rows.append({**row, "note": chosen})
            continue
        cs, ts = chosen[control], chosen[treatment]
        row |= {"control_step": cs, "treatment_step": ts}
        row |= {"control_hours": hours.get(control, {}).get(cs), "treatment_hours": hours.get(treatment, {}).get(ts)}
        rows.append(row | compare_arms(start, frames[control, cs], frames[treatment, ts], z, resamples, seed))
    return pd.DataFrame(rows).reindex(columns=COMPARE_COLUMNS)
