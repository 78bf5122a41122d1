"""OpenRLHF 0.11.2's per-step logs -> our metrics.jsonl records (brorl.training.metrics.FIELDS).

What OpenRLHF logs (trainer/ppo_trainer.py fit/train_step, TensorboardLogger: tag `train/<key>`, step = its global
step, one event per step and key): `rollout/num_samples`, `rollout/reward_mean`, `rollout/response_length_mean`,
`rollout/truncated_rate` (over the samples TRAINED on, i.e. after dynamic filtering), `dynamic_filtering_pass_rate`,
`kl`, `entropy_loss` (with --actor.entropy_coef), `actor_lr`, `score`, and `timing/{generation, make_experience,
ppo_train, broadcast, step_total}`.

`dynamic_filtering_pass_rate` is len(accepted SAMPLES) / consumed PROMPTS x 100 (samples_generator.py: the accepted
list holds one Experience per sample), i.e. N times the prompt pass rate; so consumed prompts =
num_samples x 100 / logged value. Rewards of dropped groups are not logged by OpenRLHF: reward_mean and score_mean
over generated samples come from our reward log (workflow/scripts/openrlhf_reward.py), and response length and
truncation over generated samples are unknown (null) when dynamic sampling is on.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...scoring.result import TRUNCATED
from ..metrics import FIELDS
from ..refill import shortfall_warning
from ..step_prompts import prompt_counts


@dataclass(frozen=True)
class StepLog:
    """One OpenRLHF global step: its scalars (tag without `train/`) and when it was logged (unix seconds)."""

    step: int
    wall_time: float
    scalars: dict[str, float]


def read_tensorboard(tb_dir: Path) -> dict[int, StepLog]:
    """Every numeric train/ scalar under tb_dir (every run folder and event file, read by TensorBoard's
    EventMultiplexer keeping every event); a step logged twice (a job killed after logging it, then redone) keeps
    its latest values."""
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
    from tensorboard.util import tensor_util

    # size 0 keeps every event (the default samples 10,000 scalars per tag); no purge: steps_from_events decides
    keep_all = {ea.SCALARS: 0, ea.TENSORS: 0, ea.HISTOGRAMS: 1, ea.COMPRESSED_HISTOGRAMS: 1, ea.IMAGES: 1, ea.AUDIO: 1}
    runs = EventMultiplexer(size_guidance=keep_all, purge_orphaned_data=False)
    runs.AddRunsFromDirectory(str(tb_dir)).Reload()
    events: list[tuple[float, int, str, float]] = []
    for run, tags in runs.Runs().items():
        for tag in (t for t in tags[ea.SCALARS] if t.startswith("train/")):  # simple_value (torch's SummaryWriter)
            events += [(e.wall_time, e.step, tag[len("train/") :], float(e.value)) for e in runs.Scalars(run, tag)]
        for tag in (t for t in tags[ea.TENSORS] if t.startswith("train/")):  # tf.summary's scalar tensors
            for e in runs.Tensors(run, tag):
                value = tensor_util.make_ndarray(e.tensor_proto)
                if value.size == 1 and value.dtype.kind in "fiu":  # not text (generated_samples)
                    events.append((e.wall_time, e.step, tag[len("train/") :], float(value.item())))
    return steps_from_events(events)


def steps_from_events(events: Iterable[tuple[float, int, str, float]]) -> dict[int, StepLog]:
    """Group (wall_time, step, key, value) events by step; later events win, and a step's time is its latest."""
    scalars: dict[int, dict[str, float]] = {}
    times: dict[int, float] = {}
    for wall_time, step, key, value in sorted(events):
        scalars.setdefault(step, {})[key] = value
        times[step] = max(times.get(step, 0.0), wall_time)
    return {s: StepLog(s, times[s], scalars[s]) for s in sorted(scalars)}


@dataclass(frozen=True)
class RewardCall:
    """One reward_func call as the reward log has it (workflow/scripts/openrlhf_reward.py)."""

    time: float
    rewards: list[float]
    scores: list[float]
    errors: list[str | None]
    ids: list[str | None] | None = None  # each sample's prompt id (None: a log written before ids were logged)


