"""Run one training segment of one arm with OpenRLHF 0.11.2 on the job's Ray cluster (paper scale, or the CPU
rehearsal of the same path with training.cluster.device = cpu).

  1. validate the config for OpenRLHF (validate.py), check the run folder's recipe, and run the command
     through OpenRLHF's real parser;
  2. write the prompt dataset (dataset.py) once per run folder: shuffled passes of the mix, enough for the run;
  3. repair the checkpoint folder (checkpoint.py): resume only from a save that is whole;
  4. launch `ray_on_slurm.sh ... -- python -m openrlhf.cli.train_ppo_ray ...` and stop it once the segment's last
     step is fully saved (OpenRLHF has no max-steps flag: it would train until the prompts run out); a watchdog
     stops a launch that makes no progress; a fault drill (drills.py) may kill it on purpose, once; near the job's
     time limit the trainer is asked to save at the end of the step under way and the job stops there with exit
     status 75 (stop_watch.py, brorl.training.stop), for the retry to resume;
  5. link the HF export of every saved step (and the last step, which a reference reset starts from) into
     run/exports/step<k>/ after checking each is whole (segments.py then verifies and publishes them), and delete
     OpenRLHF's other exports;
  6. convert the logged steps into metrics.jsonl records (logs.py), refusing partial steps.
A rerun of an interrupted segment relaunches with --ckpt.load_enable: OpenRLHF resumes from its latest full state.
All paths handed to OpenRLHF are absolute: Ray workers on other nodes do not share the driver's working directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import step_prompts
from ..metrics import append_metrics, read_metrics, truncate_after
from ..recipe import ArmPlan, recipe_fingerprint
from ..run_folder import atomic_json, check_fingerprint
from ..segments import CheckpointError, SegmentJob
from ..tracking import run_name
from .checkpoint import CheckpointStateError, Repair, hf_export_problem, keep_up_to, prune_exports, repair
from .command import MODULE, ClusterPaths, openrlhf_flags, run_layout
from .dataset import TrainDataError, chat_prompt_tokens, reward_text, write_openrlhf_dataset
from .drills import read_fired
from .job_environment import container_problem
from .launch import (
    LAUNCHER,
    REWARD_SCRIPT,
    ClusterRunError,
    SegmentRun,
    Terminated,
    launch_until_saved,
    prepare_launch,
    read_launches,
)
from .logs import (
    Launch,
    StepLog,
    engine_stats,
    kv_cache_tokens,
    read_hook_entries,
    read_hook_log,
    read_reward_log,
    read_tensorboard,
    step_prompts_of,
    to_records,
)
from .parse import OpenRLHFArgError, parse_argv
from .validate import ClusterConfigError, validate_cluster_config


def _check_context(model_dir: Path, max_len: int) -> None:
    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise CheckpointError(f"{model_dir}: no config.json (not a Hugging Face model folder)")
    positions = json.loads(config_path.read_text()).get("max_position_embeddings")
    if positions is not None and positions < max_len:
        raise ClusterRunError(
            f"{model_dir} accepts {positions} positions but OpenRLHF's --data.max_len is {max_len} "
            "(context.prompt_max_len + context.train_max_len): extend the context first"
        )


def _link_tree(src: Path, dst: Path) -> None:
    """dst = a copy of folder src made of hard links (copies across file systems), replaced atomically."""
    import shutil

    from brorl.models.folders import link_or_copy

    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, copy_function=lambda s, d: link_or_copy(Path(s), Path(d)))
    shutil.rmtree(dst, ignore_errors=True)
    tmp.replace(dst)


# the errors that end a job of this engine with one `error: ...` line (brorl.training.cli)
ERRORS = (ClusterConfigError, OpenRLHFArgError, ClusterRunError, TrainDataError, CheckpointStateError, Terminated)


def _needs_export(plan: ArmPlan, segment_steps: range, last_step: int, offset: int):
    """needs_export(global step) for checkpoint repair: the segment's saved steps and its last step."""
    wanted = {s - offset for s in plan.saved_steps if s in segment_steps} | {last_step - offset}
    return lambda global_step: global_step in wanted


def _check_prompt_supply(summary: dict, earlier: list[dict], plan: ArmPlan, first_step: int) -> None:
    """Warn when, at the pass rate seen so far, the prompt file will not last the run (it is sized for
    training.cluster.pass_rate_floor; a step that meets its end is refused after training)."""
    consumed = sum(r["generated_prompts"] for r in earlier)
    kept = sum(r["prompts"] for r in earlier)
    if not consumed or not kept:
        return
    rate = kept / consumed
    need = (plan.continued_steps - first_step + 1) * plan.prompts_per_step / rate
    left = summary["prompts"] - consumed
    if need > left:
        print(
            f"warning: at the pass rate so far ({rate:.2f}) the remaining {plan.continued_steps - first_step + 1} "
            f"steps need ~{need:.0f} prompts, the prompt file has {left} left; a step that meets its end stops "
            "the run (lower training.cluster.pass_rate_floor for the next run of this arm)",
            flush=True,
        )


