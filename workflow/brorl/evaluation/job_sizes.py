"""The size of each GPU generation job and the evaluation cost model the plan prices with it
(docs/design.md#the-evaluation-cost-model). Pure: no I/O.

GPU-hours of one (checkpoint, benchmark) = problems x samples per problem x mean response tokens / (generated
tokens per second per GPU), plus a start-up overhead (vLLM start, model load) for every GPU of the job. Mean
response tokens and tokens/s are measured where a run at the planned scale exists (brorl.ops.plan.measured, in the ops wing), else
priors (EvalPrior, profiles/slurm/estimates.yaml `evaluation:`). The job size is decided here, from the priors
only, so that the size generate_samples asks Slurm for (workflow/rules/helpers/evaluate.smk) and the size the plan
prices are the same number: the fewest GPUs (a power of two, at most one node) that finish the job's generation
within a target time, so that small benchmarks (AIME: 30 problems) do not hold a whole 8-GPU node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class EvalPrior:
    """What the model assumes where nothing is measured (each value's origin is in estimates.yaml)."""

    samples_per_s: float  # published generation throughput of the whole training setup (paper Table 2, N=16)
    reference_gpus: int  # the GPUs that throughput was measured on (paper: 64 H100)
    mean_response_tokens: float  # ASSUMPTION: mean response length of an evaluation sample and a rollout sample
    job_overhead_hours: float  # ASSUMPTION: start-up of one generation job (engine start, model load)
    target_job_hours: float  # our choice: generation time one job should not exceed when sizing it

    @property
    def tokens_per_s_per_gpu(self) -> float:
        """Published samples/s per GPU x the assumed mean length of those samples."""
        return self.samples_per_s / self.reference_gpus * self.mean_response_tokens


@dataclass(frozen=True)
class Measured:
    """A measured quantity and how many jobs it comes from."""

    value: float
    jobs: int


@dataclass(frozen=True)
class BenchmarkCost:
    """The model's line for one benchmark, per evaluated checkpoint unless named `total_`."""

    benchmark: str
    problems: int
    samples: int  # problems x samples per problem
    mean_tokens: float
    mean_tokens_source: str  # "measured (k jobs)" or "prior (assumption)"
    tokens_per_s_per_gpu: float
    tokens_per_s_source: str
    overhead_hours: float  # per GPU of the job (0 when tokens/s is measured: the measured job times include it)
    gpus: int  # proposed GPUs per job
    checkpoints: int
    start_extra: int = 0  # extra draws of samples_per_problem the start checkpoint's job generates (start_draws - 1)

    @property
    def tokens(self) -> float:
        return self.samples * self.mean_tokens

    @property
    def compute_gpu_hours(self) -> float:
        return self.tokens / self.tokens_per_s_per_gpu / 3600

    @property
    def job_hours(self) -> float:
        """Wall-clock hours of one job on `gpus` GPUs."""
        return self.compute_gpu_hours / self.gpus + self.overhead_hours

    @property
    def job_gpu_hours(self) -> float:
        return self.job_hours * self.gpus

    def gpu_hours_on(self, gpus: int) -> float:
        """GPU-hours of one job had it `gpus` GPUs (the profile's fixed size, for the before/after)."""
        return self.compute_gpu_hours + self.overhead_hours * gpus

    @property
    def start_job_hours(self) -> float:
        """Wall-clock hours of the start checkpoint's job, which generates its extra draws too."""
        return self.job_hours + self.start_extra * self.compute_gpu_hours / self.gpus

    @property
    def total_job_hours(self) -> float:
        return self.job_hours * self.checkpoints + self.start_extra * self.compute_gpu_hours / self.gpus

    @property
    def total_gpu_hours(self) -> float:
        return self.job_gpu_hours * self.checkpoints + self.start_extra * self.compute_gpu_hours


def size_gpus(compute_gpu_hours: float, target_job_hours: float, gpus_per_node: int) -> int:
    """The fewest GPUs, a power of two up to one node, whose share of the work fits within the target time."""
    if target_job_hours <= 0:
        raise ValueError(f"target_job_hours must be > 0, not {target_job_hours}")
    gpus = 1
    while gpus < gpus_per_node and compute_gpu_hours / gpus > target_job_hours:
        gpus *= 2
    return min(gpus, gpus_per_node)


def job_gpus(
    problems: Mapping[str, int], samples_per_problem: int, prior: EvalPrior, gpus_per_node: int
) -> dict[str, int]:
    """GPUs of one generation job per benchmark, from the priors (a measured run changes the hours, never the size:
    the jobs already ran at this size)."""
    tps = prior.tokens_per_s_per_gpu
    return {
        bench: size_gpus(
            count * samples_per_problem * prior.mean_response_tokens / tps / 3600, prior.target_job_hours, gpus_per_node
        )
        for bench, count in problems.items()
    }


def evaluation_costs(
    problems: Mapping[str, int],
    samples_per_problem: int,
    checkpoints: int,
    prior: EvalPrior,
    gpus_per_node: int,
    mean_tokens: Mapping[str, Measured] | None = None,
    tokens_per_s: Measured | None = None,
    start_extra: int = 0,
) -> list[BenchmarkCost]:
    """The model's line per benchmark. mean_tokens: measured mean response tokens per benchmark; tokens_per_s:
    measured generated tokens per second per GPU (whole generation jobs, start-up included); start_extra: extra
    draws the start checkpoint's job generates (evaluation.start_draws - 1, 0 when the start is not evaluated)."""
    mean_tokens = mean_tokens or {}
    sizes = job_gpus(problems, samples_per_problem, prior, gpus_per_node)
    if tokens_per_s:
        tps, tps_source, overhead = tokens_per_s.value, f"measured ({tokens_per_s.jobs} jobs)", 0.0
    else:
        tps, tps_source, overhead = prior.tokens_per_s_per_gpu, "prior (paper Table 2 x assumed length)", None
    rows = []
    for bench, count in problems.items():
        measured = mean_tokens.get(bench)
        mean = measured.value if measured else prior.mean_response_tokens
        source = f"measured ({measured.jobs} jobs)" if measured else "prior (assumption)"
        rows.append(
            BenchmarkCost(
                benchmark=bench,
                problems=count,
                samples=count * samples_per_problem,
                mean_tokens=mean,
                mean_tokens_source=source,
                tokens_per_s_per_gpu=tps,
                tokens_per_s_source=tps_source,
                overhead_hours=prior.job_overhead_hours if overhead is None else overhead,
                gpus=sizes[bench],
                checkpoints=checkpoints,
                start_extra=start_extra,
            )
        )
    return rows


def summary(rows: list[BenchmarkCost], profile_gpus: int, old_hours_per_job: float) -> dict[str, float]:
    """Evaluation generation GPU-hours: the old estimate (hand-entered hours x the profile's GPUs), the model at
    the profile's job size, and the model with the proposed sizing."""
    jobs = sum(r.checkpoints for r in rows)
    return {
        "jobs": float(jobs),
        "old_gpu_hours": jobs * old_hours_per_job * profile_gpus,
        "model_gpu_hours_profile_size": math.fsum(
            r.gpu_hours_on(profile_gpus) * r.checkpoints + r.start_extra * r.compute_gpu_hours for r in rows
        ),
        "model_gpu_hours_sized": math.fsum(r.total_gpu_hours for r in rows),
        "tokens": math.fsum(r.tokens * (r.checkpoints + r.start_extra) for r in rows),
    }
