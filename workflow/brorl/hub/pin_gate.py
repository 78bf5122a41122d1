"""The pin gate's list for one run: which of its hub downloads are not pinned to a commit (brorl.hub.pins), for the
DAG's warning (workflow/rules/helpers/data.smk), the stop before submission (onstart) and `make plan`. A benchmark
counts only when it is prepared from the hub here (its local copy, when present, is used instead)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ..benchmarks.prepare import source_kind
from ..training.recipe import enabled_arms
from .pins import hub_sources, unpinned_report


def unpinned_of_run(
    config: Mapping[str, Any],
    registry: Mapping[str, Any],
    *,
    benchmarks: Collection[str] | None = None,
    training: bool | None = None,
    base_model: bool = True,
) -> str:
    """unpinned_report of the run's hub sources ("" with allow_unpinned). By default every source the config
    names: all evaluated benchmarks, the training mix when an arm trains, the start checkpoint; the DAG's view passes
    the benchmarks, training and start checkpoint its jobs would actually download."""
    if config["allow_unpinned"]:
        return ""
    return unpinned_report(
        hub_sources(
            config,
            registry,
            lambda name: (benchmarks is None or name in benchmarks) and source_kind(registry[name]) == "hub",
            training=bool(enabled_arms(config)) if training is None else training,
            base_model=base_model,
        )
    )
