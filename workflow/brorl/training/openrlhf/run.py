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
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import step_prompts
from ..metrics import append_metrics, read_metrics, truncate_after
from ..recipe import ArmPlan, recipe_fingerprint
from ..run_folder import atomic_json, check_fingerprint
from ..segments import CheckpointError, SegmentJob
from ..stop import LAUNCH_ENV, Stopped
from ..tracking import run_name
from .checkpoint import CheckpointStateError, hf_export_problem, keep_up_to, latest_global_step, prune_exports, repair
from .command import MODULE, ClusterPaths, openrlhf_flags, run_layout
from .dataset import TrainDataError, chat_prompt_tokens, reward_text, write_openrlhf_dataset
from .drills import HOLD_ENV, DrillWatch, pending_drills, read_fired
from .job_environment import container_problem, sandbox_python_problem
from .launch import (
    LAUNCHER,
    REWARD_SCRIPT,
    ClusterRunError,
    Terminated,
    launch,
    launch_env,
    read_launches,
    record_launch,
)
from .logs import (
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
from .stop_watch import STOP_STATUS, StopWatch
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


def run_segment(
    config: Mapping[str, Any],
    job: SegmentJob,
    *,
    python: str = sys.executable,
    launcher: Path = LAUNCHER,
    reward_script: Path = REWARD_SCRIPT,
) -> tuple[list[dict], dict]:
    """Train segment `job.index` of `job.plan` on the cluster; returns (its metrics records, manifest extras)."""
    plan, segment_index, segment, arm = job.plan, job.index, job.segment, job.plan.name
    validate_cluster_config(config, [plan])
    container = container_problem(os.environ)
    if container:
        raise ClusterRunError(container)
    layout = run_layout(config, plan, segment_index)
    paths = ClusterPaths(
        job.start_model.resolve(), job.train_data.resolve(), job.out_dir.resolve(), Path(reward_script).resolve()
    )
    context, cluster = config["context"], config["training"]["cluster"]
    first_global, last_global = segment.first_step - 1 - layout.offset, segment.last_step - layout.offset
    paths.openrlhf_dir.mkdir(parents=True, exist_ok=True)
    check_fingerprint(paths.openrlhf_dir, recipe_fingerprint(config, arm))  # never resume another recipe's state

    reference = paths.start_model if layout.reference_step is None else paths.export(layout.reference_step)
    _check_context(reference, context["prompt_max_len"] + context["train_max_len"])
    ckpt = paths.ckpt_dir(layout.run_index)
    ranks = cluster["nodes"] * cluster["gpus_per_node"]
    fixed = repair(
        ckpt,
        ranks,
        _needs_export(plan, segment.steps, segment.last_step, layout.offset),
        fresh_allowed=first_global == 0,
    )
    if fixed.removed or fixed.latest_rewritten:
        print(
            f"checkpoint repair: resume from global step {fixed.resume_step}; removed {list(fixed.removed)}", flush=True
        )
    latest = fixed.resume_step
    if first_global > 0 and (latest is None or latest < first_global):
        raise ClusterRunError(
            f"segment {segment_index} of {arm!r} resumes from step {segment.first_step - 1}, but "
            f"{ckpt} holds {'no full state' if latest is None else f'global step {latest}'}; "
            "run the previous segment first"
        )

    metrics_path = paths.out_dir / "run" / "metrics.jsonl"  # live; finish_training publishes the complete file
    before = truncate_after(metrics_path, segment.first_step - 1) if metrics_path.exists() else []
    prompts_path = metrics_path.with_name(step_prompts.FILE)  # each step's own prompts (the in-batch probe)
    step_prompts.truncate_after(prompts_path, segment.first_step - 1)
    if [r["step"] for r in before] != list(range(1, segment.first_step)):
        raise ClusterRunError(f"{metrics_path}: steps 1..{segment.first_step - 1} must precede segment {segment_index}")

    summary = ensure_prompts(config, plan, paths)  # written by the CPU job prepare_prompts in a workflow run
    _check_prompt_supply(summary, before, plan, segment.first_step)
    if "code" in summary.get("scorers", []):  # the compute nodes run code rewards with their system Python
        from brorl.scoring.sandbox import Limits, isolation_mode, isolation_problem

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
    flags = openrlhf_flags(config, plan, segment_index, paths, job.tracking)
    parse_argv(flags)  # OpenRLHF's own parser and assertions, here, before the allocation does anything
    argv = [python, "-m", MODULE, *flags]
    launches_path = paths.openrlhf_dir / "launches.json"
    drills_path = paths.openrlhf_dir / "drills.json"  # the fault drills fired so far (drills.py)
    if latest is None or latest < last_global:
        for folder in (paths.logs_dir, paths.reward_log_dir, paths.tensorboard_dir):
            folder.mkdir(parents=True, exist_ok=True)
        env = launch_env(config, layout, paths, os.environ, job.ray_emulated, job.tracking, text["special_tokens"])
        attempt = 1 + sum(1 for run in read_launches(launches_path, paths.logs_dir) if run.segment == segment_index)
        logs = f"segment{segment_index:03d}-{attempt}"
        env[LAUNCH_ENV] = f"{arm}-{logs}-{os.getpid()}"  # every process of this launch: what a drill kills
        pending = pending_drills(cluster["drills"], segment.steps, layout.offset, read_fired(drills_path))
        hold = [d for d in pending if d.kind == "kill_in_save"]
        if hold:
            env[HOLD_ENV] = f"{hold[0].global_step}:{cluster['drills']['save_hold_s']}"
        stops = (
            StopWatch(job.stop, paths.stop_request, paths.step_log_dir, env[LAUNCH_ENV], latest or 0)
            if job.stop is not None
            else None
        )
        watch = (
            DrillWatch(pending, ckpt, drills_path, segment_index, logs, env[LAUNCH_ENV], cluster["nodes"], job.stop)
            if pending
            else None
        )
        single_host = cluster["device"] == "cpu" and not (
            os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
        )
        command = [
            str(launcher),
            "--logs",
            str(paths.logs_dir / logs),
            "--nodes",
            str(cluster["nodes"]),
            *(["--single-host"] if single_host else []),
            "--",
            *argv,
        ]
        entry = {"segment": segment_index, "logs": logs, "start": time.time(), "end": None, "status": None}
        record_launch(launches_path, entry)
        print("launching:", " ".join(command), flush=True)
        status = "failed"
        try:
            status = launch(
                command,
                env,
                paths,
                ckpt,
                last_global,
                cluster["poll_seconds"],
                cluster["watchdog_minutes"] * 60,
                watch,
                stops,
            )
        except ClusterRunError:
            status = "watchdog"
            raise
        except Terminated:
            status = "terminated"  # the job was cancelled or hit its time limit; the launch was stopped
            raise
        finally:
            record_launch(launches_path, {**entry, "end": time.time(), "status": status})
        latest = latest_global_step(ckpt)
        if status == STOP_STATUS:
            saved = stops.answered["global_step"]  # the hook records it once OpenRLHF's save returned on every rank
            raise Stopped(
                f"{arm} stopped after step {saved + layout.offset} (global step {saved}, saved for the stop"
                f"{'' if not stops.answered['forced'] else ' outside the save interval'}) on {job.stop.reason}; "
                "the retry resumes from it"
            )
        if latest is None or latest < last_global:
            raise ClusterRunError(
                f"OpenRLHF stopped ({status}) at global step {latest}, before the segment's "
                f"last step {last_global}; logs: {paths.logs_dir}; rerun to resume"
            )
    overshoot = keep_up_to(ckpt, last_global, ranks)  # the next segment starts from exactly this step
    if overshoot:
        print(f"removed what OpenRLHF saved after the segment's last step: {overshoot}", flush=True)

    needed = sorted({s for s in plan.saved_steps if s in segment.steps} | {segment.last_step})
    for step in needed:
        source = ckpt / f"global_step{step - layout.offset}_hf"
        problem = hf_export_problem(source)
        if problem and not (paths.export(step) / "config.json").is_file():
            raise CheckpointError(f"OpenRLHF's HF export of step {step} is not whole: {problem}")
        if not problem:
            _link_tree(source, paths.export(step))
    pruned = prune_exports(ckpt, keep=set())  # linked above where needed; the rest are 3.5 GB each at paper scale

    # this segment's own folder (OpenRLHF writes <tensorboard_dir>/<run name>/): the previous segment's job may have
    # logged a step past its end before it was stopped, which belongs to that segment's reference and optimizer
    # state, never to this one's step of the same number
    segment_tb = paths.tensorboard_dir / run_name(arm, segment_index)
    logs_by_step = read_tensorboard(segment_tb)
    wanted = list(range(first_global + 1, last_global + 1))
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
    launches = read_launches(launches_path, paths.logs_dir)
    segment_start = min(run.start for run in launches if run.segment == segment_index)
    launch_logs = [  # this segment's launches and their launcher logs (engine stats, KV-cache sizes)
        (entry, log.read_text(errors="replace") if log.is_file() else "")
        for entry in json.loads(launches_path.read_text())
        if entry["segment"] == segment_index
        for log in [paths.logs_dir / entry["logs"] / "launcher.log"]
    ]
    reward_calls = read_reward_log(paths.reward_log_dir, since=segment_start)
    records = to_records(
        [logs_by_step[g] for g in wanted],
        offset=layout.offset,
        segment=segment_index,
        n=plan.n,
        dynamic_sampling=config["training"]["dynamic_sampling"]["enabled"],
        wall_s_before=before[-1]["wall_s"] if before else 0.0,
        launches=launches,
        reward_calls=reward_calls,
        partition_calls=read_hook_log(paths.partition_log_dir, "seconds", since=segment_start),
        gpu_memory=read_hook_log(paths.gpu_memory_log_dir, "peak_gib", since=segment_start),
        advantage_rms=read_hook_log(paths.advantage_log_dir, "adv_rms", since=segment_start),
        refills=read_hook_entries(paths.refill_log_dir, since=segment_start),
        engine_lines=[line for entry, text in launch_logs for line in engine_stats(text, entry["start"])],
    )
    step_prompts.write_steps(
        prompts_path, step_prompts_of([logs_by_step[g] for g in wanted], launches, reward_calls, layout.offset)
    )
    for record in records:
        append_metrics(metrics_path, record)
    read_metrics(metrics_path)  # each step exactly once
    this = [run for run in launches if run.segment == segment_index]
    # each launch's vLLM KV-cache sizes (tokens per engine): how many of the step's sequences fit at once
    kv_cache = {entry["logs"]: kv_cache_tokens(text) for entry, text in launch_logs}
    syncs = read_hook_entries(paths.ipc_log_dir, since=segment_start)
    extra = {
        "engine": "cluster",
        "device": cluster["device"],
        # the weight syncs of this segment, and those run with expandable segments switched off (ipc_hook; GPU only)
        "weight_syncs": len(syncs),
        "weight_syncs_legacy_segments": sum(bool(e.get("legacy_segments")) for e in syncs),
        # the scheduler limits each rollout engine reported once started (scheduler_hook): vllm_scheduler's values
        "vllm_scheduler": [
            {k: v for k, v in entry.items() if k != "t"}
            for entry in read_hook_entries(paths.scheduler_log_dir, since=segment_start)
        ],
        "openrlhf_command": argv,
        "layout": dataclasses.asdict(layout),
        "dataset": {k: v for k, v in summary.items() if k != "too_long_ids"},
        "launches": [dataclasses.asdict(run) for run in this],
        "reward_text": text,
        "vllm_kv_cache_tokens": kv_cache,
        "checkpoint_repair": dataclasses.asdict(fixed),
        "drills": [d for d in read_fired(drills_path) if d["segment"] == segment_index],
        # the steps the trainer saved for a stop request before the time limit (stop_hook), each ending a launch
        "stops": [e for e in read_hook_entries(paths.step_log_dir, since=segment_start) if e["stop"]],
        "removed_after_last_step": overshoot,
        "pruned_exports": pruned,
    }
    return records, extra
