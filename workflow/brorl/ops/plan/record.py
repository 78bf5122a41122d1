"""The plan's intermediate results, as `python -m brorl.ops.plan` (brorl.ops.plan.cli) computes them step by step:
what it is computed from, its costs, its training checks; and the JSON record of them that ``--json`` writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...evaluation.job_sizes import BenchmarkCost, EvalPrior
from ..run.submission import Submissions
from .estimate import CostRow, Estimates, Priced, Resources, totals
from .measured import MeasuredRun
from .throughput import BenchJob
from .walltime import Overrun


@dataclass
class PlanInputs:
    """What the plan is computed from: the profile, the scaled estimates, the config and its job counts."""

    profile: dict[str, Any]
    estimates: Estimates
    config: dict
    problems: dict[str, int]
    registry: dict[str, Any]
    prior: EvalPrior
    bench: list[BenchJob]
    dag: dict[str, int]
    planned: dict[str, int]
    arms: dict[str, tuple[int, int, int]]
    run: MeasuredRun | None


@dataclass
class PlanCosts:
    """The plan's prices: every rule's resources, the rows of the plan, the evaluation model's and the probes' lines,
    the wall-clock and the sbatch calls."""

    resources: dict[str, Resources]
    gpus_per_node: int
    eval_rows: list[BenchmarkCost]
    eval_totals: dict[str, float]
    priced: dict[str, Priced]
    probe_rows: list[BenchmarkCost]
    forced_gpus: int
    rows: list[CostRow]
    gpu_nodes: int
    wall: dict[str, float]
    sent: Submissions


@dataclass
class TrainingChecks:
    """The training checks: the estimates with the start checkpoint's sizes, where those came from, the walltime
    limit, the arms that would overrun it, and the disk per arm."""

    estimates: Estimates
    sizes_from: Path | None
    limit: dict
    late: list[Overrun]
    disk: dict[str, dict]


def _row_record(r: CostRow) -> dict[str, Any]:
    """One row of the plan as JSON."""
    return {
        "stage": r.stage,
        "name": r.name,
        "jobs": r.jobs,
        "dag_jobs": r.dag_jobs,
        "nodes": r.resources.nodes,
        "gpus": r.resources.gpus,
        "cpus": r.resources.cpus,
        "hours": r.hours,
        "gpu_hours": r.gpu_hours,
        "cpu_hours": r.cpu_hours,
        "source": r.source,
    }


def _benchmark_record(r: BenchmarkCost) -> dict[str, Any]:
    """One benchmark's line of the evaluation model as JSON."""
    return {
        "benchmark": r.benchmark,
        "problems": r.problems,
        "samples": r.samples,
        "mean_tokens": r.mean_tokens,
        "mean_tokens_source": r.mean_tokens_source,
        "tokens_per_s_per_gpu": r.tokens_per_s_per_gpu,
        "tokens_per_s_source": r.tokens_per_s_source,
        "gpu_hours_per_checkpoint": r.compute_gpu_hours,
        "proposed_gpus": r.gpus,
        "job_hours": r.job_hours,
        "checkpoints": r.checkpoints,
        "start_extra_draws": r.start_extra,
    }


def plan_record(inputs: PlanInputs, costs: PlanCosts, checks: TrainingChecks) -> dict[str, Any]:
    """The whole plan as JSON (--json)."""
    run = inputs.run
    return {
        "rows": [_row_record(r) for r in costs.rows],
        "evaluation_model": {**costs.eval_totals, "benchmarks": [_benchmark_record(r) for r in costs.eval_rows]},
        "measured": None
        if run is None
        else {"root": str(run.root), "set_aside": {k: len(v) for k, v in run.set_aside.items()}},
        "totals": totals(costs.rows),
        "sbatch_calls": asdict(costs.sent),
        "wall_clock_hours": costs.wall,
        "gpu_nodes": costs.gpu_nodes,
        "training_disk_gb": checks.disk,
        "saved_step_gb": {"hf_export": checks.estimates.hf_export_gb, "full_state": checks.estimates.full_state_gb},
        "walltime": {**checks.limit, "overruns": [asdict(o) for o in checks.late]},
    }
