"""The throughput section's checks across keys, which brorl.config composes: one plain-words line per offending key;
imports nothing from brorl.config."""

from __future__ import annotations


def check_layouts(cfg: dict) -> list[str]:
    """Table 2 compares the compared arms' N: each of them needs a layout with its N (changing an arm's N in one
    place leaves the benchmark measuring the old one)."""
    bench = cfg.get("throughput") or {}
    if not bench.get("enabled"):
        return []
    try:
        arms = {arm["name"]: arm for arm in cfg["arms"] if arm.get("enabled", True)}
        measured = {layout["n"] for layout in bench["layouts"]}
        comparison, gpus = cfg["analysis"]["comparison"], bench["gpus"]
    except (KeyError, TypeError):
        return []  # the schema reports a malformed section
    problems = []
    for role in ("control", "treatment"):
        arm = arms.get(comparison.get(role))
        if arm is None or arm["n"] in measured:
            continue
        share = max(1, arm["prompts_per_step"] // gpus)
        problems.append(
            f"config key 'throughput.layouts': no layout has n = {arm['n']}, the N of {arm['name']} "
            f"(analysis.comparison.{role}); Table 2 measures the compared arms' N: add {{prompts: {share}, n: "
            f"{arm['n']}}} (its per-GPU share of a step on throughput.gpus = {gpus})"
        )
    return problems
