"""``python -m brorl.ops.plan``: jobs per stage, GPU-hours and a wall-clock estimate of the whole reproduction, from
the config and the SLURM profile, printed before anyone submits (`make plan`).

Job counts (brorl.ops.plan.job_counts): a dry run of the workflow (``snakemake -n --forceall`` in an empty directory, no
cluster needed); where the config implies jobs the DAG does not list yet (training, evaluation of trained
checkpoints, throughput), the plan counts those too and says so. Hours per job: measured where ``--measured DIR``
names a run at the planned scale (brorl.ops.plan.measured), the evaluation cost model for generation
(brorl.evaluation.job_sizes), profiles/slurm/estimates.yaml otherwise; the column `source` says which.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...benchmarks.problems import ProblemCountError, benchmark_problems
from ...cli import run_command
from ...config import ConfigError, load_yaml_config
from ...evaluation.job_sizes import BenchmarkCost
from ...training.job_shape import profile_shape_problem, train_job_resources
from ..run.submission import Submissions, submissions
from .estimate import CostRow, Estimates, Priced, Resources, plan_rows, totals, training_disk_gb, wall_clock_hours
from .job_counts import ROOT, DagError, absolute_folders, config_job_counts, dag_job_counts, jobs_per_rule
from .measured import MeasuredError, MeasuredRun, read_measured
from .power import power_lines
from .pricing import (
    IN_BATCH,
    evaluation_model,
    evaluation_prior,
    in_batch_line,
    in_batch_price,
    measured_prices,
    probe_line,
    probe_price,
    render_evaluation,
    scoring_price,
)
from .profile import ProfileError, checkpoint_sizes, job_resources, read_estimates, read_profile, rule_resources
from .record import PlanCosts, PlanInputs, TrainingChecks, plan_record
from .throughput import bench_price, checked_bench_jobs, size_lines
from .walltime import longest_segments, overruns, partition_max_hours


def disk_per_arm(config: dict, estimates) -> dict[str, dict]:
    """training_disk_gb of every enabled arm: its exported steps are the saved steps and every segment's end."""
    from ...training.recipe import arm_plan, enabled_arms

    disk = {}
    for name in enabled_arms(config):
        plan = arm_plan(config, name)
        exported = len(set(plan.saved_steps) | {s.last_step for s in plan.segments})
        keep = config["training"]["cluster"]["keep_checkpoints"]
        disk[name] = {"exports": exported, **training_disk_gb(exported, keep, estimates)}
    return disk


def _fmt(x: float) -> str:
    return f"{x:,.1f}"


def measured_line(run: MeasuredRun | None) -> str:
    """Where the measured hours come from, and what was set aside."""
    if run is None:
        return "measured: none (no --measured run directory): hours are estimates and the evaluation model's priors"
    return (
        f"measured: {run.root} (only jobs at the planned scale: docs/cluster.md#measured-or-estimated); "
        f"set aside: {run.set_aside_line()}"
    )


