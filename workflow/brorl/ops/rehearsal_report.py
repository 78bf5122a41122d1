"""What a run of the cluster engine cost and did, read from its own files (`python -m brorl.ops.rehearsal_report --out-dir results/train/<arm>`):
per launch its start-up and how it ended, per step its timings, KL and reward, the reference of each segment, and
the disk one saved step takes. Used for the CPU rehearsal (`make rehearsal`) and works for a paper-scale arm.

  results/train/<arm>/segment<s>.json   launches (start, end, status), the OpenRLHF command, checkpoint repair
  results/train/<arm>/metrics.jsonl     (or run/metrics.jsonl while training) one record per step
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..training.openrlhf.command import flag_value
from ..training.openrlhf.logs import Launch, arm_wall_before
from ..training.run_folder import atomic_json


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def launch_startups(launches: list[Launch], records: list[dict]) -> list[float | None]:
    """Seconds from each launch's start to the start of its first logged step (None: it logged none). A record's
    wall_s is the arm's time at the step's log event, so its time into its launch is wall_s - the arm's time before
    the launch; minus the step's own duration, what is left is start-up (Ray, vLLM, DeepSpeed init, resume)."""
    startups = []
    for launch in launches:
        before = arm_wall_before(launches, launch)
        inside = [r for r in records if before < r["wall_s"] <= before + (launch.end - launch.start) + 1e-6]
        first = min(inside, key=lambda r: r["wall_s"], default=None)
        startups.append(None if first is None else first["wall_s"] - before - (first["step_s"] or 0.0))
    return startups


def arm_report(out_dir: Path) -> dict[str, Any]:
    """The report of results/train/<arm>: launches, steps, segments and checkpoint sizes."""
    out_dir = Path(out_dir)
    manifests = sorted(out_dir.glob("segment*.json"), key=lambda p: int(p.stem[len("segment") :]))
    segments = [json.loads(p.read_text()) for p in manifests]
    metrics = out_dir / "metrics.jsonl"
    metrics = metrics if metrics.is_file() else out_dir / "run" / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    launches = [Launch(**run) for s in segments for run in s.get("launches", [])]
    startups = launch_startups(launches, records)
    steps = [r["step"] for r in records]
    step_s = sum(r["step_s"] or 0.0 for r in records)
    ckpt = out_dir / "run" / "openrlhf" / "ckpt0" / "_actor"
    tags = sorted(ckpt.glob("global_step*")) if ckpt.is_dir() else []
    exports = sorted((out_dir / "run" / "exports").glob("step*"))
    return {
        "arm": out_dir.name,
        "steps": steps,
        "wall_s": records[-1]["wall_s"] if records else None,
        "step_s_total": step_s,
        "steps_per_s": len(steps) / step_s if step_s else None,
        "steps_per_wall_s": len(steps) / records[-1]["wall_s"] if records else None,
        "launches": [
            {"segment": run.segment, "status": run.status, "duration_s": run.end - run.start, "startup_s": s}
            for run, s in zip(launches, startups)
        ],
        "segments": [
            {
                "index": s["segment"]["index"],
                "steps": [r["step"] for r in s["steps"]],
                "reference": flag_value(s.get("openrlhf_command", []), "actor.model_name_or_path"),
                "checkpoint_repair": s.get("checkpoint_repair"),
            }
            for s in segments
        ],
        "per_step": [
            {
                k: r[k]
                for k in (
                    "step",
                    "segment",
                    "step_s",
                    "overhead_s",
                    "kl",
                    "reward_mean",
                    "dynamic_sampling_pass_rate",
                    "reward_errors",
                    "refill",
                    "waves",
                )
            }
            for r in records
        ],
        "full_state_bytes_per_step": folder_bytes(tags[-1]) if tags else None,
        "hf_export_bytes_per_step": folder_bytes(exports[-1]) if exports else None,
    }


def _waves(record: dict[str, Any]) -> str:
    """'3 (4, 3, 2 prompts; rounds)': the step's waves and the prompts each dispatched."""
    waves = record.get("waves")
    if not waves:
        return "not recorded"
    return f"{len(waves)} ({', '.join(str(w['prompts']) for w in waves)} prompts; {record.get('refill')})"


def print_report(report: dict[str, Any]) -> None:
    """The report as a person reads it."""
    print(
        f"arm {report['arm']}: steps {report['steps']}, wall {report['wall_s']:.0f} s "
        f"({report['step_s_total']:.0f} s inside OpenRLHF's steps: {report['steps_per_s']:.3f} steps/s; "
        f"{report['steps_per_wall_s']:.4f} steps/s of wall time)"
    )
    for run in report["launches"]:
        startup = "no step" if run["startup_s"] is None else f"start-up {run['startup_s']:.0f} s"
        print(f"  launch of segment {run['segment']}: {run['status']}, {run['duration_s']:.0f} s, {startup}")
    for s in report["segments"]:
        repair = s["checkpoint_repair"] or {}
        print(
            f"  segment {s['index']}: steps {s['steps']}, reference {s['reference']}, "
            f"resumed from global step {repair.get('resume_step')}, removed {repair.get('removed') or 'nothing'}"
        )
    for r in report["per_step"]:
        print(
            f"  step {r['step']} (segment {r['segment']}): {r['step_s']:.1f} s + {r['overhead_s'] or 0:.1f} s "
            f"overhead, kl {r['kl']:.2e}, reward {r['reward_mean']}, kept {r['dynamic_sampling_pass_rate']:.2f}, "
            f"verifier errors {r['reward_errors']}, waves {_waves(r)}"
        )
    mib = 1024 * 1024
    print(
        f"  one saved step: full state {(report['full_state_bytes_per_step'] or 0) / mib:.1f} MiB, "
        f"HF export {(report['hf_export_bytes_per_step'] or 0) / mib:.1f} MiB"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.rehearsal_report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", required=True, type=Path, help="results/train/<arm>")
    parser.add_argument("--json", default=None, type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    report = arm_report(args.out_dir)
    print_report(report)
    if args.json:
        atomic_json(args.json, report)


if __name__ == "__main__":
    main()
