"""The probe section's checks across keys (the regular and the in-batch probe), for brorl.config."""

from __future__ import annotations


def check_probe(cfg: dict) -> list[str]:
    """A probe chosen by the start's pass rate needs the start's evaluation of its benchmark."""
    probe = cfg["probe"]
    if not probe["enabled"] or probe["select"] != "start_pass_rate":
        return []
    problems = []
    if probe["benchmark"] not in cfg["evaluation"]["benchmarks"]:
        problems.append(
            f"config key 'probe.benchmark': {probe['benchmark']!r} is not in evaluation.benchmarks, but probe.select "
            "start_pass_rate chooses the probes by the start checkpoint's evaluation of it: add it there, or set "
            "probe.select: first"
        )
    low, high = probe["pass_rate_band"]
    if not low < high:
        problems.append(f"config key 'probe.pass_rate_band': {[low, high]} must be [low, high] with low < high")
    return problems


def check_in_batch(cfg: dict) -> list[str]:
    """Every in-batch probed step must exist in every arm that trains (a step beyond an arm's end is refused, not
    skipped: the between-arm test pairs the arms step by step)."""
    probe = cfg["probe"]
    steps = probe["in_batch"]["steps"] if probe["enabled"] else []
    return [
        f"config key 'probe.in_batch.steps': step {step} is beyond arm {arm['name']!r}'s "
        f"{arm['continued_steps']} continued steps: lower it or leave it out"
        for arm in cfg["arms"]
        if arm["enabled"]
        for step in steps
        if step > arm["continued_steps"]
    ]
