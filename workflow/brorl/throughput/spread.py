"""Summaries of repeated timings and the variability gate (pure; no heavy imports)."""

from __future__ import annotations

import math
import statistics


def spread(values: list[float]) -> dict:
    """Median, min, max, mean and coefficient of variation (sample sd / mean; None with fewer than 2 values)."""
    if not values:
        raise ValueError("no values to summarise")
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"non-finite timing value in {values}")
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) >= 2 and mean > 0 else None
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "mean": mean,
        "cv": cv,
        "n": len(values),
    }


def variability_verdict(cv: float | None, max_cv: float) -> dict:
    """Is a measurement steady enough to report ratios from? ``trusted`` False, with the reason, when the
    coefficient of variation exceeds ``max_cv`` or is unknown (a single timed run)."""
    if not max_cv > 0:
        raise ValueError(f"max_cv must be > 0, got {max_cv}")
    if cv is None:
        return {
            "cv": None,
            "max_cv": max_cv,
            "trusted": False,
            "reason": "one timed run: variability unknown (set throughput.repeats >= 2)",
        }
    if cv > max_cv:
        return {
            "cv": cv,
            "max_cv": max_cv,
            "trusted": False,
            "reason": f"too noisy: CV {cv:.1%} of repeated runs exceeds {max_cv:.1%}",
        }
    return {"cv": cv, "max_cv": max_cv, "trusted": True, "reason": None}