def ensure_prompts(config: Mapping[str, Any], plan: ArmPlan, paths: ClusterPaths) -> dict:
    """The arm's OpenRLHF prompt file (paths.dataset) and its summary, written when missing: by the CPU job
    prepare_prompts before the arm's first GPU job, or here (a job run by hand). Deterministic in the arm's seed."""
    summary_path = paths.openrlhf_dir / "dataset.json"
    if not paths.dataset.is_file() or not summary_path.is_file():
        paths.openrlhf_dir.mkdir(parents=True, exist_ok=True)
        summary = write_openrlhf_dataset(
            paths.train_data,
            paths.dataset,
            chat_prompt_tokens(paths.start_model),
            config["context"]["prompt_max_len"],
            seed=plan.seed,
            prompts_needed=plan.continued_steps
            * plan.prompts_per_step
            / config["training"]["cluster"]["pass_rate_floor"],
        )
        atomic_json(summary_path, summary)
    return json.loads(summary_path.read_text())


def _prepare_run(config: Mapping[str, Any], job: SegmentJob, reward_script: Path) -> SegmentRun:
    """The segment's run, once the config, the container, the run folder's recipe and the context allow it."""
    validate_cluster_config(config, [job.plan])
    container = container_problem(os.environ)
    if container:
        raise ClusterRunError(container)
    layout = run_layout(config, job.plan, job.index)
    paths = ClusterPaths(
        job.start_model.resolve(), job.train_data.resolve(), job.out_dir.resolve(), Path(reward_script).resolve()
    )
    context = config["context"]
    paths.openrlhf_dir.mkdir(parents=True, exist_ok=True)
    # never resume another recipe's state
    check_fingerprint(paths.openrlhf_dir, recipe_fingerprint(config, job.plan.name))

    reference = paths.start_model if layout.reference_step is None else paths.export(layout.reference_step)
    _check_context(reference, context["prompt_max_len"] + context["train_max_len"])
    return SegmentRun(config, job, layout, paths, reference)


def _repair_checkpoint(run: SegmentRun) -> Repair:
    """What checkpoint repair did to the run's ckpt folder, once it holds the state the segment resumes from."""
    plan, segment = run.job.plan, run.job.segment
    fixed = repair(
        run.ckpt,
        run.ranks,
        _needs_export(plan, segment.steps, segment.last_step, run.layout.offset),
        fresh_allowed=run.first_global == 0,
    )
    if fixed.removed or fixed.latest_rewritten:
        print(
            f"checkpoint repair: resume from global step {fixed.resume_step}; removed {list(fixed.removed)}", flush=True
        )
    latest = fixed.resume_step
    if run.first_global > 0 and (latest is None or latest < run.first_global):
        raise ClusterRunError(
            f"segment {run.job.index} of {plan.name!r} resumes from step {segment.first_step - 1}, but "
            f"{run.ckpt} holds {'no full state' if latest is None else f'global step {latest}'}; "
            "run the previous segment first"
        )
    return fixed


def _metrics_before(run: SegmentRun) -> list[dict]:
    """The metrics records of the steps before the segment (the live files cut after them)."""
    first_step = run.job.segment.first_step
    before = truncate_after(run.metrics_path, first_step - 1) if run.metrics_path.exists() else []
    step_prompts.truncate_after(run.prompts_path, first_step - 1)
    if [r["step"] for r in before] != list(range(1, first_step)):
        raise ClusterRunError(f"{run.metrics_path}: steps 1..{first_step - 1} must precede segment {run.job.index}")
    return before


def _check_code_rewards(summary: dict, cluster: Mapping[str, Any]) -> None:
    """Refuse (ClusterRunError) code rewards the compute nodes cannot run: no sandbox Python, or no isolation."""
    if "code" in summary.get("scorers", []):  # the compute nodes run code rewards with their system Python
        from brorl.scoring.sandbox import Limits, isolation_mode, isolation_problem, sandbox_python_problem

        problem = sandbox_python_problem(Limits().python)
        if problem:
            raise ClusterRunError(
                f"code rewards need a Python >= 3.8 inside the sandbox: {problem}; install one on "
                "the compute nodes (Debian/Ubuntu: python3-minimal)"
            )
        isolation = isolation_problem(
            isolation_mode(), cluster["allow_unsandboxed_code"], "training.cluster.allow_unsandboxed_code"
        )
        if isolation:
            raise ClusterRunError(isolation)


