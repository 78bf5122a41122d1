"""The headline comparison at equal compute, twice (pure: units and clocks in, a JSON-ready dict out).

1. Equal training hours: each arm's evaluated checkpoint nearest t* = min(``analysis.equal_time_hours``, the hours
   every arm reached) on the training clock (brorl.analysis.checkpoints), flagged when the chosen hours still differ
   by more than 10%.
2. Equal generated samples: the same test at the checkpoints nearest the generated samples every arm reached; it
   needs no hardware clock, so a slow node or a crashed segment cannot move it.

With ``equal_time_hours`` null (the tiny preset) the first comparison takes the final checkpoints, and both arms'
hours and generated samples are reported beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .checkpoints import SelectionError, equal_point, nearest_checkpoints, unequal_compute
from .significance import compare_checkpoints


def _side(arm: str, step: int, clocks: Mapping[str, Mapping]) -> dict[str, Any]:
    """What the compared checkpoint of ``arm`` cost on each clock, and how its steps were refilled."""
    return {
        "arm": arm,
        "step": step,
        "hours": clocks["hours"].get(arm, {}).get(step),
        "samples_k": clocks["samples"].get(arm, {}).get(step),
        "startup_hours": clocks["startup"].get(arm),
        "refill": clocks.get("refill", {}).get(arm),
    }


def equal_hours(
    units: pd.DataFrame,
    roles: Mapping[str, str],
    evaluated: Mapping[str, list[int]],
    clocks: Mapping[str, Mapping],
    target: float | None,
    alternative: str,
    test: Mapping[str, Any],
) -> dict[str, Any]:
    """The significance result's equal-hours part: control/treatment (arm, step, hours, samples_k, startup_hours),
    selection (rule, t*, the flag) and the test's rows. ``clocks``: hours, samples (thousands) and startup per arm.
    Raises SelectionError when no checkpoint can be chosen."""
    hours = clocks["hours"]
    point = equal_point(evaluated, hours, target)
    chosen = nearest_checkpoints(evaluated, hours, point)
    out: dict[str, Any] = {role: _side(arm, chosen[arm], clocks) for role, arm in roles.items()}
    if target is None:
        rule = "final checkpoints"
    else:
        rule = f"checkpoints nearest {point:.4g} training hours (the nearer of {target} h and what every arm reached)"
    flag = unequal_compute({arm: out[role]["hours"] for role, arm in roles.items()}) if target is not None else None
    out["selection"] = {
        "rule": rule,
        "equal_time_hours": target,
        "t_star_hours": point,
        "flag": flag,
        "evaluated_steps": evaluated,
    }
    out.update(
        compare_checkpoints(
            units,
            (roles["control"], chosen[roles["control"]]),
            (roles["treatment"], chosen[roles["treatment"]]),
            alternative=alternative,
            **test,
        )
    )
    return out


def equal_samples(
    units: pd.DataFrame,
    roles: Mapping[str, str],
    evaluated: Mapping[str, list[int]],
    clocks: Mapping[str, Mapping],
    alternative: str,
    test: Mapping[str, Any],
) -> dict[str, Any]:
    """The same test at the checkpoints nearest the generated samples every arm reached: status, control,
    treatment, samples_k (the point) and the pooled row (or the reason it was not run)."""
    samples = clocks["samples"]
    try:
        point = equal_point(evaluated, samples, float("inf"))
        chosen = nearest_checkpoints(evaluated, samples, point)
        rows = compare_checkpoints(
            units,
            (roles["control"], chosen[roles["control"]]),
            (roles["treatment"], chosen[roles["treatment"]]),
            alternative=alternative,
            **test,
        )
    except (SelectionError, ValueError) as err:
        return {"status": "not run", "reason": str(err).replace("(wall_s)", "(generated_samples)")}
    sides = {role: _side(arm, chosen[arm], clocks) for role, arm in roles.items()}
    return {"status": "ok", "samples_k": point, **sides, "pooled": rows["pooled"]}
