"""The analysis section: the compared arms, the algorithm pairs and the N sweep name arms that exist and are
evaluated where the figures read them; `switch_on_sweep` enables the arms those switches ask for."""

from __future__ import annotations


def switch_on_sweep(cfg: dict) -> None:
    """analysis.n_sweep.enabled: true enables every arm of the sweep and its controls (one key for the whole N
    sweep), and analysis.algorithms.enabled every arm of its pairs; unknown names are left to check_analysis, which
    names them."""
    sweep = (cfg.get("analysis") or {}).get("n_sweep") or {}
    if not sweep.get("enabled"):
        sweep = {}
    wanted = set(sweep.get("arms", [])) | set(sweep.get("controls", []))
    algorithms = (cfg.get("analysis") or {}).get("algorithms") or {}
    if algorithms.get("enabled"):
        wanted |= {p.get(k) for p in algorithms.get("pairs", []) if isinstance(p, dict) for k in ("n16", "n512")}
    for arm in cfg.get("arms", []):
        if isinstance(arm, dict) and arm.get("name") in wanted:
            arm["enabled"] = True


def check_analysis(cfg: dict) -> list[str]:
    """The compared arms, the algorithm pairs, the first cluster arm and the N sweep name arms that exist, train
    with the pair's estimator and are evaluated at the sweep's step."""
    arms = {a["name"]: a for a in cfg["arms"] if isinstance(a, dict) and "name" in a}
    comparison, sweep, problems = cfg["analysis"]["comparison"], cfg["analysis"]["n_sweep"], []
    for role in ("treatment", "control"):
        if comparison[role] not in arms:
            problems.append(
                f"config key 'analysis.comparison.{role}': {comparison[role]!r} is not the name of an "
                f"arm (arms: {', '.join(arms)})"
            )
    if comparison["treatment"] == comparison["control"]:
        problems.append("config key 'analysis.comparison.control': must differ from analysis.comparison.treatment")
    algorithms = cfg["analysis"]["algorithms"]
    for j, pair in enumerate(algorithms["pairs"] if algorithms["enabled"] else []):  # presets replace the arms
        for role in ("n16", "n512"):
            arm = arms.get(pair[role])
            key = f"analysis.algorithms.pairs[{j}].{role}"
            if arm is None:
                problems.append(
                    f"config key '{key}': {pair[role]!r} is not the name of an arm "
                    "(workflow/presets/algorithms.yaml adds the pairs' arms)"
                )
            elif (arm.get("advantage_estimator") or cfg["training"]["advantage_estimator"]) != pair["estimator"]:
                problems.append(
                    f"config key '{key}': arm {pair[role]!r} trains with "
                    f"{arm.get('advantage_estimator') or cfg['training']['advantage_estimator']!r}, not the pair's "
                    f"estimator {pair['estimator']!r}"
                )
    first = cfg["training"]["cluster"]["first_arm"]
    if first is not None and not (first in arms and arms[first].get("enabled", True)):
        problems.append(
            f"config key 'training.cluster.first_arm': {first!r} is not an enabled arm "
            f"(enabled: {', '.join(n for n, a in arms.items() if a.get('enabled', True))})"
        )
    for j, name in enumerate(sweep["controls"]):
        if name not in arms:
            problems.append(f"config key 'analysis.n_sweep.controls[{j}]': {name!r} is not the name of an arm")
    for j, name in enumerate(sweep["arms"]):
        if name not in arms:
            problems.append(
                f"config key 'analysis.n_sweep.arms[{j}]': {name!r} is not the name of an arm "
                "(workflow/presets/n_sweep.yaml adds the sweep's arms)"
            )
        elif arms[name]["continued_steps"] < sweep["step"]:
            problems.append(
                f"config key 'analysis.n_sweep.step': {sweep['step']} is beyond the continued_steps "
                f"({arms[name]['continued_steps']}) of sweep arm {name!r}"
            )
        else:  # the figure plots the evaluated checkpoints of that step: another step draws an empty plot
            evaluated = _evaluated_steps(cfg, name)
            if evaluated is not None and sweep["step"] not in evaluated:
                problems.append(
                    f"config key 'analysis.n_sweep.step': step {sweep['step']} of sweep arm {name!r} is not "
                    f"evaluated (its evaluated steps: {list(evaluated)}), so the N-sweep figure would be empty"
                )
    return problems


def _evaluated_steps(cfg: dict, name: str) -> tuple[int, ...] | None:
    """The arm's evaluated steps, or None where the recipe cannot be built (reported by the other checks)."""
    from ..training.recipe import RecipeError, evaluation_steps

    try:
        return evaluation_steps(cfg, name)
    except (RecipeError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def check_decision(cfg: dict) -> list[str]:
    """The decision experiment's thresholds lie strictly between the two published values they separate, and its
    tests name a checkpoint that is evaluated and arms that train (only when it is enabled)."""
    block = cfg["decision"]
    if not block["enabled"]:
        return []
    f1, f3, problems = block["f1"], block["f3"], []
    if not f1["published_low"] < f1["threshold"] < f1["published_high"]:
        problems.append(
            f"config key 'decision.f1.threshold': {f1['threshold']} is not between the published gains it separates "
            f"({f1['published_low']} and {f1['published_high']})"
        )
    if not 1.0 < f3["threshold"] < f3["published"]:
        problems.append(
            f"config key 'decision.f3.threshold': {f3['threshold']} is not between no advantage (1.0) and the "
            f"published ratio {f3['published']}"
        )
    missing = decision_missing(cfg)
    if missing and block["mode"] == "pipeline_check":
        return problems  # the tiny preset's check is off where a test left out its arms (decision_missing says so)
    arms = {a["name"] for a in cfg["arms"] if a.get("enabled", True)}
    models = {m["name"] for m in cfg["evaluation"]["models"]}
    if f1["checkpoint"] not in arms | models:
        problems.append(
            f"config key 'decision.f1.checkpoint': {f1['checkpoint']!r} is neither an evaluation model nor an enabled "
            f"arm (models: {', '.join(sorted(models)) or 'none'}; arms: {', '.join(sorted(arms)) or 'none'})"
        )
    for role in ("treatment", "control"):
        if f3[role] not in arms:
            problems.append(
                f"config key 'decision.f3.{role}': {f3[role]!r} is not an enabled arm (arms: {', '.join(sorted(arms))})"
            )
    return problems


def decision_missing(cfg: dict) -> list[str]:
    """The checkpoint and arms of the decision block that this config does not evaluate or train."""
    block = cfg["decision"]
    arms = {a["name"] for a in cfg["arms"] if a.get("enabled", True)}
    models = {m["name"] for m in cfg["evaluation"]["models"]}
    wanted = [block["f1"]["checkpoint"], block["f3"]["treatment"], block["f3"]["control"]]
    return [name for name in wanted if name not in arms | models]


def decision_active(cfg: dict) -> bool:
    """The decision experiment runs: enabled, and (a pipeline check) its arms and checkpoint are in this run."""
    return bool(cfg["decision"]["enabled"]) and not decision_missing(cfg)