def _read_process_logs(log_dir: Path, since: float, convert: Callable[[dict], Any], what: str) -> list:
    """convert(entry) of every entry logged at or after `since` (unix seconds, the entry's `t`) in log_dir's
    jsonl files, one per process. Files last written before `since` are not opened (each launch's processes write
    new files), so a segment reads its own window. Unreadable lines are counted out loudly (a kill mid-write tears
    one)."""
    out, torn = [], 0
    paths = sorted(Path(log_dir).glob("*.jsonl")) if Path(log_dir).is_dir() else []
    for path in (p for p in paths if p.stat().st_mtime >= since):
        with path.open() as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                    if float(entry["t"]) >= since:
                        out.append(convert(entry))
                except (ValueError, KeyError, TypeError):
                    torn += 1
    if torn:
        print(f"{what} {log_dir}: {torn} torn line(s) ignored")
    return out


def _reward_call(entry: dict) -> RewardCall:
    rewards = list(entry["rewards"])
    return RewardCall(
        float(entry["t"]),
        rewards,
        list(entry["scores"]),
        list(entry.get("errors") or [None] * len(rewards)),
        list(entry["ids"]) if entry.get("ids") is not None else None,
    )


def read_reward_log(log_dir: Path, since: float = 0.0) -> list[RewardCall]:
    """Reward calls made at or after `since` (unix seconds), from all reward processes, in time order."""
    calls = _read_process_logs(log_dir, since, _reward_call, "reward log")
    return sorted(calls, key=lambda c: c.time)


def append_hook_entry(log_dir: str | Path, entry: dict) -> None:
    """One line of the job hook's log of this process (log_dir/<pid>.jsonl), as read_hook_log reads it."""
    path = Path(log_dir) / f"{os.getpid()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(entry) + "\n")


def read_hook_log(log_dir: Path, key: str, since: float = 0.0) -> list[tuple[float, float]]:
    """(unix time, entry[key]) of every entry the job hook logged at or after `since` (append_hook_entry: the
    partition's `seconds`, brorl.training.openrlhf.partition_hook; a rank's `peak_gib`, memory_hook), in time
    order."""
    return sorted(_read_process_logs(log_dir, since, lambda e: (float(e["t"]), float(e[key])), "job hook log"))


def read_hook_entries(log_dir: Path, since: float = 0.0) -> list[dict]:
    """Every whole entry the job hook logged at or after `since`, in time order (e.g. scheduler_hook's limits)."""
    return sorted(_read_process_logs(log_dir, since, dict, "job hook log"), key=lambda entry: float(entry["t"]))


@dataclass(frozen=True)
class Launch:
    """One start of the launcher for a segment: when it began and ended (unix seconds) and how."""

    segment: int
    start: float
    end: float
    status: str  # "stopped" (we ended it after the last step), "exited <rc>", "killed" (end from its logs' mtime)


KV_CACHE = re.compile(r"KV cache size: ([\d,]+) tokens")


