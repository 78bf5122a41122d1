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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .metrics import FIELDS


@dataclass(frozen=True)
class StepLog:
    """One OpenRLHF global step: its scalars (tag without `train/`) and when it was logged (unix seconds)."""

    step: int
    wall_time: float
    scalars: dict[str, float]


def read_tensorboard(tb_dir: Path) -> dict[int, StepLog]:
    """Every train/ scalar under tb_dir (all runs and event files); a step logged twice (a job killed after
    logging it, then redone) keeps its latest values."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    events: list[tuple[float, int, str, float]] = []
    for path in sorted(Path(tb_dir).rglob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if not value.tag.startswith("train/"):
                    continue
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    number = value.simple_value
                elif kind == "tensor" and value.tensor.float_val:
                    number = value.tensor.float_val[0]
                elif kind == "tensor" and value.tensor.double_val:
                    number = value.tensor.double_val[0]
                else:
                    continue  # text (generated_samples)
                events.append((event.wall_time, event.step, value.tag[len("train/"):], float(number)))
    return steps_from_events(events)


def steps_from_events(events: Iterable[tuple[float, int, str, float]]) -> dict[int, StepLog]:
    """Group (wall_time, step, key, value) events by step; later events win, and a step's time is its latest."""
    scalars: dict[int, dict[str, float]] = {}
    times: dict[int, float] = {}
    for wall_time, step, key, value in sorted(events):
        scalars.setdefault(step, {})[key] = value
        times[step] = max(times.get(step, 0.0), wall_time)
    return {s: StepLog(s, times[s], scalars[s]) for s in sorted(scalars)}


def read_reward_log(log_dir: Path) -> list[tuple[float, list[float], list[float]]]:
    """(time, rewards, scores) of every reward call, from all reward processes; unreadable lines are counted out
    loudly (a process killed mid-write leaves one torn line)."""
    calls, torn = [], 0
    for path in sorted(Path(log_dir).glob("*.jsonl")) if Path(log_dir).is_dir() else []:
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
                calls.append((float(entry["t"]), list(entry["rewards"]), list(entry["scores"])))
            except (ValueError, KeyError, TypeError):
                torn += 1
    if torn:
        print(f"reward log {log_dir}: {torn} torn line(s) ignored")
    return sorted(calls)


def _get(scalars: Mapping[str, float], key: str) -> float | None:
    return scalars.get(key)


def to_records(logs: list[StepLog], *, offset: int, segment: int, n: int, dynamic_sampling: bool,
               wall_s_before: float, launches: list[float],
               reward_calls: list[tuple[float, list[float], list[float]]] | None) -> list[dict[str, Any]]:  # fmt: skip
    """metrics.jsonl records for `logs` (consecutive OpenRLHF steps, in order). Continued step = global step +
    offset; wall_s continues from wall_s_before. `launches`: start times of the jobs (reward calls of a job killed
    mid-step are not counted into the rerun's step)."""
    records = []
    wall_s = wall_s_before
    previous_time = 0.0
    for log in logs:
        s = log.scalars
        samples = int(round(s["rollout/num_samples"]))
        prompts = samples // n
        rate = _get(s, "dynamic_filtering_pass_rate")
        generated_prompts = int(round(samples * 100.0 / rate)) if dynamic_sampling and rate else prompts
        generated_samples = generated_prompts * n
        reward_mean = score_mean = response_len = truncated = None
        if not dynamic_sampling:  # OpenRLHF's rollout stats are over every generated sample
            reward_mean, score_mean = _get(s, "rollout/reward_mean"), _get(s, "score")
            response_len, truncated = _get(s, "rollout/response_length_mean"), _get(s, "rollout/truncated_rate")
        elif reward_calls is not None:
            start = max([previous_time, *(t for t in launches if t <= log.wall_time)])
            window = [c for c in reward_calls if start < c[0] <= log.wall_time]
            rewards = [r for c in window for r in c[1]]
            scores = [x for c in window for x in c[2]]
            if len(rewards) == generated_samples:  # the log is complete for this step: trust it
                reward_mean, score_mean = sum(rewards) / len(rewards), sum(scores) / len(scores)
        previous_time = log.wall_time
        gen_s = _get(s, "timing/generation")
        step_s = _get(s, "timing/step_total")
        wall_s += step_s or 0.0
        record = {
            "step": log.step + offset, "segment": segment, "wall_s": wall_s, "step_s": step_s,
            "prompts": prompts, "samples": samples, "generated_prompts": generated_prompts,
            "generated_samples": generated_samples, "dynamic_sampling_pass_rate": samples / generated_samples,
            "reward_mean": reward_mean, "score_mean": score_mean, "kl": _get(s, "kl"),
            "entropy": _get(s, "entropy_loss"), "response_len_mean": response_len, "truncated_frac": truncated,
            "gen_samples_per_s": generated_samples / gen_s if gen_s else None, "lr": _get(s, "actor_lr"),
            "gen_s": gen_s, "reward_s": None,  # rewards are computed inside generation (not timed apart)
            "logprob_s": _get(s, "timing/make_experience"), "update_s": _get(s, "timing/ppo_train"),
            "reload_s": _get(s, "timing/broadcast"),
        }  # fmt: skip
        assert set(record) == set(FIELDS), set(record) ^ set(FIELDS)
        records.append(record)
    return records