def render(
    rows: list[CostRow], wall: dict[str, float], gpu_nodes: int, profile: dict, arms: dict, sent: Submissions
) -> str:
    """The plan as text: one line per rule (training: per arm) with the source of its hours, totals per stage, and
    the sbatch calls they take."""
    lines = [
        "BroRL reproduction plan (source: measured = a --measured run at the planned scale; model = the evaluation "
        "cost model; estimated = profiles/slurm/estimates.yaml)",
        "",
        f"{'stage':<11} {'rule':<28} {'jobs':>6} {'in DAG':>6} {'nodes':>5} {'GPUs':>5} {'h/job':>7} "
        f"{'hours':>9} {'GPU-h':>10}  source",
    ]
    for row in rows:
        lines.append(
            f"{row.stage:<11} {row.name:<28} {row.jobs:>6} {row.dag_jobs:>6} {row.resources.nodes:>5} "
            f"{row.resources.gpus:>5} {row.longest_job_hours:>7.2f} {_fmt(row.hours):>9} {_fmt(row.gpu_hours):>10}"
            f"  {row.source}"
        )
    lines.append("")
    lines.append(f"{'stage':<11} {'jobs':>6} {'GPU-hours':>11} {'CPU core-h':>11}")
    for stage in dict.fromkeys(r.stage for r in rows):
        sub = [r for r in rows if r.stage == stage]
        t = totals(sub)
        lines.append(f"{stage:<11} {int(t['jobs']):>6} {_fmt(t['gpu_hours']):>11} {_fmt(t['cpu_hours']):>11}")
    t = totals(rows)
    lines.append(f"{'total':<11} {int(t['jobs']):>6} {_fmt(t['gpu_hours']):>11} {_fmt(t['cpu_hours']):>11}")
    lines.append(
        f"sbatch calls: {sent.calls:,} (first attempts) for {sent.jobs:,} jobs: {sent.on_driver} run by the driver, "
        f"{sent.in_groups} ride in another job's group submission (docs/cluster.md#how-many-submissions)"
    )
    lines.append("")
    training = [r for r in rows if r.name.startswith("train_ppo[")]
    per_arm = ", ".join(f"{r.name[10:-1]} {_fmt(r.hours)} h" for r in training)
    if per_arm:
        lines.append(
            f"training per arm on {training[0].resources.nodes} nodes: {per_arm} (paper: about 56-174 h per arm on "
            "64 H100)"
        )
        parts = (
            f"training {_fmt(wall['training'])} h with {int(wall['concurrent_arms'])} arm(s) at a time, "
            f"then evaluation and throughput {_fmt(wall['other_gpu'])} h"
        )
    else:  # evaluation only: no training lines
        parts = "no training: evaluation and throughput only"
    lines.append(
        f"wall-clock on {gpu_nodes} GPU nodes: {_fmt(wall['total'])} h = {_fmt(wall['total'] / 24)} days ({parts})"
    )
    missing = [r.name for r in rows if r.jobs > r.dag_jobs]
    if missing:
        lines.append(
            "counted from the config, not (yet) in the DAG: "
            + ", ".join(missing)
            + " -- the rules or their targets do not exist yet"
        )
    return "\n".join(lines)


def smoke_price_line(profile: Path) -> str:
    """The GPU smoke run's price (workflow/presets/gpu_smoke.yaml: it must pass before a preset that trains on GPUs),
    from this command run on that preset."""
    smoke = ROOT / "workflow" / "presets" / "gpu_smoke.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "brorl.ops.plan", "--configfile", str(smoke), "--profile", str(profile)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    total = next((line.split() for line in proc.stdout.splitlines() if line.startswith("total ")), None)
    price = f"{total[2]} GPU-hours" if total else f"not priced ({proc.stderr.strip().splitlines()[-1:]})"
    return (
        f"  first, the GPU smoke run (training.cluster.require_smoke): {price} "
        f'(make plan PLAN_ARGS="--configfile {smoke.relative_to(ROOT)}")'
    )


def walltime_limit_hours(profile: dict) -> dict:
    """The time limit of train_ppo's first attempt: the profile's runtime, or the partition's MaxTime from sinfo
    where that is lower."""
    res = rule_resources(profile, "train_ppo")
    hours, source = float(res["runtime"]) / 60, "the slurm profile's runtime of train_ppo"
    partition = res.get("slurm_partition")
    site = partition_max_hours(str(partition)) if partition else None
    if site is not None and site < hours:
        hours, source = site, f"MaxTime of partition {partition} (sinfo)"
    return {"hours": hours, "source": source}


def sized_resources(
    profiled: Resources, rows: list[BenchmarkCost], profile: Mapping[str, Any], rule: str = "generate_samples"
) -> Resources:
    """A generation rule's row: its largest job (the plan's GPU-hours add up each job's own size) and the cores that
    come with it (cpus_per_gpu)."""
    gpus = max((r.gpus for r in rows), default=profiled.gpus)
    per_gpu = int(rule_resources(profile, rule).get("cpus_per_gpu") or 1)
    return dataclasses.replace(profiled, gpus=gpus, cpus=gpus * per_gpu if gpus else profiled.cpus)


