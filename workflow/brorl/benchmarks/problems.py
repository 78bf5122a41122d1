"""Problems per evaluated benchmark, for the evaluation cost model: the registry's expected_rows, or for a Reasoning
Gym category its tasks (reasoning-gym) x evaluation.reasoning_gym.items_per_task; capped by evaluation.max_items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ProblemCountError(ValueError):
    """A benchmark whose size the plan cannot know before it is prepared."""


def benchmark_problems(config: Mapping[str, Any], registry: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Problems of every benchmark of evaluation.benchmarks, in the config's order (`registry`: one already loaded)."""
    if registry is None:
        from .registry import load_registry

        registry = load_registry()
    evaluation = config["evaluation"]
    cap = evaluation.get("max_items")
    counts = {}
    for name in evaluation["benchmarks"]:
        spec = registry[name]
        if spec.expected_rows is not None:
            count = spec.expected_rows
        elif spec.family == "reasoning_gym" and spec.tasks:
            count = spec.tasks * int(evaluation["reasoning_gym"]["items_per_task"])
        else:
            raise ProblemCountError(f"{spec.path}: no expected_rows, so the plan cannot size benchmark {name}")
        counts[name] = min(count, cap) if cap is not None else count
    return counts
