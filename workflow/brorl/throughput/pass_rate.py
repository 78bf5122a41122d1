"""What Table 2 reads from an arm's training metrics: the dynamic-sampling pass rate (paper: 41% at N=16, 62% at
N=512) and the generation throughput of the training run itself (paper: 36.5 vs 72.4 samples/s on its 64 GPUs).

The paper's definition: the fraction of generated samples that survive the dynamic-sampling filter (groups whose
N rollouts all score the same are dropped). Per step that is ``samples / generated_samples``; over a run it is
``sum(samples) / sum(generated_samples)`` (a sample-weighted mean, not the mean of the per-step rates).
Metrics schema and reader: brorl.training.metrics (`results/train/{arm}/metrics.jsonl`, one object per step); the
functions here take the records (plain dicts), so they are tested on hand-made metrics.
"""

from __future__ import annotations

import math

from ..training.metrics import MetricsError, pass_rate

REQUIRED_KEYS = ("step", "samples", "generated_samples")
RECORDED_RATE_TOLERANCE = 1e-6  # the file's own dynamic_sampling_pass_rate must agree with samples/generated_samples


def _count(record: dict, key: str, where: str) -> int:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise MetricsError(f"{where}: '{key}' must be a non-negative integer, got {value!r}")
    return int(value)


def _checked(records: list[dict], source: str) -> list[dict]:
    """Per-step (step, samples, generated_samples), validated and sorted by step."""
    rows, seen = [], {}
    for i, rec in enumerate(records):
        where = f"{source} record {i + 1}"
        if not isinstance(rec, dict):
            raise MetricsError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        missing = [k for k in REQUIRED_KEYS if k not in rec]
        if missing:
            raise MetricsError(f"{where}: missing key(s) {', '.join(missing)}")
        step = _count(rec, "step", where)
        where = f"{source} step {step}"
        if step in seen:
            raise MetricsError(f"{where}: step appears twice (records {seen[step]} and {i + 1})")
        seen[step] = i + 1
        samples, generated = _count(rec, "samples", where), _count(rec, "generated_samples", where)
        if generated == 0:
            raise MetricsError(f"{where}: generated_samples is 0 (a step must generate samples)")
        if samples > generated:
            raise MetricsError(f"{where}: samples ({samples}) exceed generated_samples ({generated})")
        recorded = rec.get("dynamic_sampling_pass_rate")
        if recorded is not None and not math.isclose(recorded, samples / generated, abs_tol=RECORDED_RATE_TOLERANCE):
            raise MetricsError(
                f"{where}: dynamic_sampling_pass_rate {recorded} != samples/generated_samples "
                f"{samples}/{generated} = {samples / generated:.6f}"
            )
        rows.append({"step": step, "samples": samples, "generated_samples": generated, "wall_s": rec.get("wall_s")})
    return sorted(rows, key=lambda r: r["step"])


def overall_pass_rate(records: list[dict], source: str = "metrics") -> float | None:
    """sum(samples) / sum(generated_samples) over every step; None when there are no steps."""
    rows = _checked(records, source)
    return pass_rate(rows) if rows else None


def pass_rate_series(records: list[dict], source: str = "metrics") -> list[dict]:
    """Per step, in step order: the step's pass rate and the cumulative one up to and including it."""
    out, kept, generated = [], 0, 0
    for r in _checked(records, source):
        kept += r["samples"]
        generated += r["generated_samples"]
        out.append({**r, "pass_rate": r["samples"] / r["generated_samples"], "cumulative_pass_rate": kept / generated})
    return out


def training_samples_per_s(records: list[dict], source: str = "metrics") -> tuple[float | None, str]:
    """Generation throughput of a training run: sum(generated_samples) / sum(gen_s) over the steps that timed
    their generation (paper Table 2 measured it on the training setup itself), and a note saying over what."""
    timed = [r for r in records if isinstance(r.get("gen_s"), (int, float)) and r["gen_s"] > 0]
    if not timed:
        return None, f"{source}: no step timed its generation (gen_s)"
    samples = sum(_count(r, "generated_samples", f"{source} step {r.get('step')}") for r in timed)
    seconds = sum(float(r["gen_s"]) for r in timed)
    return samples / seconds, f"sum(generated_samples) / sum(gen_s) over {len(timed)} of {len(records)} steps"