def _warn_site(profile_dir: Path, config: dict) -> None:
    """Nothing: prints to stderr what the site cannot run as the profile asks, else the site check's line."""
    from .site import check as check_site

    site_problems, site_line = check_site(profile_dir, config)
    if site_problems:  # `snakemake --profile slurm` refuses these, -n too; the plan stays usable and says so
        print(
            "warning: the site cannot run these jobs as the profile asks (`snakemake --profile slurm` refuses them, -n too):\n  - "
            + "\n  - ".join(site_problems)
            + "\n",
            file=sys.stderr,
        )
    elif site_line:
        print(site_line, file=sys.stderr)


def _checked_config(a: argparse.Namespace) -> tuple[dict[str, Any], Estimates, dict]:
    """The profile, the estimates scaled to the response budget, and the config (SystemExit: a misfit shape)."""
    profile = read_profile(a.profile)
    estimates = read_estimates(a.estimates or Path(a.profile) / "estimates.yaml")
    config = load_yaml_config(ROOT / "config.yaml", *a.configfile)
    shape = profile_shape_problem(
        (profile.get("set-resources") or {}).get("train_ppo"), config, f"{Path(a.profile) / 'config.yaml'}"
    )
    if shape:  # the workflow refuses the same at DAG time (workflow/rules/common.smk): say so before anything else
        raise SystemExit(f"error: {shape}")
    _warn_site(a.profile, config)
    budget = config["context"]["train_max_len"]
    estimates = dataclasses.replace(estimates, step_scale=budget / estimates.reference_budget_tokens)
    return profile, estimates, config


def _read_inputs(a: argparse.Namespace) -> PlanInputs:
    """The plan's inputs, the DAG's job counts among them; SystemExit where throughput's layout cannot finish."""
    profile, estimates, config = _checked_config(a)
    problems = benchmark_problems(config)
    from ...benchmarks.registry import load_registry
    from ...hub.pin_gate import unpinned_of_run

    registry = load_registry()
    unpinned = unpinned_of_run(config, registry)
    if unpinned:  # the plan stays usable; a run would stop at its start (the pin gate, brorl.hub.pins)
        print(f"warning: {unpinned}\n", file=sys.stderr)
    prior = evaluation_prior(estimates)
    bench, refused = checked_bench_jobs(config, profile, prior)
    if refused:  # a layout that cannot finish is refused before the DAG is built
        raise SystemExit(f"error: {refused}")
    print("building the DAG to count its jobs (snakemake -n, seconds to a minute) ...", file=sys.stderr, flush=True)
    dag = dag_job_counts(list(a.configfile), overlay=absolute_folders(config, Path.cwd()))
    planned, arms = config_job_counts(config)
    run = read_measured(a.measured, config, problems, {arm: v[0] for arm, v in arms.items()}) if a.measured else None
    return PlanInputs(profile, estimates, config, problems, registry, prior, bench, dag, planned, arms, run)


def _price_probes(
    inputs: PlanInputs, priced: dict[str, Priced], resources: dict[str, Resources], gpus_per_node: int
) -> list[BenchmarkCost]:
    """The probes' cost lines (none with probe.enabled off), their prices and sizes set in the dicts given."""
    if not inputs.config["probe"]["enabled"]:
        return []
    probe_rows, priced["generate_probe"] = probe_price(
        inputs.config["probe"], inputs.planned.get("generate_probe", 0), inputs.estimates, gpus_per_node
    )
    resources["generate_probe"] = sized_resources(
        resources["generate_probe"], probe_rows, inputs.profile, "generate_probe"
    )
    sides = inputs.planned.get("generate_in_batch", 0)
    if sides:
        in_batch_rows, priced["generate_in_batch"] = in_batch_price(
            inputs.config["probe"], sides, inputs.estimates, gpus_per_node
        )
        resources["generate_in_batch"] = sized_resources(
            resources["generate_in_batch"], in_batch_rows, inputs.profile, "generate_in_batch"
        )
        probe_rows += in_batch_rows
    return probe_rows


