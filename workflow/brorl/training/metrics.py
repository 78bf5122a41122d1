"""Per-step training metrics (`results/train/<arm>/metrics.jsonl`): the schema, a validating reader and a resumable
writer. One JSON object per RL step, identical for the embedded and the cluster engine
(docs/design.md#one-metrics-schema-for-both-engines).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..cli import remake_hint

# 2: overhead_s, reward_errors, reward_timeouts; 3: partition_s, gpu_mem_peak_gib; 4: vllm_kl, is_filter_ratio;
# 5: trained_truncated_frac, trained_zeroed_frac; 6: vllm_preemptions; 7: launch; 8: adv_rms, grad_norm (fields
# added since 6 are read as null from older files); 9: refill, waves
SCHEMA_VERSION = 9
# name -> meaning; every record has every key (null where an engine cannot measure it)
FIELDS: dict[str, str] = {
    "step": "continued RL step (1-based, after the start checkpoint)",
    "segment": "index of the training segment (job) that ran the step",
    "launch": "which start of its segment ran the step (1, then 2 after a relaunch: a retried or requeued job); its first step's overhead_s holds that start-up (null: not tracked, the embedded engine's wall_s holds no start-up)",
    "wall_s": "cumulative training wall-clock seconds at the end of the step, across segments (start-ups, saves and relaunches included)",
    "step_s": "wall-clock seconds of this step",
    "overhead_s": "seconds since the previous step outside step_s: start-up, checkpoint saves, relaunches (null: not measured)",
    "prompts": "prompts in the update, after dynamic sampling",
    "samples": "samples in the update (prompts x N)",
    "generated_prompts": "prompts sampled, including groups dropped by dynamic sampling",
    "generated_samples": "samples generated, including dropped groups",
    "dynamic_sampling_pass_rate": "samples / generated_samples of this step",
    "reward_mean": "mean reward over the generated samples",
    "score_mean": "mean binary score (correct) over the generated samples",
    "reward_errors": "generated samples scored 0 without a judgement (no final answer, bad label, verifier crash or timeout; not those the truncation rule zeroed, which truncated_frac counts)",
    "reward_timeouts": "generated samples whose verifier hit its hard time limit (part of reward_errors)",
    "kl": "mean KL(policy || reference) per token over the update",
    "vllm_kl": "rollout-vs-trainer mismatch: mean over the update's tokens of log pi_rollout - log pi_trainer for the policy that generated them, as OpenRLHF's PolicyLoss computes it (null without importance-sampling correction)",
    "is_filter_ratio": "share of the update's tokens whose importance weight pi_trainer / pi_rollout the correction clamped or masked (outside its threshold; null without the correction)",
    "entropy": "mean per-token entropy of the policy over the update",
    "response_len_mean": "mean response length of the generated samples (tokens)",
    "truncated_frac": "fraction of generated samples that hit the response budget",
    "trained_truncated_frac": "fraction of the update's samples vLLM stopped at the response budget (finish reason length; OpenRLHF's rollout/truncated_rate; null on the embedded engine)",
    "trained_zeroed_frac": "fraction of the update's samples the reward's truncation rule scored 0 (no stop token at the end; OpenRLHF's train/truncated_zeroed, a sample-weighted mean over the update; null on the embedded engine, whose rule reads the finish reason itself)",
    "gen_samples_per_s": "generated samples per second of generation time",
    "lr": "learning rate of the step",
    "adv_rms": "token-weighted root mean square of the update's advantages (every response token carries its sample's advantage): with lr, the step size an estimator gives (docs/stages.md#algorithm-generality)",
    "grad_norm": "gradient norm before clipping of the step's last optimizer update (OpenRLHF logs only that one; null where not logged)",
    "refill": "how dynamic sampling replaced dropped prompts this step: rounds or serial (training.dynamic_sampling.refill; null with dynamic sampling off, or not recorded)",
    "waves": "the step's generation waves in order, each {prompts: dispatched, kept: groups dynamic sampling kept, s: seconds from the previous wave's last group to this wave's last (the first: from the dispatch), generation and scoring}; kept groups beyond the step's prompts are not trained (null: not recorded)",
    "gen_s": "seconds generating rollouts",
    "reward_s": "seconds scoring rollouts",
    "logprob_s": "seconds computing old/reference log-probabilities (cluster: OpenRLHF's make_experience, partition_s included)",
    "partition_s": "seconds splitting the step's samples into token-balanced micro-batches (cluster with dynamic batching; null otherwise)",
    "update_s": "seconds in forward/backward/optimizer",
    "reload_s": "seconds loading the new weights into the inference engine",
    "gpu_mem_peak_gib": "peak GPU memory torch allocated in a training rank during the step's update, max over ranks (GiB; null without CUDA)",
    "vllm_preemptions": "requests vLLM's rollout engines preempted during the step (KV cache full), summed over their periodic stats lines (null where no line fell in the step, or on the embedded engine)",
}


class MetricsError(ValueError):
    """A metrics file that does not follow the schema (names file and line)."""


def validate_record(record: Mapping[str, Any], where: str) -> None:
    """Raise MetricsError unless `record` has exactly the schema's keys and a positive integer step."""
    missing = [k for k in FIELDS if k not in record]
    unknown = [k for k in record if k not in FIELDS]
    if missing or unknown:
        raise MetricsError(f"{where}: missing keys {missing}, unknown keys {unknown}")
    if not isinstance(record["step"], int) or record["step"] < 1:
        raise MetricsError(f"{where}: step must be a positive integer, got {record['step']!r}")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All records of a metrics file in step order; each step exactly once (else MetricsError)."""
    path = Path(path)
    records = []
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                raise MetricsError(f"{path}:{number}: blank line{remake_hint(path)}")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise MetricsError(f"{path}:{number}: not JSON ({error}){remake_hint(path)}") from None
            # schema 6 had none of them, 7 no adv_rms, grad_norm, 8 no refill, waves
            for added in ("launch", "adv_rms", "grad_norm", "refill", "waves"):
                record.setdefault(added, None)
            validate_record(record, f"{path}:{number}")
            records.append(record)
    steps = [r["step"] for r in records]
    if steps != sorted(set(steps)):
        raise MetricsError(f"{path}: steps must increase strictly, got {steps}")
    return records


def _clean(value: Any) -> Any:
    """JSON cannot hold NaN/inf: store them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _line(record: Mapping[str, Any], where: str) -> str:
    """One validated record as a JSON line, keys in schema order."""
    validate_record(record, where)
    return json.dumps({k: _clean(record[k]) for k in FIELDS}) + "\n"


def write_metrics(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace `path` atomically with `records` (used to drop steps past a restored state on resume)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as handle:
        for record in records:
            handle.write(_line(record, str(path)))
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


def truncate_after(path: str | Path, step: int) -> list[dict[str, Any]]:
    """Keep only records with step <= `step` (a resumed run restarts after its last saved state); returns them."""
    path = Path(path)
    if not path.exists():
        return []
    kept = [r for r in read_metrics(path) if r["step"] <= step]
    write_metrics(path, kept)
    return kept


def append_metrics(path: str | Path, record: Mapping[str, Any]) -> None:
    """Append one step's record (validated, flushed to disk so a killed job loses at most the current step)."""
    line = _line(record, str(path))
    with Path(path).open("a") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def pass_rate(records: Iterable[Mapping[str, Any]]) -> float:
    """Overall dynamic-sampling pass rate: surviving samples / generated samples over all steps."""
    records = list(records)
    generated = sum(r["generated_samples"] for r in records)
    if generated == 0:
        raise MetricsError("no generated samples: the pass rate is undefined")
    return sum(r["samples"] for r in records) / generated
