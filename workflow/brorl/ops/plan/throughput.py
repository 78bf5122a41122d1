"""Table 2's benchmark jobs sized by their work (docs/design.md#table-2-jobs-sized-by-their-work). Pure: no I/O.

A `bench_throughput` job generates, for each of its layouts (prompts x N), warm-up + repeats batches of prompts x N
samples, each forced to max_tokens tokens (the engine ignores end-of-sequence so every batch has the same work).
Its hours are that many tokens at the evaluation cost model's generation rate per GPU (estimates.yaml
`evaluation:`: published samples/s per GPU x the assumed mean response length), plus one engine start. The plan
prices each job so, and the workflow and `make plan` refuse a layout whose job would not finish within the
profile's runtime of its last attempt: before this, a whole training step of BroRL (128 x 512 at 16K tokens, about
4.3e9 tokens on one GPU) was priced at a flat hour and would have timed out three times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.job_sizes import EvalPrior
from .estimate import Priced

RULE_RUNTIME_MIN = 720  # bench_throughput's own runtime (workflow/rules/throughput.smk), where a profile sets none


@dataclass(frozen=True)
class BenchJob:
    """One bench_throughput job: the layouts it measures (one, or every layout of a setting on one engine)."""

    name: str  # its output's configuration, e.g. p2_n512_pcon
    layouts: tuple[tuple[int, int], ...]  # (prompts, n)
    tokens: float  # generated tokens, warm-up and repeats included
    hours: float  # at the prior's tokens/s on one GPU, plus an engine start


def layout_tokens(prompts: int, n: int, settings: Mapping[str, Any]) -> float:
    """Tokens one layout generates: (warm-up + repeats) batches of prompts x n sequences of max_tokens."""
    batches = int(settings["warmup"]) + int(settings["repeats"])
    return float(prompts) * n * int(settings["max_tokens"]) * batches


def bench_jobs(settings: Mapping[str, Any], prior: EvalPrior) -> list[BenchJob]:
    """Every job of the throughput section (``config["throughput"]``), sized at the prior's rate on one GPU."""
    layouts = [(int(x["prompts"]), int(x["n"])) for x in settings["layouts"]]
    jobs = []
    for caching in settings.get("prefix_caching", [True]):
        pc = "on" if caching else "off"
        groups = [tuple(layouts)] if settings.get("one_engine_per_setting") else [(lay,) for lay in layouts]
        for group in groups:
            tokens = sum(layout_tokens(p, n, settings) for p, n in group)
            hours = tokens / prior.tokens_per_s_per_gpu / 3600 + prior.job_overhead_hours
            name = f"p{group[0][0]}_n{group[0][1]}_pc{pc}" if len(group) == 1 else f"every layout, pc{pc}"
            jobs.append(BenchJob(name, group, tokens, hours))
    return jobs


def overlong(jobs: Sequence[BenchJob], limit_minutes: float, where: str) -> list[str]:
    """One message per job priced beyond ``limit_minutes`` (the runtime of its last attempt, from ``where``)."""
    return [
        f"bench_throughput {job.name}: {job.tokens:.3g} tokens, about {job.hours:.1f} h on one GPU, over the "
        f"{limit_minutes / 60:.1f} h {where}: drop the layout from throughput.layouts, or lower throughput.max_tokens, "
        "warmup or repeats"
        for job in jobs
        if job.hours * 60 > limit_minutes
    ]


def size_lines(jobs: Sequence[BenchJob], prior: EvalPrior) -> list[str]:
    """What each job is sized at, for the plan and the workflow's start-up notes."""
    rate = f"{prior.tokens_per_s_per_gpu:,.0f} tokens/s per GPU (estimates.yaml evaluation:)"
    return [f"bench_throughput {job.name}: {job.tokens:.3g} tokens, about {job.hours:.1f} h at {rate}" for job in jobs]


def runtime_limit(profiled: Any, attempt: int) -> tuple[float, str]:
    """The runtime (minutes) of a bench_throughput job's ``attempt`` and where it comes from: the profile's
    set-resources value ``profiled`` (an expression of ``attempt``), else the rule's own RULE_RUNTIME_MIN, which
    Snakemake applies then (a rule's resources override default-resources)."""
    from .profile import at_attempt

    if profiled is None:
        return float(RULE_RUNTIME_MIN), f"runtime of the rule (no runtime for it in the profile; attempt {attempt})"
    where = f"runtime of its last attempt ({attempt}) in the profile"
    return float(at_attempt(profiled, where, attempt)), where


def refusal(jobs: Sequence[BenchJob], limit_minutes: float, where: str) -> str:
    """Why Table 2's jobs cannot run ("" when they can): each job priced beyond ``limit_minutes`` (``runtime_limit``)."""
    late = overlong(jobs, limit_minutes, where)
    return "Table 2's jobs cannot finish:\n  - " + "\n  - ".join(late) if late else ""


def last_attempt_minutes(profile: Mapping[str, Any]) -> tuple[float, str]:
    """The runtime (minutes) a profile gives a bench_throughput job's last attempt (retries + 1), and where from."""
    profiled = ((profile.get("set-resources") or {}).get("bench_throughput") or {}).get("runtime")
    return runtime_limit(profiled, int(profile.get("retries") or 0) + 1)


def bench_price(jobs: Sequence[BenchJob]) -> Priced:
    """The plan's bench_throughput row: each job at its own hours."""
    hours = [job.hours for job in jobs]
    return Priced(sum(hours) / len(hours), max(hours), "its work at the evaluation model's rate", sum(hours))


def checked_bench_jobs(
    config: Mapping[str, Any], profile: Mapping[str, Any], prior: EvalPrior
) -> tuple[list[BenchJob], str]:
    """Table 2's jobs of a config under a profile, and why they cannot run ("" when they can; see ``refusal``); no
    jobs when throughput is off."""
    if not config["throughput"]["enabled"]:
        return [], ""
    jobs = bench_jobs(config["throughput"], prior)
    return jobs, refusal(jobs, *last_attempt_minutes(profile))
