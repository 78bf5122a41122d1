"""Every benchmark a config names has its registry entry: the check brorl.config composes."""

from __future__ import annotations


def check_benchmarks(cfg: dict) -> list[str]:
    """Each benchmark named (evaluation.benchmarks, probe.benchmark) must have its registry entry
    (workflow/benchmarks/<name>.yaml): the registry, not the schema, is the list of benchmarks, so adding one is adding
    its file."""
    from .registry import REGISTRY_DIR, benchmark_names

    known = benchmark_names()
    named = [(f"evaluation.benchmarks[{i}]", name) for i, name in enumerate(cfg["evaluation"]["benchmarks"])]
    named.append(("probe.benchmark", cfg["probe"]["benchmark"]))
    return [
        f"config key '{key}': unknown benchmark {name!r}: no registry entry "
        f"{REGISTRY_DIR / name}.yaml (registered: {', '.join(known)})"
        for key, name in named
        if isinstance(name, str) and name not in known
    ]
