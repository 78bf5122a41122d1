"""The decision experiment's verdicts (rule `decide`; the tests: brorl.stats.decision): F1 from the evaluated start and
release checkpoints (instance scores), F3 from the two step shapes' training metrics, each against the thresholds of
the config's `decision` block, which must still equal the block its registration record froze before any result."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..stats import decision as D

WORDS = {
    "paper": {D.SUPPORTED: "SUPPORTED", D.FALSIFIED: "FALSIFIED", D.INCONCLUSIVE: "INCONCLUSIVE"},
    "pipeline_check": {
        outcome: f"pipeline check: rule outcome {outcome}; tiny model, not a test of the paper"
        for outcome in (D.SUPPORTED, D.FALSIFIED, D.INCONCLUSIVE)
    },
}
CANNOT_SHOW = (
    "What it cannot show: N, prompts per step and the learning-rate rule change together in the paper (x2.83 lr), so "
    "a gain cannot be attributed to N; it does not test learning per sample, nor the ProRL plateau."
)


def block_digest(block: Mapping[str, Any]) -> str:
    """The digest of a decision block (its thresholds and rules), as the registration record keeps it."""
    return hashlib.sha256(json.dumps(block, sort_keys=True).encode()).hexdigest()


def registration(block: Mapping[str, Any], planned_steps: Mapping[str, int]) -> dict[str, Any]:
    """The record rule register_decision writes once, before any F1 or F3 job runs: the block, its digest, the time,
    and the F3 arms' planned steps (the pre-registered extension counts from them)."""
    return {
        "sha256": block_digest(block),
        "block": dict(block),
        "planned_steps": dict(planned_steps),
        "registered": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def changed_since_registration(block: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    """The keys of the decision block that differ from its registration (thresholds changed after the results)."""
    old, flat_old, flat_new = record.get("block", {}), {}, {}
    for source, flat in ((old, flat_old), (block, flat_new)):
        stack = [("", source)]
        while stack:
            prefix, value = stack.pop()
            if isinstance(value, Mapping):
                stack += [(f"{prefix}{k}.", v) for k, v in value.items()]
            else:
                flat[prefix.rstrip(".")] = value
    return sorted(k for k in set(flat_old) | set(flat_new) if flat_old.get(k) != flat_new.get(k))


def family_averages(units: pd.DataFrame, arm: str, step: int) -> dict[str, float]:
    """A checkpoint's family averages in points: the unweighted mean of its benchmarks' pass@1, as Table 1's."""
    rows = units[(units["arm"] == arm) & (units["step"] == step)]
    per_benchmark = rows.groupby(["family", "benchmark"])["score"].mean().groupby(level="family").mean()
    return {family: 100 * float(value) for family, value in per_benchmark.items()}


def f1_result(units: pd.DataFrame, block: Mapping[str, Any], start: tuple[str, int]) -> dict[str, Any]:
    """F1: the release's pooled gain over the start, paired over problems, its bounds and outcome; the gate."""
    f1 = block["f1"]
    keys = ["benchmark", "id"]
    base = units[(units["arm"] == start[0]) & (units["step"] == start[1])].set_index(keys)["score"]
    other = units[(units["arm"] == f1["checkpoint"]) & (units["step"] == f1["step"])].set_index(keys)["score"]
    paired = (100 * (other - base)).dropna()
    if len(paired) < 2:
        return {"status": "not run", "why": f"{f1['checkpoint']} step {f1['step']} and the start share no problems"}
    gate = D.gate_problem(family_averages(units, *start), dict(f1["paper_baseline"]), f1["gate_points"])
    test = D.paired_gain(list(paired), f1["threshold"], block["alpha"])
    return {"status": "ok", "gate": gate, **test}


def step_rates(records: Sequence[Mapping[str, Any]], gpus: int, warmup: int) -> tuple[list[float], list[float]]:
    """(kept samples per GPU-hour, step seconds) of each step after the warm-up."""
    kept = [r for r in records if r["step"] > warmup and r.get("step_s")]
    return [r["samples"] / (r["step_s"] / 3600 * gpus) for r in kept], [r["step_s"] for r in kept]


def f3_result(metrics: Mapping[str, Sequence[Mapping]], block: Mapping[str, Any], gpus: int) -> dict[str, Any]:
    """F3: the ratio of the shapes' rates, its bounds and outcome, and whether the extension is due."""
    f3 = block["f3"]
    rates, times = {}, {}
    for role in ("treatment", "control"):
        rates[role], times[role] = step_rates(metrics.get(f3[role], []), gpus, f3["warmup_steps"])
    try:
        test = D.rate_ratio(rates["treatment"], rates["control"], f3["threshold"], block["alpha"])
    except ValueError as err:
        return {"status": "not run", "why": str(err)}
    cv = max(D.variation(times["treatment"]), D.variation(times["control"]))
    extend = cv > f3["cv_extend"]
    return {"status": "ok", "cv": cv, "extend": extend, **test}


def decide(
    units: pd.DataFrame,
    metrics: Mapping[str, Sequence[Mapping]],
    block: Mapping[str, Any],
    record: Mapping[str, Any],
    start: tuple[str, int],
    gpus: int,
) -> dict[str, Any]:
    """Both tests against the registered thresholds; their verdicts withheld when the block changed since."""
    changed = changed_since_registration(block, record)
    f1, f3 = f1_result(units, block, start), f3_result(metrics, block, gpus)
    if f3.get("extend"):
        due = {
            role: record.get("planned_steps", {}).get(block["f3"][role], 0)
            + block["f3"]["extension"][role]
            - block["f3"]["warmup_steps"]
            for role in ("treatment", "control")
        }
        measured = {"treatment": f3["steps_treatment"], "control": f3["steps_control"]}
        f3["extension_done"] = all(measured[r] >= due[r] for r in due)
    return {"mode": block["mode"], "changed": changed, "registered": record.get("registered"), "f1": f1, "f3": f3}


def verdict(result: Mapping[str, Any], test: str) -> str:
    """The words of one test's outcome, or why it has none."""
    part = result[test]
    if result["changed"]:
        return f"withheld: thresholds changed after registration ({', '.join(result['changed'])})"
    if part["status"] != "ok":
        return f"not run: {part['why']}"
    words = WORDS[result["mode"]][part["outcome"]]
    if test == "f1" and part["gate"]:
        return words if result["mode"] != "paper" else f"no verdict: {part['gate']}"
    if test == "f3" and part.get("extend") and not part.get("extension_done"):
        due = f"step-time CV {part['cv']:.2f} above the registered bound"
        if result["mode"] != "paper":  # a pipeline check shows the rule's outcome and that the extension would be due
            return f"{words} (the extension would be due first: {due})"
        return f"extension due first ({due}): train the extra steps"
    return words


def decision_rows(result: Mapping[str, Any], block: Mapping[str, Any]) -> pd.DataFrame:
    """Table rows: each test's statistic, bounds, threshold, published values and verdict."""
    f1, f3 = result["f1"], result["f3"]
    rows = [
        {
            "test": "F1: released weights' pooled gain over the start (points)",
            "estimate": f1.get("gain"),
            "lower": f1.get("lower"),
            "upper": f1.get("upper"),
            "threshold": block["f1"]["threshold"],
            "published": f"{block['f1']['published_low']} (ProRL +535) / {block['f1']['published_high']} (BroRL +191)",
            "verdict": verdict(result, "f1"),
            "note": f1.get("gate") or ("validity gate passed" if f1.get("status") == "ok" else ""),
        },
        {
            "test": "F3: kept samples per GPU-hour, BroRL step / ProRL step",
            "estimate": f3.get("ratio"),
            "lower": f3.get("lower"),
            "upper": f3.get("upper"),
            "threshold": block["f3"]["threshold"],
            "published": f"1.0 (no advantage) / {block['f3']['published']} (Table 1)",
            "verdict": verdict(result, "f3"),
            "note": f"step-time CV {f3['cv']:.2f} (extension above {block['f3']['cv_extend']})" if "cv" in f3 else "",
        },
    ]
    return pd.DataFrame(rows)


def decision_lines(result: Mapping[str, Any], block: Mapping[str, Any]) -> list[str]:
    """SUMMARY.md's section."""
    rows = decision_rows(result, block)
    lines = [
        "## The decision experiment",
        "",
        f"Thresholds registered {result['registered']} (results/decision/registration.json); one-sided bounds at "
        f"{1 - block['alpha']:.0%}.",
        "",
    ]
    for row in rows.itertuples():
        estimate = (
            "not measured" if pd.isna(row.estimate) else f"{row.estimate:.3g} ({row.lower:.3g} to {row.upper:.3g})"
        )
        lines.append(f"- {row.test}: {estimate}, threshold {row.threshold:g}: **{row.verdict}**.")
    return lines + ["", CANNOT_SHOW, ""]


def read_metrics_files(paths: Sequence[Path]) -> dict[str, list[dict]]:
    """Arm (its folder's name) -> its metrics records."""
    from ..training.metrics import read_metrics

    return {Path(p).parent.name: read_metrics(p) for p in paths}
