"""Cost arithmetic of the plan: jobs x hours x GPUs per rule, and a wall-clock estimate. Pure: no I/O.

Job counts come from the DAG (a dry run) and, for stages whose rules the DAG does not list yet, from the config
(arms, saved steps, evaluation points); hours per job are estimates (profiles/slurm/estimates.yaml).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...evaluation.job_sizes import EvalPrior

# Which stage a rule belongs to (rules not listed are "analysis").
STAGES: dict[str, str] = {
    "simulate_token_level": "simulation",
    "simulate_sensitivity": "simulation",
    "check_theory": "simulation",
    "plot_simulation": "simulation",
    "tabulate_simulation": "simulation",
    "prepare_benchmark": "data",
    "generate_reasoning_gym": "data",
    "prepare_train_data": "data",
    "download_base_model": "model",
    "extend_context": "model",
    "download_eval_model": "model",
    "extend_eval_model": "model",
    "preflight_eval_node": "model",
    "preflight_train_node": "model",
    "preflight_cross_node": "model",
    "build_tiny_model": "model",
    "prepare_prompts": "training",
    "train_ppo": "training",
    "export_checkpoint": "training",
    "generate_samples": "evaluation",
    "score_samples": "evaluation",
    "summarize_evaluation": "evaluation",
    "collect_evaluation": "evaluation",
    "track_evaluation": "evaluation",
    "select_probes": "probe",
    "generate_probe": "probe",
    "score_probe": "probe",
    "analyse_probe": "probe",
    "in_batch_prompts": "probe",
    "generate_in_batch": "probe",
    "score_in_batch": "probe",
    "analyse_in_batch": "probe",
    "bench_throughput": "throughput",
}
STAGE_ORDER = ["simulation", "data", "model", "training", "evaluation", "probe", "throughput", "analysis"]


@dataclass(frozen=True)
class Resources:
    """What one job of a rule is given by the profile."""

    nodes: int = 1
    gpus: int = 0  # GPUs of the whole job (all nodes)
    cpus: int = 1  # CPU cores of the whole job


@dataclass(frozen=True)
class Estimates:
    """Hours per job (estimates, not measurements); see profiles/slurm/estimates.yaml."""

    step_hours_fixed: float
    step_hours_per_sample: float
    reference_nodes: int
    segment_overhead_hours: float
    rule_hours: Mapping[str, float] = field(default_factory=dict)
    reference_budget_tokens: int = 16384  # the response budget the step line was fitted at (the paper's)
    step_scale: float = 1.0  # the run's response budget / reference_budget_tokens (brorl.ops.plan.cli sets it)
    default_rule_hours: float = 0.1
    hf_export_gb: float = 0.0  # one HF export of the start model (bf16 weights + tokenizer)
    full_state_gb: float = 0.0  # one DeepSpeed full state (weights + fp32 master copy + Adam moments)
    evaluation: EvalPrior | None = None  # priors of the evaluation cost model (brorl.evaluation.job_sizes)

    def hours_of(self, rule: str) -> float:
        return float(self.rule_hours.get(rule, self.default_rule_hours))


@dataclass(frozen=True)
class Priced:
    """Hours of a row that do not come from estimates.yaml: measured, or the evaluation model."""

    hours_per_job: float  # training: hours per step
    longest_job_hours: float | None  # None: hours_per_job
    source: str
    total_hours: float | None = None  # all jobs together, where jobs differ (the evaluation model)
    gpu_hours: float | None = None  # all jobs together, where jobs differ in GPUs (generate_samples' sizes)


@dataclass(frozen=True)
class CostRow:
    """One line of the plan: a rule (training: one arm), its jobs and their total cost."""

    stage: str
    name: str  # rule name, or train_ppo[<arm>]
    dag_jobs: int  # jobs the dry run lists
    jobs: int  # jobs planned (>= dag_jobs where the config says the DAG will grow)
    resources: Resources
    hours: float  # wall-clock hours of all its jobs one after another
    longest_job_hours: float
    source: str = "estimated"  # "estimated" (estimates.yaml), "measured (k jobs)" or "model (...)"
    sized_gpu_hours: float | None = None  # jobs of different sizes (resources.gpus is then the largest)

    @property
    def gpu_hours(self) -> float:
        return self.sized_gpu_hours if self.sized_gpu_hours is not None else self.hours * self.resources.gpus

    @property
    def cpu_hours(self) -> float:
        return self.hours * self.resources.cpus if self.resources.gpus == 0 else 0.0


def training_hours(samples_per_step: int, steps: int, segments: int, nodes: int, est: Estimates) -> float:
    """Hours of one arm: steps x (fixed + per_sample x samples) at the reference node count, scaled inversely to
    the node count and by the response budget (est.step_scale: a step's generation, its longest response included,
    and its update are token-bound), plus a start-up overhead per training job (segment)."""
    if nodes < 1:
        raise ValueError(f"training needs at least one node, not {nodes}")
    per_step = est.step_hours_fixed + est.step_hours_per_sample * samples_per_step
    return steps * per_step * est.step_scale * est.reference_nodes / nodes + segments * est.segment_overhead_hours


def training_disk_gb(exported_steps: int, keep_checkpoints: int, est: Estimates) -> dict[str, float]:
    """Disk one arm's training holds at its peak: the exported steps that are kept (saved steps and segment ends;
    OpenRLHF's other exports are deleted), the full states OpenRLHF keeps plus the one being written, and one
    export being written."""
    exports = exported_steps * est.hf_export_gb
    states = (keep_checkpoints + 1) * est.full_state_gb
    return {"exports_gb": exports, "full_states_gb": states, "peak_gb": exports + states + est.hf_export_gb}


def evaluation_checkpoints(config: Mapping[str, Any], arms: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(arm, step) pairs the evaluation protocol asks for: the start checkpoint, then per enabled arm every
    evaluation.steps.every saved step, its report steps and its final step (as the config's switches say).

    `arms` maps an arm name to its brorl.training.recipe.ArmPlan (saved_steps, continued_steps)."""
    steps_cfg = config["evaluation"]["steps"]
    points: list[tuple[str, int]] = []
    if steps_cfg.get("include_start", True):
        points.append(("base", int(config["base_model"]["start_step"])))
    for name, plan in arms.items():
        arm = next(a for a in config["arms"] if a["name"] == name)
        every = steps_cfg.get("every")
        wanted: set[int] = set()
        if every:
            wanted |= {s for s in plan.saved_steps if s % every == 0}
        if steps_cfg.get("include_report_steps", True):
            wanted |= set(arm["report_steps"])
        if steps_cfg.get("include_final", True):
            wanted.add(plan.continued_steps)
        points += [(name, s) for s in sorted(wanted)]
    return points


