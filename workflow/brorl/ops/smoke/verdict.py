"""The smoke run's verdict: for each path the paper's run depends on, whether the smoke run exercised it and how it
went, from the facts the run left on disk (collected by `python -m brorl.ops.smoke`). Pure: no I/O.

Three kinds of rows:
  * GPU paths (sleep mode, weight sync, packing, partition, FusedAdam, ZeRO-2 bf16): pass when every training
    segment of every arm completed on GPUs with the path's flags in OpenRLHF's command; on the CPU rehearsal they
    are "not run (CPU substitution)", never a pass;
  * the drills and the reference reset, which run the same on both devices (the kill, the rerun's resume);
  * the evaluation at the full response budget and the throughput layouts.
A row that fails names what to do next: the preflight check that isolates the path, and the logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

PASS, FAIL, NOT_REACHED = "pass", "fail", "not reached"
CPU_SUBSTITUTION = "not run (CPU substitution)"
NOT_CONFIGURED = "not run (off in this config)"
FULL_BUDGET = 32768  # the paper's evaluation budget (response tokens)
TRUNCATION_TOLERANCE = 1e-6  # both fractions are means over the same samples: only float32 rounding may differ
PEAK_CEILING_GIB = 74.0  # per rank: below an H100's 80 GB (74.5 GiB), leaving room for allocator fragmentation


@dataclass(frozen=True)
class GpuPath:
    """One GPU-only path of the training job: the flags that turn it on and the preflight check that isolates it."""

    name: str
    flags: tuple[str, ...]  # every one must be in the OpenRLHF command (an empty tuple: always on, e.g. FusedAdam)
    absent: tuple[str, ...]  # none of these may be (e.g. the CPU's gloo weight sync)
    preflight: str  # python -m brorl.ops.preflight's check of the same path in isolation


GPU_PATHS = (
    GpuPath(
        "vLLM sleep mode between generation and training",
        ("--vllm.enable_sleep", "--ds.enable_sleep"),
        (),
        "vLLM engine with sleep mode",
    ),
    GpuPath(
        "weight sync to vLLM by CUDA IPC / NCCL",
        ("--train.colocate_all",),
        ("--vllm.sync_backend",),
        "CUDA-IPC weight sync",  # the path colocated engines take (ipc_probe), not NCCL
    ),
    GpuPath(
        "packed micro-batches (flash-attention varlen)",
        ("--ds.packing_samples",),
        ("--ds.attn_implementation",),
        "flash-attn varlen kernel",
    ),
    GpuPath("dynamic batching and the step's partition", ("--train.dynamic_batch_enable",), (), "partition limits"),
    GpuPath("DeepSpeed FusedAdam (CUDA op)", (), (), "DeepSpeed FusedAdam"),
    GpuPath("ZeRO-2 in bf16", ("--ds.zero_stage", "--ds.param_dtype"), (), "GPUs seen by torch"),
)


MEMORY_ROW = "peak GPU memory per rank"  # + " below <ceiling> GiB"
SCHEDULER_ROW = "vLLM scheduler limits of the rollout engines"
TRUNCATION_ROW = "truncation rule = vLLM's length stops (every step)"
REFILL_ROW = "dynamic sampling refilled in waves (every step)"
KILL_IN_STEP_ROW, KILL_IN_SAVE_ROW = "kill inside a step, resumed", "kill inside a save, resumed"  # + " (arm, step k)"
TIME_LIMIT_ROW = "stop before the time limit, resumed"  # + " (arm, step k)"
NO_SLURM = "not run (no Slurm job)"  # a time_limit_in_step drill outside Slurm: no time limit to bring near
RESET_ROW = "reference reset"  # + " (arm)"
EVALUATION_ROW = "evaluation at the full response budget"
THROUGHPUT_ROW = "throughput layouts"
# every row a verdict can hold, by the start of its name (docs/gpu-assumptions.md names the upstream behaviour each
# one observes; tests/test_gpu_assumptions.py holds the page to this list)
ROW_NAMES = (
    *(path.name for path in GPU_PATHS),
    MEMORY_ROW,
    SCHEDULER_ROW,
    TRUNCATION_ROW,
    REFILL_ROW,
    KILL_IN_STEP_ROW,
    KILL_IN_SAVE_ROW,
    TIME_LIMIT_ROW,
    RESET_ROW,
    EVALUATION_ROW,
    THROUGHPUT_ROW,
)


@dataclass(frozen=True)
class Row:
    path: str
    status: str
    seconds: float | None  # the path's own time where measured (median over steps), else None
    peak_gib: list[float] | None  # the GPU memory each training rank's device had in use at most, else None
    detail: str
    fix: str


def _median(values: Sequence[float]) -> float | None:
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def missing_evidence(path: str, arms: Sequence[Mapping[str, Any]]) -> str | None:
    """What a completed run lacks to show that `path` ran (None: shown). A row passes only on what the run recorded:
    the weight sync by the job hook's count of syncs in every segment, the partition by its time at every step."""
    segments = [s for arm in arms for s in arm.get("segments", [])]
    records = [r for arm in arms for r in arm["records"]]
    if path.startswith("weight sync"):
        unsynced = sum(1 for s in segments if not s.get("weight_syncs"))
        if unsynced or not segments:
            return f"no weight sync recorded in {unsynced} of {len(segments)} segment(s) (weight_syncs)"
    if path.startswith("dynamic batching"):
        steps = [r.get("step") for r in records if r.get("partition_s") is None]
        if steps or not records:
            return f"no partition time (partition_s) recorded at step(s) {steps[:5]} of {len(records)}"
    return None