def _reward_text(reference: Path) -> dict:
    """reward_text(reference), printed: what the reward strips and whether the chat template opens <think>."""
    try:  # what the reward strips (special tokens, vLLM's stop ids) and whether the template opened <think>
        text = reward_text(reference)
    except ValueError as error:  # a stop id the truncation rule cannot see: refused before any launch
        raise ClusterRunError(str(error)) from error
    style = "opens <think> in the generation prompt (responses are scored with that tag)"
    if not text["template_opens_reasoning"]:
        style = "leaves <think> to the response"
    print(
        f"chat template of {reference}: {style}; stripped from the end of decoded responses: {text['special_tokens']}"
    )
    return text


def _link_exports(run: SegmentRun) -> list[int]:
    """The pruned exports' global steps, once every export the segment needs is whole and linked into run/exports."""
    plan, segment, paths = run.job.plan, run.job.segment, run.paths
    needed = sorted({s for s in plan.saved_steps if s in segment.steps} | {segment.last_step})
    for step in needed:
        source = run.ckpt / f"global_step{step - run.layout.offset}_hf"
        problem = hf_export_problem(source)
        if problem and not (paths.export(step) / "config.json").is_file():
            raise CheckpointError(f"OpenRLHF's HF export of step {step} is not whole: {problem}")
        if not problem:
            _link_tree(source, paths.export(step))
    return prune_exports(run.ckpt, keep=set())  # linked above where needed; the rest are 3.5 GB each at paper scale


def _segment_logs(run: SegmentRun, summary: dict) -> list[StepLog]:
    """The segment's logged steps in order, each a whole step (refused where one is missing or partial)."""
    plan, paths = run.job.plan, run.paths
    # this segment's own folder (OpenRLHF writes <tensorboard_dir>/<run name>/): the previous segment's job may have
    # logged a step past its end before it was stopped, which belongs to that segment's reference and optimizer
    # state, never to this one's step of the same number
    segment_tb = paths.tensorboard_dir / run_name(plan.name, run.job.index)
    logs_by_step = read_tensorboard(segment_tb)
    wanted = list(range(run.first_global + 1, run.last_global + 1))
    missing = [g for g in wanted if g not in logs_by_step]
    if missing:
        raise ClusterRunError(f"{segment_tb}: no logged metrics for global steps {missing}")
    partial = [g for g in wanted if round(logs_by_step[g].scalars["rollout/num_samples"]) != plan.samples_per_step]
    if partial:
        raise ClusterRunError(
            f"global steps {partial} trained on fewer than {plan.samples_per_step} samples: OpenRLHF "
            f"reached the end of {paths.dataset} ({summary['prompts']} prompts); this run cannot be "
            "counted: retrain the arm with a lower training.cluster.pass_rate_floor"
        )
    return [logs_by_step[g] for g in wanted]


@dataclasses.dataclass(frozen=True)
class _Launches:
    """The arm's launches, when the segment's first one started, and each of the segment's launches' entry in
    launches.json with its launcher log (engine stats, KV-cache sizes)."""

    runs: list[Launch]
    segment_start: float
    logs: list[tuple[dict, str]]


def _read_launches(run: SegmentRun) -> _Launches:
    """The arm's launches and the segment's launcher logs, as launches.json records them."""
    paths, index = run.paths, run.job.index
    launches = read_launches(run.launches_path, paths.logs_dir)
    segment_start = min(launched.start for launched in launches if launched.segment == index)
    launch_logs = [  # this segment's launches and their launcher logs (engine stats, KV-cache sizes)
        (entry, log.read_text(errors="replace") if log.is_file() else "")
        for entry in json.loads(run.launches_path.read_text())
        if entry["segment"] == index
        for log in [paths.logs_dir / entry["logs"] / "launcher.log"]
    ]
    return _Launches(launches, segment_start, launch_logs)