def plan_rows(
    dag_counts: Mapping[str, int],
    config_counts: Mapping[str, int],
    arms: Mapping[str, tuple[int, int, int]],
    resources: Mapping[str, Resources],
    est: Estimates,
    priced: Mapping[str, Priced] | None = None,
) -> list[CostRow]:
    """The plan's rows, in stage order.

    dag_counts: jobs per rule in the dry run; config_counts: jobs per rule the config implies (used where larger);
    arms: arm -> (samples_per_step, continued_steps, segments) for train_ppo; resources: per rule (default: one
    CPU core, no GPU); priced: rule (or train_ppo[<arm>], hours per step) -> hours that replace the estimate.
    """
    priced = priced or {}
    rows: list[CostRow] = []
    rules = [r for r in {**dict.fromkeys(dag_counts), **dict.fromkeys(config_counts)} if r not in ("all", "train_ppo")]
    for rule in rules:
        jobs = max(dag_counts.get(rule, 0), config_counts.get(rule, 0))
        p = priced.get(rule) or Priced(est.hours_of(rule), None, "estimated")
        total = p.total_hours if p.total_hours is not None else jobs * p.hours_per_job
        longest = p.longest_job_hours if p.longest_job_hours is not None else p.hours_per_job
        row = CostRow(
            STAGES.get(rule, "analysis"),
            rule,
            dag_counts.get(rule, 0),
            jobs,
            resources.get(rule, Resources()),
            total,
            longest,
            p.source,
            p.gpu_hours,
        )
        rows.append(row)
    train_res = resources.get("train_ppo", Resources())
    dag_training = dag_counts.get("train_ppo", 0)
    for arm, (samples, steps, segments) in arms.items():
        name = f"train_ppo[{arm}]"
        dag_jobs = segments if dag_training else 0
        if name in priced:  # measured hours per step, at the profile's node count
            hours = steps * priced[name].hours_per_job + segments * est.segment_overhead_hours
            source = priced[name].source
        else:
            hours, source = training_hours(samples, steps, segments, train_res.nodes, est), "estimated"
        rows.append(CostRow("training", name, dag_jobs, segments, train_res, hours, hours / segments, source))
    rows.sort(key=lambda r: (STAGE_ORDER.index(r.stage), r.name))
    return rows


def wall_clock_hours(rows: list[CostRow], gpu_nodes: int, gpus_per_node: int) -> dict[str, float]:
    """Wall-clock estimate on `gpu_nodes` GPU nodes: training arms packed onto as many concurrent lanes as the
    nodes allow (longest first), then the other GPU work spread over all nodes; CPU work runs beside them.
    Conservative in one way: evaluation starts after training (it can overlap it in reality)."""
    training = [r for r in rows if r.name.startswith("train_ppo[")]
    train_nodes = max((r.resources.nodes for r in training), default=1)
    lanes = max(1, gpu_nodes // train_nodes)
    finish = [0.0] * lanes  # a min-heap of the lanes' finish times
    for row in sorted(training, key=lambda r: -r.hours):
        heapq.heappush(finish, heapq.heappop(finish) + row.hours)
    train_wall = max(finish)
    other = [r for r in rows if r.resources.gpus and not r.name.startswith("train_ppo[")]
    other_gpu_hours = math.fsum(r.gpu_hours for r in other)
    longest_other = max((r.longest_job_hours for r in other), default=0.0)
    other_wall = max(other_gpu_hours / (gpu_nodes * gpus_per_node), longest_other)
    return {
        "training": train_wall,
        "other_gpu": other_wall,
        "total": train_wall + other_wall,
        "concurrent_arms": float(lanes),
    }


def totals(rows: list[CostRow]) -> dict[str, float]:
    """Jobs, GPU-hours and CPU core-hours of the whole plan."""
    return {
        "jobs": float(sum(r.jobs for r in rows)),
        "gpu_hours": math.fsum(r.gpu_hours for r in rows),
        "cpu_hours": math.fsum(r.cpu_hours for r in rows),
    }