def memory_row(arms: Sequence[Mapping[str, Any]], device: str, ceiling_gib: float) -> Row:
    """The most memory in use on each training rank's GPU over the run (every process on it: the trainer, the
    reference model, the colocated vLLM engine, CUDA contexts; memory_hook's device_gib) against a ceiling below
    the GPU's memory; the trainer's own peak allocation (peak_gib) beside it."""
    name = f"{MEMORY_ROW} below {ceiling_gib:g} GiB"
    if device == "cpu":
        return Row(name, CPU_SUBSTITUTION, None, None, "no GPU memory on the CPU rehearsal", "")
    used = [p for arm in arms for p in arm.get("device_gib") or []]
    trainer = [p for arm in arms for p in arm.get("peak_gib") or []]
    if not used:
        return Row(
            name,
            FAIL,
            None,
            None,
            "no rank recorded its device's memory (gpu_memory logs)",
            "see the memory hook's logs",
        )
    top = max(used)
    ok = top <= ceiling_gib
    fix = "" if ok else "lower training.cluster.max_tokens_per_gpu or vLLM's gpu_memory_utilization (docs/design.md)"
    own = f"; the trainer's own peak allocation {max(trainer):.1f} GiB" if trainer else ""
    detail = f"highest {top:.1f} GiB in use on the GPU over {len(used)} rank(s){own}"
    return Row(name, PASS if ok else FAIL, None, used, detail, fix)


def scheduler_row(arms: Sequence[Mapping[str, Any]], expected: Mapping[str, int] | None) -> Row:
    """The vLLM scheduler limits every rollout engine reported (segment<s>.json vllm_scheduler) against the config."""
    name = SCHEDULER_ROW
    if not expected:
        return Row(name, NOT_CONFIGURED, None, None, "no vllm_scheduler given to the verdict", "")
    reported = [e for arm in arms for s in arm.get("segments", []) for e in s.get("vllm_scheduler") or []]
    wrong = [e for e in reported if dict(e) != dict(expected)]
    if not reported or wrong:
        detail = f"{len(reported)} engine report(s); differing: {wrong[:2]}" if reported else "no engine reported"
        return Row(name, FAIL, None, None, f"{detail}; expected {dict(expected)}", "see the scheduler hook's logs")
    return Row(name, PASS, None, None, f"{len(reported)} engine start(s) at {dict(expected)}", "")


def truncation_row(arms: Sequence[Mapping[str, Any]], rule: str) -> Row:
    """The reward's truncation rule against vLLM at every step: the share of the update's samples the rule scored 0
    (no stop token at the end) equals the share vLLM stopped at the budget (finish reason length), both over the
    same trained samples. Observed on both devices: the CPU rehearsal runs the same reward, OpenRLHF and vLLM."""
    name = TRUNCATION_ROW
    if rule != "zero":
        return Row(name, NOT_CONFIGURED, None, None, f"training.reward.truncated is {rule!r}", "")
    records = [(arm["name"], r) for arm in arms for r in arm["records"]]
    unseen = [
        f"{arm} {r['step']}" for arm, r in records if None in (r["trained_zeroed_frac"], r["trained_truncated_frac"])
    ]
    if not records or unseen:
        detail = f"not recorded at step(s) {unseen[:5]}" if records else "no training step recorded"
        return Row(name, FAIL, None, None, detail, "see metrics.jsonl (trained_zeroed_frac, trained_truncated_frac)")
    apart = [
        f"{arm} {r['step']}: zeroed {r['trained_zeroed_frac']:.6f}, length stops {r['trained_truncated_frac']:.6f}"
        for arm, r in records
        if abs(r["trained_zeroed_frac"] - r["trained_truncated_frac"]) > TRUNCATION_TOLERANCE
    ]
    if apart:
        fix = "a stop token the reward does not strip (segment<s>.json reward_text), or a template that hides EOS"
        return Row(name, FAIL, None, None, "; ".join(apart[:3]), fix)
    top = max(r["trained_truncated_frac"] for _, r in records)
    return Row(
        name, PASS, None, None, f"{len(records)} step(s) agree within {TRUNCATION_TOLERANCE:g}; up to {top:.3f} cut", ""
    )


