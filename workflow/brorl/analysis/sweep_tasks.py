"""The N sweep task by task (pure): is N = 512 "not large enough for some harder problems" (Section 4.2.2)?

For every arm of ``analysis.n_sweep.arms`` evaluated at the sweep's step: each task's change since the start
checkpoint (pass@1 points) with the paper's paired one-tailed test over the task's problems; for the largest N, a
verdict per task as Figure 4's classes give one (improves / worse / no gain / undetermined, Holm over the tasks:
brorl.analysis.figure4_rule). Set beside the tasks BroRL did not improve, it says whether a larger N moves them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..stats.tests import paired_one_tailed
from .figure4_rule import change_verdicts


def sweep_columns(
    units: pd.DataFrame,
    sweep: Sequence[Mapping],
    step: int,
    base: tuple[str, int],
    alpha: float,
    margin: float,
) -> pd.DataFrame:
    """task, sweep_<arm> (change in points) per evaluated sweep arm, and for the largest N's arm
    sweep_largest_arm, sweep_largest_p and sweep_largest_verdict (empty frame when no sweep arm was evaluated)."""
    present = [a for a in sweep if ((units["arm"] == a["name"]) & (units["step"] == step)).any()]
    if not present:
        return pd.DataFrame(columns=["task"])
    start = units[(units["arm"] == base[0]) & (units["step"] == base[1])]
    rows: dict[str, dict] = {}
    largest = max(present, key=lambda a: a["n"])
    for arm in present:
        mine = units[(units["arm"] == arm["name"]) & (units["step"] == step)]
        pairs = start.merge(mine, on=["benchmark", "id", "task"], suffixes=("_s", "_a"))
        for task, g in pairs.groupby("task", sort=True):
            test = paired_one_tailed(g["score_s"].to_numpy(), g["score_a"].to_numpy())
            row = rows.setdefault(task, {"task": task})
            row[f"sweep_{arm['name']}"] = 100 * test.delta
            if arm is largest:
                row.update(sweep_largest_arm=arm["name"], sweep_largest_p=test.p, _se=100 * test.se, _n=test.n)
    out = pd.DataFrame(list(rows.values()))
    if "sweep_largest_p" in out:
        out["sweep_largest_verdict"] = change_verdicts(
            out["sweep_largest_p"].to_numpy(dtype=float),
            out[f"sweep_{largest['name']}"].to_numpy(dtype=float),
            out["_se"].to_numpy(dtype=float),
            out["_n"].to_numpy(dtype=float) - 1,
            alpha,
            margin,
        )
    return out.drop(columns=["_se", "_n"], errors="ignore").replace({np.nan: None})
