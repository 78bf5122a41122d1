"""Which hours the plan uses for each row: measured (a --measured run at the planned scale), the evaluation model,
or estimates.yaml; and the evaluation model's table (before/after, with its arithmetic)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from ...evaluation.job_sizes import BenchmarkCost, EvalPrior, Measured, evaluation_costs, summary
from .estimate import Estimates, Priced, Resources
from .measured import MeasuredRun, measured_mean_tokens, measured_tokens_per_s


def measured_prices(run: MeasuredRun | None) -> dict[str, Priced]:
    """Mean measured hours per job of every rule the run timed at the planned scale, and per training arm the
    mean hours per step (rows keyed train_ppo[<arm>])."""
    if run is None:
        return {}
    priced = {}
    for rule, seconds in run.rule_seconds.items():
        priced[rule] = Priced(
            math.fsum(seconds) / len(seconds) / 3600, max(seconds) / 3600, f"measured ({len(seconds)} jobs)"
        )
    for arm, steps in run.train_step_s.items():
        priced[f"train_ppo[{arm}]"] = Priced(
            math.fsum(steps) / len(steps) / 3600,
            None,
            f"measured ({len(steps)} steps" + (f"; {run.train_split[arm]})" if arm in run.train_split else ")"),
        )
    return priced


def evaluation_prior(est: Estimates) -> EvalPrior:
    """The evaluation cost model's priors (estimates.yaml `evaluation:`), which price evaluation and the probe."""
    if est.evaluation is None:
        raise ValueError("the estimates have no evaluation: block (the evaluation cost model's priors)")
    return est.evaluation


def evaluation_model(
    problems: Mapping[str, int],
    samples_per_problem: int,
    checkpoints: int,
    est: Estimates,
    gen: Resources,
    gpus_per_node: int,
    run: MeasuredRun | None,
    start_extra: int = 0,
) -> tuple[list[BenchmarkCost], dict[str, float], Priced]:
    """The model's lines, its before/after summary, and the generate_samples price at the sizes its jobs ask for:
    the rule's per-benchmark sizes, or one size for all where the profile forces it (`gen.gpus`: a `gpu:` under
    generate_samples)."""
    prior = evaluation_prior(est)
    jobs = run.eval_jobs if run else []
    tps = measured_tokens_per_s(jobs, gen.gpus or gpus_per_node)
    means = {b: Measured(m, k) for b, (m, k) in measured_mean_tokens(jobs).items()}
    rows = evaluation_costs(
        problems,
        samples_per_problem,
        checkpoints,
        prior,
        gpus_per_node,
        mean_tokens=means,
        tokens_per_s=Measured(*tps) if tps else None,
        start_extra=start_extra,
    )
    if gen.gpus:
        rows = [dataclasses.replace(r, gpus=gen.gpus) for r in rows]
    totals = summary(rows, gpus_per_node, est.hours_of("generate_samples"))
    measured = sum(r.mean_tokens_source.startswith("measured") for r in rows)
    source = f"model ({'measured' if tps else 'prior'} tokens/s, {measured}/{len(rows)} measured lengths)"
    price = Priced(
        hours_per_job=0.0,
        longest_job_hours=max((r.start_job_hours for r in rows), default=0.0),
        source=source,
        total_hours=math.fsum(r.total_job_hours for r in rows),
        gpu_hours=totals["model_gpu_hours_sized"],
    )
    return rows, totals, price


def _sampled_price(name: str, prompts: int, samples: int, jobs: int, est: Estimates, gpus_per_node: int):
    """One generation job's cost row for `prompts` x `samples` like a rollout, and its price over `jobs` such jobs
    (the evaluation model's priors)."""
    (row,) = evaluation_costs({name: prompts}, samples, jobs, evaluation_prior(est), gpus_per_node)
    price = Priced(
        hours_per_job=row.job_hours,
        longest_job_hours=row.job_hours,
        source="model (prior tokens/s and length)",
        total_hours=row.job_hours * jobs,
        gpu_hours=row.job_gpu_hours * jobs,
    )
    return [row], price


def probe_price(
    probe: Mapping[str, object], checkpoints: int, est: Estimates, gpus_per_node: int
) -> tuple[list[BenchmarkCost], Priced]:
    """The mass-balance probe's generation (probe.enabled): probes x samples per probed checkpoint, priced by the
    evaluation model's priors (the probe samples like a rollout, whose mean length the prior assumes too)."""
    return _sampled_price("probe", int(probe["problems"]), int(probe["samples"]), checkpoints, est, gpus_per_node)


def probe_line(row: BenchmarkCost, probe: Mapping[str, object]) -> str:
    """The probe's cost in words: samples per probed checkpoint, its GPU-hours, the whole probe's."""
    return (
        f"mass-balance probe ({probe['benchmark']}): {row.problems:,} probes x {probe['samples']} samples = "
        f"{row.samples:,} samples per probed checkpoint, {row.job_gpu_hours:.2f} GPU-h each on {row.gpus} GPU(s); "
        f"{row.checkpoints} checkpoints (the start and every saved step): {row.job_gpu_hours * row.checkpoints:,.1f} GPU-h"
    )