def refill_row(arms: Sequence[Mapping[str, Any]], dynamic_sampling: Mapping[str, Any]) -> Row:
    """The refill hook ran at every step (brorl.training.openrlhf.refill_hook): each record holds its waves in the
    configured mode, and in rounds mode a refill wave sent its replacements together (more than one prompt). Observed
    on both devices: the CPU rehearsal runs OpenRLHF's trainer with the same hook."""
    name, mode = REFILL_ROW, dynamic_sampling["refill"]
    if not dynamic_sampling["enabled"]:
        return Row(name, NOT_CONFIGURED, None, None, "training.dynamic_sampling.enabled is false", "")
    records = [(arm["name"], r) for arm in arms for r in arm["records"]]
    unseen = [f"{arm} {r['step']}" for arm, r in records if not r.get("waves") or r.get("refill") != mode]
    if not records or unseen:
        detail = f"no {mode} waves recorded at step(s) {unseen[:5]}" if records else "no training step recorded"
        fix = "the job hook did not install the refill: see the launcher log ('dynamic sampling refills')"
        return Row(name, FAIL, None, None, detail, fix)
    refills = [w["prompts"] for _, r in records for w in r["waves"][1:]]
    detail = f"{len(records)} step(s), {len(refills)} refill wave(s), up to {max(refills, default=0)} prompts at once"
    if not refills:
        return Row(name, NOT_REACHED, None, None, detail + ": no step needed a refill", "")
    if mode == "rounds" and max(refills) < 2:
        return Row(name, FAIL, None, None, detail + ": every refill sent one prompt", "see metrics.jsonl (waves)")
    return Row(name, PASS, None, None, detail, "")


def gpu_rows(
    arms: Sequence[Mapping[str, Any]],
    device: str,
    logs: str,
    scheduler: Mapping[str, int] | None = None,
    ceiling_gib: float = PEAK_CEILING_GIB,
) -> list[Row]:
    """Rows of GPU_PATHS, then the peak memory and the scheduler limits. Each arm: {"name", "complete": bool,
    "commands": [argv per segment run], "records": [metrics.jsonl records], "segments": [segment json], "peak_gib":
    [the trainer's peak allocation per rank], "device_gib": [the GPU's memory in use at most, per rank]}."""
    rows = []
    complete = bool(arms) and all(arm["complete"] for arm in arms)
    records = [r for arm in arms for r in arm["records"]]
    peaks = [p for arm in arms for p in arm.get("device_gib") or []] or None  # the table's memory column
    for path in GPU_PATHS:
        seconds = None
        if path.name.startswith("vLLM sleep"):
            seconds = _median([r.get("gen_s") for r in records])
        elif path.name.startswith("dynamic batching"):
            seconds = max((r["partition_s"] for r in records if r.get("partition_s") is not None), default=None)
        if device == "cpu":
            rows.append(Row(path.name, CPU_SUBSTITUTION, None, None, "the CPU rehearsal replaces this path", ""))
            continue
        missing = [
            f"{arm['name']}: {flag} {'missing' if flag in path.flags else 'present'}"
            for arm in arms
            for argv in arm["commands"]
            for flag in (*path.flags, *path.absent)
            if (flag in argv) != (flag in path.flags)
        ]
        if missing:
            detail = "the command differs from the paper's: " + "; ".join(sorted(set(missing)))
            rows.append(Row(path.name, FAIL, seconds, peaks, detail, "use the preset's training.cluster settings"))
        elif complete and (lacking := missing_evidence(path.name, arms)):
            fix = f"run `python -m brorl.ops.preflight` on a GPU node (check '{path.preflight}'); logs: {logs}"
            rows.append(Row(path.name, FAIL, seconds, peaks, f"trained, but {lacking}", fix))
        elif complete:
            rows.append(Row(path.name, PASS, seconds, peaks, "every segment of every arm trained with it", ""))
        else:
            fix = f"run `python -m brorl.ops.preflight` on a GPU node (check '{path.preflight}'); logs: {logs}"
            rows.append(Row(path.name, NOT_REACHED, seconds, peaks, "training did not complete", fix))
    return [*rows, memory_row(arms, device, ceiling_gib), scheduler_row(arms, scheduler)]