def _price(inputs: PlanInputs, gpu_nodes: int | None) -> PlanCosts:
    """The plan's costs: resources, prices, rows, wall-clock on ``gpu_nodes`` (None: one training job's), sbatch."""
    rules = {*inputs.dag, *inputs.planned, "train_ppo", "generate_samples"}
    own = {"train_ppo": train_job_resources(inputs.config)}  # what the rule asks for itself (training.cluster.nodes)
    resources = {rule: job_resources(inputs.profile, rule, own=own.get(rule)) for rule in rules}
    gpus_per_node = max(1, resources["train_ppo"].gpus // max(1, resources["train_ppo"].nodes))
    evaluation = inputs.config["evaluation"]
    benchmarks = max(1, len(evaluation["benchmarks"]))
    checkpoints = max(inputs.dag.get("generate_samples", 0), inputs.planned.get("generate_samples", 0)) // benchmarks
    start_extra = (evaluation["start_draws"] - 1) if evaluation["steps"]["include_start"] else 0
    eval_rows, eval_totals, eval_price = evaluation_model(
        inputs.problems,
        int(evaluation["n_samples"]),
        checkpoints,
        inputs.estimates,
        resources["generate_samples"],
        gpus_per_node,
        inputs.run,
        start_extra if checkpoints else 0,
    )
    families = [inputs.registry[b].family for b in evaluation["benchmarks"]]
    priced = {"score_samples": scoring_price(families, checkpoints, inputs.estimates), **measured_prices(inputs.run)}
    priced["generate_samples"] = eval_price
    if inputs.bench:
        priced["bench_throughput"] = bench_price(inputs.bench)
    probe_rows = _price_probes(inputs, priced, resources, gpus_per_node)
    # a profile `gpu:` under generate_samples, else 0: the rule's per-benchmark sizes
    forced_gpus = resources["generate_samples"].gpus
    resources["generate_samples"] = sized_resources(resources["generate_samples"], eval_rows, inputs.profile)
    # a rule with no job in the DAG or the config (an evaluation-only run's exports) is no line of the plan
    rows = [
        r
        for r in plan_rows(inputs.dag, inputs.planned, inputs.arms, resources, inputs.estimates, priced)
        if r.jobs or r.dag_jobs
    ]
    gpu_nodes = gpu_nodes or resources["train_ppo"].nodes
    wall = wall_clock_hours(rows, gpu_nodes, gpus_per_node)
    sent = submissions(jobs_per_rule(rows), inputs.config["engine"])
    return PlanCosts(
        resources, gpus_per_node, eval_rows, eval_totals, priced, probe_rows, forced_gpus, rows, gpu_nodes, wall, sent
    )


def _print_costs(inputs: PlanInputs, costs: PlanCosts, profile_dir: Path) -> None:
    """Nothing: prints the plan's table and what follows it, down to the throughput jobs' sizes."""
    print(render(costs.rows, costs.wall, costs.gpu_nodes, inputs.profile, inputs.arms, costs.sent))
    if inputs.estimates.step_scale != 1:
        budget = inputs.config["context"]["train_max_len"]
        print(
            f"training steps scaled by the response budget: {budget:,} / {inputs.estimates.reference_budget_tokens:,} "
            "tokens (an assumption: estimates.yaml's reference_budget_tokens)"
        )
    print(measured_line(inputs.run))
    print()
    print("\n".join(power_lines(inputs.config, inputs.problems)))  # before anyone pays: what the run can establish
    if inputs.config["decision"]["enabled"] and inputs.config["training"]["cluster"]["require_smoke"]:
        print(smoke_price_line(profile_dir))
    print()
    print(
        render_evaluation(costs.eval_rows, costs.eval_totals, costs.gpus_per_node, costs.forced_gpus, inputs.estimates)
    )
    for r in costs.probe_rows:
        print((in_batch_line if r.benchmark == IN_BATCH else probe_line)(r, inputs.config["probe"]))
    for line in size_lines(inputs.bench, inputs.prior):
        print(line)


def _sized_estimates(config: dict, estimates: Estimates) -> tuple[Estimates, Path | None]:
    """The estimates with the downloaded start checkpoint's saved-step sizes and its folder (else as given, None)."""
    if config["engine"] != "embedded" and config["base_model"]["repo_id"]:  # the downloaded start checkpoint
        from ...models.folders import staged_base_model

        folder = ROOT / staged_base_model(config)
        sizes = checkpoint_sizes(folder)
        if sizes:
            return dataclasses.replace(estimates, hf_export_gb=sizes[0], full_state_gb=sizes[1]), folder
    return estimates, None


def _check_training(inputs: PlanInputs, costs: PlanCosts) -> TrainingChecks:
    """The training checks: saved-step sizes, the first attempt's walltime, the arms over it, the disk per arm."""
    estimates, sizes_from = _sized_estimates(inputs.config, inputs.estimates)
    limit = walltime_limit_hours(inputs.profile)
    measured_steps = {n[10:-1]: p.hours_per_job for n, p in costs.priced.items() if n.startswith("train_ppo[")}
    late = overruns(
        longest_segments(inputs.config),
        costs.resources["train_ppo"].nodes,
        estimates,
        limit["hours"],
        5,
        measured_steps,
    )
    disk = disk_per_arm(inputs.config, estimates)
    return TrainingChecks(estimates, sizes_from, limit, late, disk)


def _print_training(checks: TrainingChecks) -> None:
    """Nothing: prints a training job's walltime, the overruns, one saved step's size and the disk per arm."""
    print(f"walltime of a training job's first attempt: {checks.limit['hours']:.0f} h ({checks.limit['source']})")
    for overrun in checks.late:
        print(f"warning: {overrun.message()}")
    est = checks.estimates
    print(
        f"one saved step: HF export {est.hf_export_gb:.2f} GB, full state {est.full_state_gb:.1f} GB "
        + (
            f"(from the safetensors of {checks.sizes_from})"
            if checks.sizes_from
            else "(estimates.yaml; the start checkpoint is not downloaded yet)"
        )
    )
    print(
        "disk for training per arm (peak; results/train/<arm>/run): "
        + ", ".join(
            f"{arm} {d['peak_gb']:,.0f} GB ({d['exports']} kept exports {d['exports_gb']:,.0f} GB + full states "
            f"{d['full_states_gb']:,.0f} GB)"
            for arm, d in checks.disk.items()
        )
    )


def _cmd_plan(a: argparse.Namespace) -> None:
    inputs = _read_inputs(a)
    costs = _price(inputs, a.gpu_nodes)
    _print_costs(inputs, costs, a.profile)
    checks = _check_training(inputs, costs)
    if inputs.arms:  # training lines; an evaluation-only plan has none
        _print_training(checks)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(plan_record(inputs, costs, checks), indent=2) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--configfile",
        nargs="*",
        type=Path,
        default=[],
        help="config files merged over config.yaml (like snakemake --configfile)",
    )
    parser.add_argument("--profile", type=Path, default=ROOT / "profiles" / "slurm", help="the SLURM profile folder")
    parser.add_argument(
        "--estimates", type=Path, default=None, help="hours per job (default: <profile>/estimates.yaml)"
    )
    parser.add_argument(
        "--gpu-nodes", type=int, default=None, help="GPU nodes available at once (default: one training job's nodes)"
    )
    parser.add_argument(
        "--measured",
        type=Path,
        default=None,
        help="the workflow directory of an earlier run: its timings and metrics replace estimates where it ran at "
        "the planned scale (default: none, every hour is an estimate)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the plan as JSON here")
    parser.set_defaults(func=_cmd_plan)
    args = parser.parse_args(argv)
    if args.gpu_nodes is not None and args.gpu_nodes < 1:
        parser.error(f"--gpu-nodes must be >= 1, not {args.gpu_nodes}")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    run_command(args, (ProfileError, ConfigError, DagError, FileNotFoundError, MeasuredError, ProblemCountError))