IN_BATCH = "in-batch probe"  # the benchmark name of the in-batch probe's cost row


def in_batch_price(
    probe: Mapping[str, object], sides: int, est: Estimates, gpus_per_node: int
) -> tuple[list[BenchmarkCost], Priced]:
    """The in-batch probe's generation: at most probe.in_batch.prompts of a step's prompts x probe.samples, on each
    of ``sides`` (two per probed step and arm: before and after its update), priced like the probe."""
    prompts = int(probe["in_batch"]["prompts"])  # type: ignore[index]
    return _sampled_price(IN_BATCH, prompts, int(probe["samples"]), sides, est, gpus_per_node)


def in_batch_line(row: BenchmarkCost, probe: Mapping[str, object]) -> str:
    """The in-batch probe's cost in words: samples per side, its GPU-hours, the whole probe's."""
    steps = probe["in_batch"]["steps"]  # type: ignore[index]
    return (
        f"in-batch probe (steps {', '.join(map(str, steps))} of every arm): at most {row.problems:,} of a step's "
        f"prompts x {probe['samples']} samples = {row.samples:,} samples before and as many after each probed "
        f"step's update, {row.job_gpu_hours:.2f} GPU-h each on {row.gpus} GPU(s); {row.checkpoints} sides: "
        f"{row.job_gpu_hours * row.checkpoints:,.1f} GPU-h (the extra exports are in the training disk line)"
    )


def render_evaluation(
    rows: list[BenchmarkCost], totals: Mapping[str, float], node_gpus: int, forced_gpus: int, est: Estimates
) -> str:
    """The evaluation model as a short table: per benchmark and checkpoint the arithmetic, then the before/after."""
    prior = est.evaluation
    head = (
        f"{'benchmark':<15} {'problems':>8} {'samples':>8} {'mean tok':>9} {'tokens (M)':>10} {'tok/s/GPU':>9} "
        f"{'GPU-h':>6} {'GPUs':>4} {'job h':>6}  length source"
    )
    lines = [
        f"evaluation model, per checkpoint ({rows[0].checkpoints if rows else 0} checkpoints): "
        "GPU-h = samples x mean tokens / tok/s/GPU; GPUs = the job's size; job h = GPU-h / GPUs + start-up"
        + (
            f"; the start checkpoint's jobs generate {1 + rows[0].start_extra} draws of the samples (each arm's test "
            "gets its own)"
            if rows and rows[0].start_extra
            else ""
        ),
        head,
    ]
    for r in rows:
        lines.append(
            f"{r.benchmark:<15} {r.problems:>8,} {r.samples:>8,} {r.mean_tokens:>9,.0f} {r.tokens / 1e6:>10,.2f} "
            f"{r.tokens_per_s_per_gpu:>9,.0f} {r.compute_gpu_hours:>6.2f} {r.gpus:>4} {r.job_hours:>6.2f}  "
            f"{r.mean_tokens_source}"
        )
    if rows:
        r = rows[0]
        lines.append(
            f"tokens/s per GPU: {r.tokens_per_s_per_gpu:,.0f}, {r.tokens_per_s_source}"
            + (
                f" = {prior.samples_per_s} samples/s / {prior.reference_gpus} GPUs x {prior.mean_response_tokens:,.0f}"
                " tokens"
                if prior and r.tokens_per_s_source.startswith("prior")
                else ""
            )
            + f"; start-up {r.overhead_hours:.2f} h per job and GPU"
        )
    applied = (
        f"at the profile's {forced_gpus} GPUs per job (its `gpu:` under generate_samples forces one size)"
        if forced_gpus
        else "at the job sizes above (applied: generate_samples asks Slurm for them, resource `gpu`)"
    )
    lines.append(
        f"evaluation generation GPU-hours ({int(totals['jobs'])} jobs, {totals['tokens'] / 1e9:,.2f} B tokens): "
        f"before {totals['old_gpu_hours']:,.0f} (estimates.yaml {est.hours_of('generate_samples')} h x "
        f"{node_gpus} GPUs per job) -> model {totals['model_gpu_hours_profile_size']:,.0f} with a node "
        f"({node_gpus} GPUs) per job -> {totals['model_gpu_hours_sized']:,.0f} {applied}"
    )
    return "\n".join(lines)


CODE_SCORING = "score_samples_code"  # estimates.yaml's hours of one code benchmark's scoring job


def scoring_price(families: list[str], checkpoints: int, est: Estimates) -> Priced:
    """score_samples per evaluated (checkpoint, benchmark): a code benchmark's job at `score_samples_code` hours
    (every test of a failing program runs, so that one sandboxed run yields both code scores), any other at
    `score_samples`; `families`: the evaluated benchmarks' families."""
    code = sum(f == "code" for f in families)
    per_checkpoint = code * est.hours_of(CODE_SCORING) + (len(families) - code) * est.hours_of("score_samples")
    return Priced(
        hours_per_job=per_checkpoint / max(1, len(families)),
        longest_job_hours=est.hours_of(CODE_SCORING) if code else est.hours_of("score_samples"),
        source="estimated (code and other benchmarks apart)",
        total_hours=per_checkpoint * checkpoints,
    )
