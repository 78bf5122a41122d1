"""``python -m brorl.analysis significance``: the paper's paired test at equal compute (twice), the learning effects,
significance.json and its table."""

from __future__ import annotations

import argparse
import json

from .cli_inputs import clocks_of, evaluated_steps, read_units, spec_of


def cmd_significance(a: argparse.Namespace) -> None:
    from ..reporting.provenance import provenance
    from ..reporting.tables import write_table
    from .checkpoints import SelectionError, clock_statement
    from .equal_compute import equal_hours, equal_samples
    from .paper import load_paper
    from .replicate_runs import across_runs
    from .significance import learning_effects, paper_comparison

    spec, paper = spec_of(a), load_paper()
    cfg = spec["analysis"]
    units = read_units(a.units)
    clocks = clocks_of(a)
    roles = cfg["comparison"]
    evaluated = evaluated_steps(units, roles.values())
    test = {  # both comparisons' settings (the arms' also takes analysis.alternative)
        "alpha": cfg["alpha"],
        "correction": cfg["correction"],
        "resamples": cfg["bootstrap"]["resamples"],
        "seed": cfg["bootstrap"]["seed"],
    }
    result = {
        "status": "ok",
        "alpha": cfg["alpha"],
        "alternative": cfg["alternative"],
        "correction": cfg["correction"],
        "paper": paper["statistics"],
        "clock": clock_statement(clocks["refill"]),  # which clock the hours are, and each arm's refill mode
    }
    try:
        result.update(equal_hours(units, roles, evaluated, clocks, cfg["equal_time_hours"], cfg["alternative"], test))
        result["versus_paper"] = paper_comparison(result["pooled"], paper["statistics"])
        result["equal_samples"] = equal_samples(units, roles, evaluated, clocks, cfg["alternative"], test)
    except SelectionError as err:
        result.update(status="not run", reason=str(err))
    result["across_runs"] = across_runs(units, spec, result, cfg["alpha"])  # seeds as an axis (arms' replicates)
    result["lr_ablation"] = lr_ablation(units, spec, clocks, test)
    # the learning effect is one-tailed always: the question is whether training improved the start model
    base = (spec["base_arm"], spec["start_step"])
    arms = [arm["name"] for arm in spec["arms"]]
    result["learning"] = learning_effects(units, base, arms, **test)
    result["models"] = learning_effects(units, base, [m["name"] for m in spec.get("models", [])], **test)
    result["provenance"] = provenance()
    a.out_json.parent.mkdir(parents=True, exist_ok=True)
    a.out_json.write_text(json.dumps(result, indent=2) + "\n")

    import pandas as pd

    cols = [
        "level",
        "group",
        "n",
        "delta",
        "ci_low",
        "ci_high",
        "ci_low_tasks",
        "ci_high_tasks",
        "t",
        "p",
        "p_holm",
        "p_adjusted",
        "effect_size",
        "baseline_mean",
        "treatment_mean",
        "reject",
        "reject_holm",
    ]
    if result["status"] == "ok":
        recs = [{"level": "pooled", **result["pooled"]}]
        recs += [{"level": lvl, **r} for lvl in ("family", "benchmark") for r in result[lvl]]
        recs.append(
            {
                "level": "paper",
                "group": "all (paper)",
                "delta": paper["statistics"]["delta"],
                "t": paper["statistics"]["t"],
                "p": paper["statistics"]["p"],
            }
        )
        recs += _equal_compute_rows(result)
        table = pd.DataFrame(recs).reindex(columns=cols)
    else:
        table = pd.DataFrame([{"level": "pooled", "group": f"not run: {result['reason']}"}]).reindex(columns=cols)
    write_table(
        table,
        a.out_md,
        a.out_csv,
        a.out_tex,
        title="Paired one-tailed t-test, treatment vs control",
        printed_groups={
            "95% CI": ("ci_low", "ci_high"),
            "95% CI, tasks resampled": ("ci_low_tasks", "ci_high_tasks"),
            "p Holm / adjusted": ("p_holm", "p_adjusted"),
            "mean control / treatment": ("baseline_mean", "treatment_mean"),
            "reject (raw / Holm)": ("reject", "reject_holm"),
        },
    )
    pooled = result.get("pooled")
    print(
        f"significance: {result['status']}"
        + (
            f", delta {pooled['delta']:.4g}, p {pooled['p']:.3g}, n {pooled['n']}"
            if pooled
            else f" ({result.get('reason')})"
        )
        + f" -> {a.out_json}"
    )


def lr_ablation(units, spec: dict, clocks: dict, test: dict) -> dict | None:
    """The control against the lr-rule ablation arm (analysis.lr_ablation) at equal compute, when that arm is
    enabled: status, the compared checkpoints and the pooled row; status "off" when the named arm is not enabled
    (None when unset)."""
    from .checkpoints import SelectionError
    from .equal_compute import equal_hours

    cfg = spec["analysis"]
    arm = cfg.get("lr_ablation")
    if arm is None:
        return None
    if arm not in {a["name"] for a in spec["arms"]}:
        return {"status": "off", "arm": arm}
    roles = {"control": cfg["comparison"]["control"], "treatment": arm}
    evaluated = evaluated_steps(units, roles.values())
    try:
        rows = equal_hours(units, roles, evaluated, clocks, cfg["equal_time_hours"], cfg["alternative"], test)
    except (SelectionError, ValueError) as err:
        return {"status": "not run", "arm": arm, "reason": str(err)}
    return {"status": "ok", **{k: rows[k] for k in ("control", "treatment", "selection", "pooled")}}


def _equal_compute_rows(result: dict) -> list[dict]:
    """The significance table's rows beside the pooled test: the equal-samples comparison, and the unequal-compute
    flag where the chosen checkpoints' hours differ by more than 10%."""
    rows = []
    same = result.get("equal_samples") or {}
    if same.get("status") == "ok":
        rows.append(
            {
                "level": "equal samples",
                "group": f"pooled, {same['samples_k']:.4g}k generated samples",
                **{k: same["pooled"].get(k) for k in ("n", "delta", "ci_low", "ci_high", "t", "p", "reject")},
            }
        )
    ablation = result.get("lr_ablation") or {}
    if ablation.get("status") == "ok":
        rows.append(
            {
                "level": "lr ablation",
                "group": f"pooled, {ablation['treatment']['arm']} vs {ablation['control']['arm']}",
                **{k: ablation["pooled"].get(k) for k in ("n", "delta", "ci_low", "ci_high", "t", "p", "reject")},
            }
        )
    flag = result["selection"].get("flag")
    if flag:
        rows.append({"level": "flag", "group": flag})
    return rows