def drill_rows(arms: Sequence[Mapping[str, Any]], drills: Mapping[str, Any], logs: str) -> list[Row]:
    """The kills and the reference reset. Each arm adds {"segments": [segment json], "kl": {step: kl}}."""
    rows = []
    for kind, what in (("kill_in_step", KILL_IN_STEP_ROW), ("kill_in_save", KILL_IN_SAVE_ROW)):
        step = drills.get(kind)
        if step is None:
            rows.append(Row(what, NOT_CONFIGURED, None, None, f"training.cluster.drills.{kind} is null", ""))
            continue
        for arm in arms:
            fired = [d for s in arm["segments"] for d in s.get("drills", []) if d["kind"] == kind]
            name = f"{what} ({arm['name']}, step {step})"
            if not fired:
                rows.append(Row(name, NOT_REACHED, None, None, "the drill did not fire", f"logs: {logs}"))
                continue
            segment = next(s for s in arm["segments"] if s.get("drills") and fired[0] in s["drills"])
            statuses = [launch["status"] for launch in segment["launches"]]
            resumed = statuses[:1] == ["killed"] and statuses[-1] == "stopped"
            seconds = segment["launches"][1]["start"] - fired[0]["fired_at"] if resumed and len(statuses) > 1 else None
            detail = f"launches {statuses}; at the kill: {fired[0]['observed']}"
            if kind == "kill_in_save":
                removed = segment.get("checkpoint_repair", {}).get("removed", [])
                resumed = resumed and any(p.endswith(f"global_step{fired[0]['global_step']}") for p in removed)
                detail += f"; the rerun removed {removed}"
            rows.append(Row(name, PASS if resumed else FAIL, seconds, None, detail, "" if resumed else f"logs: {logs}"))
    rows += time_limit_rows(arms, drills.get("time_limit_in_step"), logs)
    for arm in arms:
        resets = [s for s in arm["segments"] if s.get("layout", {}).get("reference_step") is not None]
        if len(arm["segments"]) < 2:
            continue
        name = f"{RESET_ROW} ({arm['name']})"
        if not resets:
            rows.append(Row(name, FAIL, None, None, "no segment trained against an exported step", ""))
            continue
        first = resets[0]["layout"]["reference_step"] + 1
        rows.append(reset_row(name, first, arm["segments"].index(resets[0]), arm.get("first_kl", {}), arm["kl"]))
    return rows


def time_limit_rows(arms: Sequence[Mapping[str, Any]], step: int | None, logs: str) -> list[Row]:
    """The time-limit drill passes when its job stopped after the trainer saved the drill's step for the stop
    request (the segment's `stops`) and a later launch of the segment finished it; `seconds`: from the lowered
    limit to that save."""
    if step is None:
        return [
            Row(TIME_LIMIT_ROW, NOT_CONFIGURED, None, None, "training.cluster.drills.time_limit_in_step is null", "")
        ]
    rows = []
    for arm in arms:
        name = f"{TIME_LIMIT_ROW} ({arm['name']}, step {step})"
        fired = [d for s in arm["segments"] for d in s.get("drills", []) if d["kind"] == "time_limit_in_step"]
        if not fired:
            rows.append(Row(name, NOT_REACHED, None, None, "the drill did not fire", f"logs: {logs}"))
            continue
        drill = fired[0]
        if drill["observed"].get("time_limit") is None:
            rows.append(Row(name, NO_SLURM, None, None, drill["observed"].get("why", ""), ""))
            continue
        segment = next(s for s in arm["segments"] if drill in s.get("drills", []))
        statuses = [launch["status"] for launch in segment["launches"]]
        saves = [e for e in segment.get("stops", []) if e["global_step"] == drill["global_step"]]
        passed = bool(saves) and statuses[:1] == ["stop request"] and statuses[-1] == "stopped"
        seconds = saves[0]["t"] - drill["fired_at"] if saves else None
        detail = (
            f"launches {statuses}; limit lowered to {drill['observed']['time_limit']} min (scontrol exit "
            f"{drill['observed'].get('scontrol')}); saved for the stop: "
            f"{[(e['global_step'], 'forced' if e['forced'] else 'regular') for e in segment.get('stops', [])]}"
        )
        rows.append(Row(name, PASS if passed else FAIL, seconds, None, detail, "" if passed else f"logs: {logs}"))
    return rows


