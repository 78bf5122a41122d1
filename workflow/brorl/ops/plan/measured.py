"""Measurements of an earlier run for the plan (``python -m brorl.ops.plan --measured DIR``), kept only where the run
says it ran at the planned scale (docs/cluster.md#measured-or-estimated).

DIR is the workflow directory of that run (it holds results/). Read: every job's Snakemake ``benchmark:`` file
(results/timings/<rule>/<wildcards>.tsv, seconds in column `s`), the generation sidecars
(results/eval/<arm>/step<step>/<benchmark>.samples.parquet.json: samples, mean response tokens, engine, sampling)
and the training metrics (results/train/<arm>/metrics.jsonl: step_s per step, with the arm's segment*.json).

The scale rule, so that the tiny CPU preset's seconds are never priced as paper-scale ones:
- a generation or scoring job counts only when its sidecar's engine, samples per problem, max_tokens and number of
  problems are the planned config's;
- a training arm counts only when its segment records name the planned engine and samples per step (and, for
  OpenRLHF, the planned response budget and node count in the command they ran);
- a job of any other rule has no record of its own scale: it counts only when the run as a whole is at the planned
  scale (at least one sidecar or segment record checked, none different).
Everything else is set aside, and the plan says how many and why.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVAL_KEYED = ("generate_samples", "score_samples")  # timings/<rule>/<arm>/step<step>/<benchmark>.tsv


class MeasuredError(ValueError):
    """A --measured directory that is not a workflow directory, or a file in it that cannot be read."""


@dataclass(frozen=True)
class EvalJob:
    """One measured generation job at the planned scale."""

    benchmark: str
    samples: int
    mean_tokens: float
    seconds: float | None  # None when its timing file is missing
    gpus: int | None = None  # the GPUs the job had (its sidecar's resources.gpus); None in sidecars before it


@dataclass
class MeasuredRun:
    """What a run measured, at the planned scale only."""

    root: Path
    rule_seconds: dict[str, list[float]] = field(default_factory=dict)
    eval_jobs: list[EvalJob] = field(default_factory=list)
    train_step_s: dict[str, list[float]] = field(default_factory=dict)
    train_split: dict[str, str] = field(default_factory=dict)  # arm -> how its steps' time splits (waves, update)
    set_aside: dict[str, list[str]] = field(default_factory=dict)  # rule (or train_ppo[arm]) -> reasons

    def set_aside_line(self) -> str:
        """One line: what was not used and why (the first reason of each rule)."""
        parts = [f"{rule} {len(why)} ({why[0]})" for rule, why in sorted(self.set_aside.items())]
        return "; ".join(parts) or "nothing"


def read_timing(path: Path) -> float:
    """Seconds of one job from its benchmark file (the mean where `--benchmark-repeats` wrote several rows)."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        seconds = [float(r["s"]) for r in rows]
    except (OSError, KeyError, TypeError, ValueError) as err:
        raise MeasuredError(f"{path}: not a Snakemake benchmark file (a TSV with column s): {err}") from err
    if not seconds or not all(math.isfinite(s) and s >= 0 for s in seconds):
        raise MeasuredError(f"{path}: no seconds in the benchmark file")
    return math.fsum(seconds) / len(seconds)


def eval_scale_mismatch(
    sidecar: Mapping[str, Any], config: Mapping[str, Any], problems: int | None, start: bool = False
) -> str | None:
    """Why a generation sidecar is not at the planned scale, or None when it is (``start``: the start checkpoint's,
    which generates evaluation.start_draws draws of the samples)."""
    evaluation = config["evaluation"]
    planned_n = evaluation["n_samples"] * (evaluation["start_draws"] if start else 1)
    engine = (sidecar.get("engine") or {}).get("kind")
    sampling = sidecar.get("sampling") or {}
    items = (sidecar.get("benchmark") or {}).get("items")
    if engine != config["engine"]:
        return f"engine {engine}, planned {config['engine']}"
    if sampling.get("max_tokens") != evaluation["max_tokens"]:
        return f"max_tokens {sampling.get('max_tokens')}, planned {evaluation['max_tokens']}"
    if sampling.get("n") != planned_n:
        return f"{sampling.get('n')} samples per problem, planned {planned_n}"
    if problems is not None and items != problems:
        return f"{items} problems, planned {problems}"
    return None


