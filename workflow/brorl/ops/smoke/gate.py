"""The smoke gate: training on GPUs at paper scale starts only after a passed GPU smoke run
(training.cluster.require_smoke; docs/cluster.md#the-gpu-smoke-run). Read by the workflow's onstart (a run stops
before any job is submitted) and as a warning by `-n` and `make plan`, which stay usable."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...training.recipe import training_engine

VERDICT = Path("results") / "smoke" / "verdict.json"


def smoke_gate_problem(config: Mapping[str, Any], verdict_path: Path = VERDICT) -> str:
    """Why this config's GPU training must not start yet (empty: it may, or the gate does not apply)."""
    cluster = config["training"]["cluster"]
    if training_engine(config) != "cluster" or cluster["device"] != "gpu" or not cluster["require_smoke"]:
        return ""
    how = (
        "run the GPU smoke preset on one node first (`make smoke`, docs/cluster.md#the-gpu-smoke-run), or set "
        "training.cluster.require_smoke: false"
    )
    if not verdict_path.is_file():
        return f"no GPU smoke verdict at {verdict_path}: {how}"
    try:
        verdict = json.loads(verdict_path.read_text())
    except json.JSONDecodeError as error:
        return f"{verdict_path} is not a verdict ({error}): {how}"
    if verdict.get("device") != "gpu":
        return f"{verdict_path} is the CPU rehearsal's verdict, not a GPU run's: {how}"
    if not verdict.get("passed"):
        failed = ", ".join(verdict.get("failed", [])) or "unknown"
        return (
            f"the GPU smoke run did not pass ({failed}; {verdict_path.with_suffix('.md')}): fix it, then `make smoke`"
        )
    return ""