def reset_row(
    name: str, first: int, segment: int, first_kl: Mapping[int, list[list[float]]], kl: Mapping[int, float]
) -> Row:
    """The reset passes when the first step after it starts AT its reference: the KL of that step's first
    micro-batch (before any update; brorl.training.openrlhf.logs.first_micro_batch_kl) is at most a tenth of the
    farthest the policy had moved from its reference before the reset, or at the floor of step 1 (policy = start
    model = reference: numerical noise only). The steps' mean KL is shown, never judged: it averages the updates
    too, and at small batches varies several-fold from step to step."""
    after = (first_kl.get(segment) or [[]])[0][:1]
    before = [k for launch in first_kl.get(segment - 1, []) for k in launch]
    floor = next((launch[0] for launch in first_kl.get(0, []) if launch), None)
    detail = (
        f"reference = step {first - 1}; first micro-batch KL: step {first} {after[0] if after else None}, "
        f"before the reset up to {max(before, default=None)}, step 1 {floor}; step mean KL {first - 1}: "
        f"{kl.get(first - 1)}, {first}: {kl.get(first)}"
    )
    if not after or not before:
        fix = "no training progress in the launch logs (OpenRLHF's Train epoch bar)"
    elif max(before) <= (floor or 0.0):
        fix = "the policy had not moved from its reference before the reset"
    elif after[0] > max(max(before) / 10, floor or 0.0):
        fix = "the first step after the reset did not start at its reference"
    else:
        fix = ""
    return Row(name, FAIL if fix else PASS, None, None, detail, fix)


def evaluation_rows(max_tokens: int, expected: Sequence[str], found: Sequence[str], device: str) -> list[Row]:
    """The evaluation of the final checkpoints: `expected` summary files, `found` the ones that exist."""
    if not expected:
        return [Row(EVALUATION_ROW, NOT_CONFIGURED, None, None, "the config evaluates no final checkpoint", "")]
    missing = sorted(set(expected) - set(found))
    if device == "cpu" and max_tokens < FULL_BUDGET:
        status = CPU_SUBSTITUTION if not missing else NOT_REACHED
        detail = f"{len(found)}/{len(expected)} summaries at {max_tokens} tokens (a tiny model's budget)"
    else:
        status = PASS if not missing and max_tokens >= FULL_BUDGET else (FAIL if not missing else NOT_REACHED)
        detail = f"{len(found)}/{len(expected)} summaries at {max_tokens} response tokens"
    fix = f"missing: {missing[:4]}" if missing else ("" if status != FAIL else f"evaluation.max_tokens < {FULL_BUDGET}")
    return [Row(EVALUATION_ROW, status, None, None, detail, fix)]


def throughput_rows(enabled: bool, layouts: Sequence[str], found: Sequence[str]) -> list[Row]:
    if not enabled:
        return [Row(THROUGHPUT_ROW, NOT_CONFIGURED, None, None, "throughput.enabled is false", "")]
    missing = sorted(set(layouts) - set(found))
    status = PASS if not missing else NOT_REACHED
    return [Row(THROUGHPUT_ROW, status, None, None, f"{len(found)}/{len(layouts)} layouts measured", "")]


def verdict(rows: Sequence[Row], device: str) -> dict[str, Any]:
    """The verdict file's content: passed = no row failed or was not reached (CPU substitutions do not fail it)."""
    bad = [r.path for r in rows if r.status in (FAIL, NOT_REACHED)]
    return {"schema": 1, "device": device, "passed": not bad, "failed": bad, "rows": [asdict(r) for r in rows]}


def table(rows: Sequence[Row]) -> str:
    """The printed table: path, result, time, peak GPU memory per rank, what to fix."""

    def gib(peaks: list[float] | None) -> str:
        return "-" if not peaks else f"{max(peaks):.1f} max of {len(peaks)} ranks"

    lines = ["| path | result | time (s) | peak GPU memory (GiB) | detail / fix |", "|---|---|---|---|---|"]
    for r in rows:
        seconds = "-" if r.seconds is None else f"{r.seconds:.1f}"
        note = r.detail + (f"; fix: {r.fix}" if r.fix else "")
        lines.append(f"| {r.path} | {r.status} | {seconds} | {gib(r.peak_gib)} | {note} |")
    return "\n".join(lines)