def _write_records(run: SegmentRun, logs: list[StepLog], before: list[dict], launches: _Launches) -> list[dict]:
    """The segment's metrics records, appended to the live metrics.jsonl (and its steps' prompts written)."""
    paths, since = run.paths, launches.segment_start
    reward_calls = read_reward_log(paths.reward_log_dir, since=since)
    records = to_records(
        logs,
        offset=run.layout.offset,
        segment=run.job.index,
        n=run.job.plan.n,
        dynamic_sampling=run.config["training"]["dynamic_sampling"]["enabled"],
        wall_s_before=before[-1]["wall_s"] if before else 0.0,
        launches=launches.runs,
        reward_calls=reward_calls,
        partition_calls=read_hook_log(paths.partition_log_dir, "seconds", since=since),
        gpu_memory=read_hook_log(paths.gpu_memory_log_dir, "peak_gib", since=since),
        advantage_rms=read_hook_log(paths.advantage_log_dir, "adv_rms", since=since),
        refills=read_hook_entries(paths.refill_log_dir, since=since),
        engine_lines=[line for entry, text in launches.logs for line in engine_stats(text, entry["start"])],
    )
    step_prompts.write_steps(run.prompts_path, step_prompts_of(logs, launches.runs, reward_calls, run.layout.offset))
    for record in records:
        append_metrics(run.metrics_path, record)
    read_metrics(run.metrics_path)  # each step exactly once
    return records


def _manifest_extra(
    run: SegmentRun,
    launches: _Launches,
    *,
    argv: list[str],
    summary: dict,
    text: dict,
    fixed: Repair,
    overshoot: list[str],
    pruned: list[int],
) -> dict:
    """The segment manifest's extra fields of this engine."""
    paths, index, since = run.paths, run.job.index, launches.segment_start
    this = [launched for launched in launches.runs if launched.segment == index]
    # each launch's vLLM KV-cache sizes (tokens per engine): how many of the step's sequences fit at once
    kv_cache = {entry["logs"]: kv_cache_tokens(log) for entry, log in launches.logs}
    syncs = read_hook_entries(paths.ipc_log_dir, since=since)
    return {
        "engine": "cluster",
        "device": run.cluster["device"],
        # the weight syncs of this segment, and those run with expandable segments switched off (ipc_hook; GPU only)
        "weight_syncs": len(syncs),
        "weight_syncs_legacy_segments": sum(bool(e.get("legacy_segments")) for e in syncs),
        # the scheduler limits each rollout engine reported once started (scheduler_hook): vllm_scheduler's values
        "vllm_scheduler": [
            {k: v for k, v in entry.items() if k != "t"}
            for entry in read_hook_entries(paths.scheduler_log_dir, since=since)
        ],
        "openrlhf_command": argv,
        "layout": dataclasses.asdict(run.layout),
        "dataset": {k: v for k, v in summary.items() if k != "too_long_ids"},
        "launches": [dataclasses.asdict(launched) for launched in this],
        "reward_text": text,
        "vllm_kv_cache_tokens": kv_cache,
        "checkpoint_repair": dataclasses.asdict(fixed),
        "drills": [d for d in read_fired(run.drills_path) if d["segment"] == index],
        # the steps the trainer saved for a stop request before the time limit (stop_hook), each ending a launch
        "stops": [e for e in read_hook_entries(paths.step_log_dir, since=since) if e["stop"]],
        "removed_after_last_step": overshoot,
        "pruned_exports": pruned,
    }


def run_segment(
    config: Mapping[str, Any],
    job: SegmentJob,
    *,
    python: str = sys.executable,
    launcher: Path = LAUNCHER,
    reward_script: Path = REWARD_SCRIPT,
) -> tuple[list[dict], dict]:
    """Train segment `job.index` of `job.plan` on the cluster; returns (its metrics records, manifest extras)."""
    run = _prepare_run(config, job, reward_script)
    fixed = _repair_checkpoint(run)
    before = _metrics_before(run)
    summary = ensure_prompts(config, job.plan, run.paths)  # written by the CPU job prepare_prompts in a workflow run
    _check_prompt_supply(summary, before, job.plan, job.segment.first_step)
    _check_code_rewards(summary, run.cluster)
    text = _reward_text(run.reference)
    flags = openrlhf_flags(config, job.plan, job.index, run.paths, job.tracking)
    parse_argv(flags)  # OpenRLHF's own parser and assertions, here, before the allocation does anything
    argv = [python, "-m", MODULE, *flags]
    latest = fixed.resume_step
    if latest is None or latest < run.last_global:
        launch_until_saved(run, prepare_launch(run, argv, latest, text["special_tokens"], launcher))
    overshoot = keep_up_to(run.ckpt, run.last_global, run.ranks)  # the next segment starts from exactly this step
    if overshoot:
        print(f"removed what OpenRLHF saved after the segment's last step: {overshoot}", flush=True)
    pruned = _link_exports(run)
    logs = _segment_logs(run, summary)
    launches = _read_launches(run)
    records = _write_records(run, logs, before, launches)
    extra = _manifest_extra(
        run, launches, argv=argv, summary=summary, text=text, fixed=fixed, overshoot=overshoot, pruned=pruned
    )
    return records, extra