def command_value(argv: list[str] | None, flag: str) -> str | None:
    """The value after `flag` in a recorded OpenRLHF command line, or None."""
    argv = argv or []
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def train_scale_mismatch(segment: Mapping[str, Any], config: Mapping[str, Any], samples_per_step: int) -> str | None:
    """Why a training segment record is not at the planned scale, or None when it is: the engine, the samples per
    step and, for OpenRLHF's records, the response budget and the node count its command ran with (a step at the
    smoke run's 2,048 tokens or on one node is not the paper's step)."""
    engine = segment.get("engine")
    samples = (segment.get("plan") or {}).get("samples_per_step")
    if engine != config["engine"]:
        return f"engine {engine}, planned {config['engine']}"
    if samples != samples_per_step:
        return f"{samples} samples per step, planned {samples_per_step}"
    argv = segment.get("openrlhf_command")
    if argv is not None:
        budget, planned_budget = command_value(argv, "--rollout.max_new_tokens"), config["context"]["train_max_len"]
        if budget is None or int(budget) != planned_budget:
            return f"a {budget}-token response budget, planned {planned_budget}"
        nodes, planned_nodes = command_value(argv, "--actor.num_nodes"), config["training"]["cluster"]["nodes"]
        if nodes is None or int(nodes) != planned_nodes:
            return f"{nodes} node(s), planned {planned_nodes}"
    return None


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise MeasuredError(f"{path}: cannot read it as JSON: {err}") from err


def _generation_timing(results: Path, key: tuple[str, str, str]) -> Path:
    """The timing file of generate_samples for (arm, step<k>, benchmark)."""
    arm, step, benchmark = key
    return results / "timings" / "generate_samples" / arm / step / f"{benchmark}.tsv"


@dataclass
class _ScaleChecks:
    """What the scale rule found so far: records checked, how many differ from the plan, and each generation job's
    verdict (and why not, where it is not at the planned scale)."""

    checked: int = 0
    differs: int = 0
    at_scale: dict[tuple[str, str, str], bool] = field(default_factory=dict)
    reasons: dict[tuple[str, str, str], str] = field(default_factory=dict)


def _aside(run: MeasuredRun, rule: str, why: str) -> None:
    """Nothing: records that a job of `rule` was set aside, and why."""
    run.set_aside.setdefault(rule, []).append(why)


def _read_generation(
    results: Path, config: Mapping[str, Any], problems: Mapping[str, int], run: MeasuredRun, scale: _ScaleChecks
) -> None:
    """Nothing: adds the generation jobs at the planned scale to `run` and every sidecar's verdict to `scale`."""
    # generation sidecars decide their own jobs (and the scoring jobs of the same checkpoint and benchmark)
    for sidecar in sorted((results / "eval").glob("*/step*/*.samples.parquet.json")):
        key = (sidecar.parents[1].name, sidecar.parent.name, sidecar.name.removesuffix(".samples.parquet.json"))
        meta = _json(sidecar)
        start = key[:2] == ("base", f"step{config['base_model']['start_step']}")
        why = eval_scale_mismatch(meta, config, problems.get(key[2]), start)
        scale.checked, scale.differs = scale.checked + 1, scale.differs + bool(why)
        scale.at_scale[key] = why is None
        if why:
            scale.reasons[key] = why
            continue
        timing = _generation_timing(results, key)
        summary = meta.get("summary") or {}
        run.eval_jobs.append(
            EvalJob(
                benchmark=key[2],
                samples=int(summary.get("rows", 0)),
                mean_tokens=float(summary.get("mean_n_tokens", 0.0)),
                seconds=read_timing(timing) if timing.is_file() else None,
                gpus=(meta.get("resources") or {}).get("gpus"),
            )
        )


def _read_arm_metrics(run: MeasuredRun, arm: str, metrics: Path) -> None:
    """Nothing: adds the step seconds of an arm at the planned scale, and how its steps' time splits, to `run`."""
    from ...training.metrics import MetricsError, read_metrics
    from ...training.refill import step_time_text

    try:
        records = read_metrics(metrics)
    except MetricsError as err:
        raise MeasuredError(str(err)) from err
    steps = [float(r["step_s"]) for r in records if r.get("step_s") is not None]
    if steps:
        run.train_step_s[arm] = steps
    split = step_time_text(records)
    if split:
        run.train_split[arm] = split