# vLLM's periodic engine stats (vllm/v1/metrics/loggers.py LoggingStatLogger.log, every VLLM_LOG_STATS_INTERVAL = 10 s
# while an engine works), as Ray forwards them into the launcher log: "INFO 12-04 17:40:38 [loggers.py:257] Engine
# 000: Avg prompt throughput: ..., Preemptions: 3, GPU KV cache usage: ..."; "Preemptions" appears only when some
# request was preempted in that interval, which the line counts since the previous one (its logger resets).
ENGINE_STATS = re.compile(r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \[loggers\.py:\d+\] Engine \d+: Avg prompt throughput")
PREEMPTIONS = re.compile(r"Preemptions: (\d+)")


def engine_stats(launcher_log: str, launch_start: float) -> list[tuple[float, int]]:
    """(unix seconds, preemptions) of every engine stats line of one launch. vLLM stamps month-day and local time
    without a year: the year is the launch's, the next one where that would put a line before the launch began."""
    year = time.localtime(launch_start).tm_year
    out = []
    for line in launcher_log.splitlines():
        match = ENGINE_STATS.search(line)
        if not match:
            continue
        month, day, hour, minute, second = (int(g) for g in match.groups())
        stamp = time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
        if stamp < launch_start - 86400:  # past new year's eve
            stamp = time.mktime((year + 1, month, day, hour, minute, second, 0, 0, -1))
        preempted = PREEMPTIONS.search(line)
        out.append((stamp, int(preempted[1]) if preempted else 0))
    return out


def kv_cache_tokens(launcher_log: str) -> list[int]:
    """The KV-cache size (tokens) each vLLM engine of a launch reported at start-up ("GPU KV cache size: 1,546,112
    tokens, ..." in the launcher log, which Ray fills with the engines' output); one entry per engine start."""
    return [int(m.replace(",", "")) for m in KV_CACHE.findall(launcher_log)]


# OpenRLHF's training progress bar (rank 0, tqdm, forwarded by Ray into the launcher log): one line when the bar
# starts ("0/8 [00:00<?, ?it/s]"), then per micro-batch its all-reduced status as the postfix ("..., kl=1.62e-5, ...").
# The launch sets TQDM_NCOLS=0 (launch.launch_env): no bar is drawn ("  0% 0/8 [...]"), and the postfix is never cut
# to a terminal width taken from the job's COLUMNS, which cut it before the KL in CI. A drawn bar ("0%|...|") parses
# too.
TRAIN_BAR = re.compile(r"Train epoch \[\d+/\d+\]:\s+\d+%(?:\|[^|]*\|)?\s*(\d+)/\d+ \[([^\]]*)\]")
POSTFIX_KL = re.compile(r"\bkl=([-+0-9.e]+)")


def first_micro_batch_kl(launcher_log: str) -> list[float]:
    """Per training step of a launch, in order, the KL to the reference of its FIRST micro-batch: before the step's
    first optimizer update, so it is the distance between the policy the step starts from and the reference (0 in
    step 1, and right after a reference reset, up to numerical noise). The step's logged `kl` averages every
    micro-batch, updates included, which at small batches varies several-fold from step to step."""
    firsts: list[float] = []
    waiting = False  # a bar started and its first micro-batch is not seen yet
    for bar in TRAIN_BAR.finditer(launcher_log):
        kl = POSTFIX_KL.search(bar[2])
        if kl is None:
            waiting = waiting or bar[1] == "0"  # only a bar's first line (0 done) has no status yet
        elif waiting:
            firsts.append(float(kl[1]))
            waiting = False
    return firsts


def _get(scalars: Mapping[str, float], key: str) -> float | None:
    return scalars.get(key)


def arm_wall_before(launches: list[Launch], launch: Launch) -> float:
    """Training wall time of the arm before `launch` began: every earlier launch counted whole (start-up, steps,
    saves, and the lost work of killed launches: the equal-time comparison is about time spent, not steps kept)."""
    return sum(run.end - run.start for run in launches if run.start < launch.start)


def launch_number(launches: list[Launch], launch: Launch) -> int:
    """1 for the first start of `launch`'s segment, 2 for its first relaunch, ..."""
    return 1 + sum(1 for run in launches if run.segment == launch.segment and run.start < launch.start)


def launch_of(launches: list[Launch], when: float) -> Launch:
    """The launch running at time `when` (the latest one started at or before it)."""
    started = [run for run in launches if run.start <= when]
    if not started:
        raise ValueError(f"no launch started before {when}")
    return max(started, key=lambda run: run.start)


def step_starts(logs: list[StepLog], launches: list[Launch]) -> list[float]:
    """Where each step's interval begins (unix seconds): the previous step's log, or its launch's start if later.
    A step's reward calls, hook entries and engine lines are those after its start, up to its own log's time."""
    starts, previous = [], 0.0
    for log in logs:
        starts.append(max(previous, launch_of(launches, log.wall_time).start))
        previous = log.wall_time
    return starts


def step_prompts_of(
    logs: list[StepLog], launches: list[Launch], reward_calls: list[RewardCall], offset: int
) -> list[tuple[int, list[dict[str, Any]]]]:
    """(continued step, its prompts with samples and correct counts: brorl.training.step_prompts) of every step whose
    reward calls all carry prompt ids; a step with a call logged before ids were (an older reward file) is left out
    and named."""
    out, unlogged = [], []
    for log, start in zip(logs, step_starts(logs, launches)):
        window = [c for c in reward_calls if start < c.time <= log.wall_time]
        if not window or any(c.ids is None for c in window):
            unlogged.append(log.step + offset)
            continue
        ids = [i for c in window for i in c.ids]
        out.append((log.step + offset, prompt_counts(ids, [x for c in window for x in c.scores])))
    if unlogged:
        print(f"reward log: steps {unlogged} have no prompt ids logged: their in-batch probe cannot be drawn")
    return out


@dataclass(frozen=True)
class _SampleCounts:
    """One step's prompts and samples: trained on (after dynamic sampling) and generated."""

    samples: int
    prompts: int
    generated_prompts: int
    generated_samples: int


def _sample_counts(scalars: Mapping[str, float], n: int, dynamic_sampling: bool) -> _SampleCounts:
    """The step's trained and generated prompts and samples (generated from the logged dynamic-sampling pass rate)."""
    samples = int(round(scalars["rollout/num_samples"]))
    prompts = samples // n
    rate = _get(scalars, "dynamic_filtering_pass_rate")
    generated_prompts = int(round(samples * 100.0 / rate)) if dynamic_sampling and rate else prompts
    return _SampleCounts(samples, prompts, generated_prompts, generated_prompts * n)


@dataclass(frozen=True)
class _StepEntries:
    """The entries of each log that fall in one step's interval: reward calls, partition seconds, the ranks' peak GPU
    memory, RMS advantages, vLLM preemptions and dynamic-sampling waves."""

    calls: list[RewardCall]
    partition: list[float]
    peaks: list[float]
    rms: list[float]
    preemptions: list[int]
    refill: list[dict]


@dataclass(frozen=True)
class _RewardStats:
    """One step's reward errors and timeouts, mean reward and score, mean response length and truncated fraction
    (each None where the logs cannot tell)."""

    errors: int | None
    timeouts: int | None
    mean: float | None
    score_mean: float | None
    response_len: float | None
    truncated: float | None


def _reward_stats(
    scalars: Mapping[str, float], calls: list[RewardCall], logged: bool, generated_samples: int, dynamic_sampling: bool
) -> _RewardStats:
    """The step's reward stats over every generated sample: OpenRLHF's, or our reward log's with dynamic sampling."""
    errors = [e for c in calls for e in c.errors]
    reward_errors = reward_timeouts = None
    if logged and len(errors) == generated_samples:  # the log is complete for this step
        reward_errors = sum(e is not None and e != TRUNCATED for e in errors)
        reward_timeouts = sum(bool(e) and e.startswith("timeout") for e in errors)
    reward_mean = score_mean = response_len = truncated = None
    if not dynamic_sampling:  # OpenRLHF's rollout stats are over every generated sample
        reward_mean, score_mean = _get(scalars, "rollout/reward_mean"), _get(scalars, "score")
        response_len, truncated = _get(scalars, "rollout/response_length_mean"), _get(scalars, "rollout/truncated_rate")
    elif reward_errors is not None:
        rewards = [r for c in calls for r in c.rewards]
        scores = [x for c in calls for x in c.scores]
        reward_mean, score_mean = sum(rewards) / len(rewards), sum(scores) / len(scores)
    return _RewardStats(reward_errors, reward_timeouts, reward_mean, score_mean, response_len, truncated)


def _step_record(
    log: StepLog,
    step: int,
    segment: int,
    launch: int,
    wall_s: float,
    previous_wall: float,
    counts: _SampleCounts,
    rewards: _RewardStats,
    entries: _StepEntries,
) -> dict[str, Any]:
    """The metrics.jsonl record of one step, `launch` its launch's number in the segment."""
    s = log.scalars
    gen_s = _get(s, "timing/generation")
    step_s = _get(s, "timing/step_total")
    return {
        "step": step,
        "segment": segment,
        "launch": launch,
        "wall_s": wall_s,
        "step_s": step_s,
        "overhead_s": wall_s - previous_wall - (step_s or 0.0),
        "prompts": counts.prompts,
        "samples": counts.samples,
        "generated_prompts": counts.generated_prompts,
        "generated_samples": counts.generated_samples,
        "dynamic_sampling_pass_rate": counts.samples / counts.generated_samples,
        "reward_mean": rewards.mean,
        "score_mean": rewards.score_mean,
        "reward_errors": rewards.errors,
        "reward_timeouts": rewards.timeouts,
        "kl": _get(s, "kl"),
        "vllm_kl": _get(s, "vllm_kl"),  # OpenRLHF's own mismatch metrics (PolicyLoss, token-weighted per step)
        "is_filter_ratio": _get(s, "is_filter_ratio"),
        "entropy": _get(s, "entropy_loss"),
        "response_len_mean": rewards.response_len,
        "truncated_frac": rewards.truncated,
        # both over the update's samples, whether or not dynamic sampling dropped groups (the smoke verdict's
        # truncation row compares them): vLLM's finish reason, and the reward's stop-token rule
        "trained_truncated_frac": _get(s, "rollout/truncated_rate"),
        "trained_zeroed_frac": _get(s, "truncated_zeroed"),
        "gen_samples_per_s": counts.generated_samples / gen_s if gen_s else None,
        "lr": _get(s, "actor_lr"),
        "adv_rms": entries.rms[-1] if entries.rms else None,
        "grad_norm": _get(s, "actor_grad_norm"),  # OpenRLHF keeps the step's last update's (ppo_actor.py:250)
        "refill": entries.refill[-1]["refill"] if entries.refill else None,
        "waves": entries.refill[-1]["waves"] if entries.refill else None,
        "gen_s": gen_s,
        "reward_s": None,  # rewards are computed inside generation (not timed apart)
        "logprob_s": _get(s, "timing/make_experience"),
        "partition_s": sum(entries.partition) if entries.partition else None,
        "update_s": _get(s, "timing/ppo_train"),
        "reload_s": _get(s, "timing/broadcast"),
        "gpu_mem_peak_gib": max(entries.peaks) if entries.peaks else None,
        "vllm_preemptions": sum(entries.preemptions) if entries.preemptions else None,
    }


def to_records(
    logs: list[StepLog],
    *,
    offset: int,
    segment: int,
    n: int,
    dynamic_sampling: bool,
    wall_s_before: float,
    launches: list[Launch],
    reward_calls: list[RewardCall] | None,
    partition_calls: list[tuple[float, float]] | None = None,
    gpu_memory: list[tuple[float, float]] | None = None,
    engine_lines: list[tuple[float, int]] | None = None,
    advantage_rms: list[tuple[float, float]] | None = None,
    refills: list[dict] | None = None,
) -> list[dict[str, Any]]:
    """metrics.jsonl records for `logs` (consecutive OpenRLHF steps, in order). Continued step = global step +
    offset. wall_s is the arm's wall-clock time when the step was logged: earlier launches whole, plus the time
    since this launch began (so start-ups, saves and relaunches count; `overhead_s` is the part of a step's
    interval outside OpenRLHF's own step timing). Reward calls count into the step whose interval holds them,
    never across a launch start (a killed launch's calls are not the rerun step's); so do partition calls, whose
    seconds sum into `partition_s` (null where none was logged: dynamic batching off, or no job hook), and the
    ranks' peak GPU memory, whose maximum is `gpu_mem_peak_gib` (null without CUDA), the step's RMS advantage
    (advantage_hook; the last in the interval, null where none was logged), and vLLM's engine stats lines
    (engine_stats), whose preemptions sum into `vllm_preemptions` (null where no line fell in the step: an engine
    logs only every 10 s of work), and the step's dynamic-sampling waves (refill_hook; null where none was logged)."""
    records = []
    previous_wall = wall_s_before
    for log, start in zip(logs, step_starts(logs, launches)):
        end = log.wall_time
        counts = _sample_counts(log.scalars, n, dynamic_sampling)
        launch = launch_of(launches, end)
        entries = _StepEntries(
            calls=[c for c in reward_calls or [] if start < c.time <= end],
            partition=[sec for t, sec in partition_calls or [] if start < t <= end],
            peaks=[gib for t, gib in gpu_memory or [] if start < t <= end],
            rms=[value for t, value in advantage_rms or [] if start < t <= end],
            # vLLM stamps whole seconds: a line of the step's last second belongs to it
            preemptions=[n for t, n in engine_lines or [] if start < t <= end + 1],
            refill=[e for e in refills or [] if start < float(e["t"]) <= end],
        )
        if entries.refill and entries.refill[-1].get("short"):
            last = entries.refill[-1]
            print(shortfall_warning(log.step + offset, last["kept"], last["target"], last["short"]))
        logged = reward_calls is not None
        rewards = _reward_stats(log.scalars, entries.calls, logged, counts.generated_samples, dynamic_sampling)
        wall_s = arm_wall_before(launches, launch) + (end - launch.start)
        number = launch_number(launches, launch)
        record = _step_record(log, log.step + offset, segment, number, wall_s, previous_wall, counts, rewards, entries)
        assert set(record) == set(FIELDS), set(record) ^ set(FIELDS)
        previous_wall = wall_s
        records.append(record)
    return records
