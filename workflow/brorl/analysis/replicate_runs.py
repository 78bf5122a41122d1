"""The main comparison across training runs when its arms have replicates (config arms[].replicates >= 2): each run's
pooled pass@1 at the compared step, tested with brorl.stats.across_runs (problems nested in runs), the seed spread
estimated. With one run per arm it says the paired test compares two checkpoints, not the method."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd


def runs_of(spec: Mapping[str, Any], arm: str) -> list[str]:
    """An arm and its replicates (arms whose replicate_of names it), in config order."""
    return [arm] + [a["name"] for a in spec["arms"] if a.get("replicate_of") == arm]


def run_scores(units: pd.DataFrame, arm: str, step: int) -> tuple[float, float] | None:
    """(pooled pass@1, its evaluation variance: the samples' variance within each problem) of one run's checkpoint."""
    rows = units[(units["arm"] == arm) & (units["step"] == step)]
    if rows.empty:
        return None
    within = (rows["score_var"].fillna(0) / rows["n_samples"]).sum() / len(rows) ** 2
    return float(rows["score"].mean()), float(within)


def across_runs(units: pd.DataFrame, spec: Mapping[str, Any], result: Mapping[str, Any], alpha: float) -> dict:
    """The across-run test of the main comparison at its selected checkpoints, or why there is none."""
    from ..stats.across_runs import across_runs_test

    roles = spec["analysis"]["comparison"]
    runs = {role: runs_of(spec, roles[role]) for role in ("treatment", "control")}
    if min(len(r) for r in runs.values()) < 2:
        return {
            "status": "one run per arm",
            "note": "the paired test over problems compares two checkpoints, not the method: training-seed noise is in "
            "no test (give the arms replicates: 2 or more)",
        }
    if result.get("status") != "ok":
        return {"status": "not run", "note": result.get("reason", "no compared checkpoints")}
    scores: dict[str, list[tuple[float, float]]] = {}
    for role, names in runs.items():
        step = int(result[role]["step"])
        found = {name: run_scores(units, name, step) for name in names}
        missing = [name for name, s in found.items() if s is None]
        if missing:
            return {"status": "not run", "note": f"no evaluated step {step} for {', '.join(missing)}"}
        scores[role] = list(found.values())
    eval_var = sum(v for role in scores.values() for _, v in role) / sum(len(r) for r in scores.values())
    test = across_runs_test([s for s, _ in scores["treatment"]], [s for s, _ in scores["control"]], eval_var, alpha)
    return {"status": "ok", "runs": runs, **test}