def _read_training(
    results: Path,
    config: Mapping[str, Any],
    samples_per_step: Mapping[str, int],
    run: MeasuredRun,
    scale: _ScaleChecks,
) -> None:
    """Nothing: adds the arms at the planned scale to `run` (others to its set-aside), counts segments in `scale`."""
    for arm, planned in samples_per_step.items():
        folder = results / "train" / arm
        segments = sorted(folder.glob("segment*.json"))
        metrics = folder / "metrics.jsonl"
        if not segments or not metrics.is_file():
            continue
        whys = [w for w in (train_scale_mismatch(_json(s), config, planned) for s in segments) if w]
        scale.checked, scale.differs = scale.checked + len(segments), scale.differs + len(whys)
        if whys:
            _aside(run, f"train_ppo[{arm}]", whys[0])
            continue
        _read_arm_metrics(run, arm, metrics)


def _read_timings(results: Path, run: MeasuredRun, scale: _ScaleChecks) -> None:
    """Nothing: adds the timed jobs at the planned scale to `run`'s seconds per rule, the others to its set-aside."""
    run_at_scale = scale.checked > 0 and scale.differs == 0
    for timing in sorted((results / "timings").glob("*/**/*.tsv")):
        rule = timing.relative_to(results / "timings").parts[0]
        if rule in EVAL_KEYED:
            parts = timing.relative_to(results / "timings" / rule).with_suffix("").parts
            key = (parts[0], parts[1], parts[2]) if len(parts) == 3 else ("", "", "")
            if not scale.at_scale.get(key, False):
                _aside(run, rule, scale.reasons.get(key, "no generation sidecar beside it"))
                continue
            if rule == "generate_samples":
                continue  # priced by the evaluation model from eval_jobs
        elif not run_at_scale:
            _aside(
                run,
                rule,
                "the run's scale is unknown (no sidecar or segment record)"
                if not scale.checked
                else "the run is not at the planned scale",
            )
            continue
        run.rule_seconds.setdefault(rule, []).append(read_timing(timing))
    for key, why in scale.reasons.items():
        if not _generation_timing(results, key).is_file():
            _aside(run, "generate_samples", why)


def read_measured(
    root: Path, config: Mapping[str, Any], problems: Mapping[str, int], samples_per_step: Mapping[str, int]
) -> MeasuredRun:
    """The measurements of the run in `root` that are at the planned scale (see the module's scale rule).

    problems: planned problems per benchmark; samples_per_step: planned samples per step of each enabled arm."""
    results = Path(root) / "results"
    if not results.is_dir():
        raise MeasuredError(f"--measured {root}: no results/ folder (give the workflow directory of a finished run)")
    run = MeasuredRun(Path(root))
    scale = _ScaleChecks()
    _read_generation(results, config, problems, run, scale)
    _read_training(results, config, samples_per_step, run, scale)
    _read_timings(results, run, scale)
    return run


def measured_tokens_per_s(jobs: list[EvalJob], gpus_per_job: int) -> tuple[float, int] | None:
    """Generated tokens per second per GPU over the timed generation jobs (whole jobs: start-up included), and how
    many jobs; None when none is timed. Each job counts the GPUs its sidecar records; `gpus_per_job` (the profile's)
    stands in for a sidecar written before they were recorded."""
    timed = [j for j in jobs if j.seconds]
    if not timed:
        return None
    tokens = math.fsum(j.samples * j.mean_tokens for j in timed)
    return tokens / math.fsum(j.seconds * (j.gpus or gpus_per_job) for j in timed), len(timed)


def measured_mean_tokens(jobs: list[EvalJob]) -> dict[str, tuple[float, int]]:
    """Mean response tokens per benchmark (sample-weighted over its jobs) and how many jobs."""
    by_bench: dict[str, list[EvalJob]] = {}
    for job in jobs:
        if job.samples:
            by_bench.setdefault(job.benchmark, []).append(job)
    return {
        b: (math.fsum(j.samples * j.mean_tokens for j in js) / sum(j.samples for j in js), len(js))
        for b, js in by_bench.items()
    }
