"""SUMMARY.md's statement of what the main comparison could detect, written from the plan's inputs (analysis spec
`design`, brorl.ops.plan.power.design_record) and never from the observed effect, beside the observed difference's
confidence interval and the noise the test includes; and the paper's own test against its own tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def design_lines(design: Mapping[str, Any] | None, sig: Mapping[str, Any]) -> list[str]:
    """The design's MDE and power, the observed difference's 95% CI, and which noise the test includes."""
    if not design or "mde" not in design:
        return []
    runs = design["runs"]
    lines = [
        f"- Design (from the plan's inputs, not from the result): {runs} training run(s) per arm; minimum detectable "
        f"effect {design['mde']:.2f} points at 80% power, at a training-seed spread of {design['seed_sd']:g} points "
        f"(NOT PUBLISHED) and an evaluation se of {design['eval_se']:.3f} points per checkpoint ({design['noise']})."
    ]
    if design.get("power"):
        low, high = design["power"]
        p_low, p_high = design["predicted"]
        lines.append(
            f"  Against the gap the paper's trajectory predicts at this compute (+{p_low:.2f} to +{p_high:.2f} points) "
            f"its power is {low:.2f}-{high:.2f}: {design['verdict'].split(': ')[-1]}."
        )
    else:
        lines.append("  No published effect to power against at this scale.")
    pooled = sig.get("pooled") if sig.get("status") == "ok" else None
    if pooled:
        lines.append(
            f"- Observed: {100 * pooled['delta']:+.2f} points, 95% CI {100 * pooled['ci_low']:+.2f} to "
            f"{100 * pooled['ci_high']:+.2f} (bootstrap over problems)."
        )
    runs_test = sig.get("across_runs") or {}
    if runs_test.get("status") == "ok":
        lines.append(
            f"- Across runs ({runs_test['runs_treatment']} + {runs_test['runs_control']} runs, problems nested in "
            f"runs, df {runs_test['df']}): delta {100 * runs_test['delta']:+.2f} points, one-sided p "
            f"{runs_test['p']:.3g}; training-seed spread estimated at {100 * runs_test['seed_sd']:.2f} points."
        )
    noise = (
        "evaluation noise only: with one run per arm it compares two checkpoints, not the method (at the stated seed "
        f"spread it would call a zero effect significant {design['false_positive']:.0%} of the time)"
        if runs == 1
        else f"evaluation and training-seed noise ({runs} runs per arm)"
    )
    lines.append(f"- The test includes {noise}.")
    return lines


def paper_test_lines(design: Mapping[str, Any] | None) -> list[str]:
    """The per-instance delta the paper reports beside the one its own Tables 3-5 imply at its equal-time pair."""
    paper = (design or {}).get("paper_test")
    if not paper:
        return []
    return [
        f"- The paper's test against its own tables: it reports a per-instance delta of {paper['reported']:.2f} "
        f"points (t {paper['t']:.2f}); its Tables 3-5 at the equal-time pair (BroRL +134 at 122.8 h, ProRL +535 at "
        f"133.8 h), weighted by the problems of the {paper['benchmarks']} benchmarks evaluated here, imply "
        f"{paper['tables']:+.2f} points, {paper['driver_share']:+.2f} of it from {paper['driver']}. The paper does not "
        "say which cells its test used.",
    ]
