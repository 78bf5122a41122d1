"""python -m brorl.ops.smoke [--configfile PRESET ...] [--results results] [--out results/smoke]: the verdict of a
smoke run (or of the CPU rehearsal) from what it left in results/, written to <out>/verdict.json and verdict.md
and printed. Works on a failed run too: what did not happen is "not reached", with where to look. A run whose
training never launched (a dry run, a stop at the pin gate) gets no verdict: "not started: <why>". Exit 1 unless
it passed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from brorl.config import load_yaml_config
from brorl.ops.smoke.verdict import (
    PEAK_CEILING_GIB,
    drill_rows,
    evaluation_rows,
    gpu_rows,
    refill_row,
    table,
    throughput_rows,
    truncation_row,
    verdict,
)
from brorl.training.openrlhf.logs import first_micro_batch_kl
from brorl.training.recipe import enabled_arms, find_arm

ROOT = Path(__file__).resolve().parents[4]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def collect_arm(results: Path, name: str) -> dict[str, Any]:
    """What one arm's training left: its segment manifests, metrics, launch commands and per-rank peak memory."""
    out = results / "train" / name
    segments = [json.loads(p.read_text()) for p in sorted(out.glob("segment*.json"))]
    records = _jsonl(out / "metrics.jsonl") or _jsonl(out / "run" / "metrics.jsonl")
    memory = out / "run" / "openrlhf" / "gpu_memory"
    per_rank = [_jsonl(p) for p in sorted(memory.glob("*.jsonl"))]  # one file per training rank
    peaks = [max(e["peak_gib"] for e in entries) for entries in per_rank if entries]
    # the device's memory in use, every process on the rank's GPU (memory_hook); absent from older hook logs
    readings = [[e["device_gib"] for e in entries if "device_gib" in e] for entries in per_rank]
    device = [max(gibs) for gibs in readings if gibs]
    first_kl: dict[int, list[list[float]]] = {}  # segment -> per launch, the first micro-batch KL of each step
    for launch in sorted((out / "run" / "openrlhf" / "logs").glob("segment*-*"), key=_launch_order):
        log = launch / "launcher.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        first_kl.setdefault(_launch_order(launch)[0], []).append(first_micro_batch_kl(text))
    return {
        "name": name,
        "complete": (out / "train.json").is_file(),
        "segments": segments,
        "commands": [s["openrlhf_command"] for s in segments],
        "records": records,
        "kl": {r["step"]: r["kl"] for r in records if r.get("kl") is not None},
        "peak_gib": peaks or None,
        "device_gib": device or None,
        "first_kl": first_kl,
    }


def _launch_order(folder: Path) -> tuple[int, int]:
    """(segment, launch) of a launch's log folder, e.g. segment001-2 -> (1, 2)."""
    segment, launch = folder.name.removeprefix("segment").split("-", 1)
    return int(segment), int(launch)


def not_started(config: dict[str, Any], results: Path) -> str:
    """Why the run's training never started ("" once any arm launched OpenRLHF or finished a segment)."""
    arms = enabled_arms(config)
    for name in arms:
        out = results / "train" / name
        if (out / "run" / "openrlhf" / "launches.json").is_file() or any(out.glob("segment*.json")):
            return ""
    return f"no training job of {', '.join(arms) or 'any arm'} launched under {results / 'train'}"


def build(config: dict[str, Any], results: Path, ceiling_gib: float = PEAK_CEILING_GIB) -> tuple[list, dict[str, Any]]:
    cluster = config["training"]["cluster"]
    names = enabled_arms(config)
    arms = [collect_arm(results, name) for name in names]
    logs = str(results / "logs" / "train_ppo")
    final = config["evaluation"]["steps"]["include_final"]  # off: nothing of the run is evaluated (one-step 16K)
    expected = [
        f"eval/{name}/step{find_arm(config, name)['continued_steps']}/{bench}.summary.json"
        for name in names
        for bench in (config["evaluation"]["benchmarks"] if final else [])
    ]
    found = [e for e in expected if (results / e).is_file()]
    throughput = config["throughput"]
    layouts = [
        f"throughput/p{lay['prompts']}_n{lay['n']}_pc{'on' if pc else 'off'}.json"
        for lay in throughput["layouts"]
        for pc in throughput["prefix_caching"]
    ]
    measured = [f for f in layouts if (results / f).is_file()]
    rows = [
        *gpu_rows(arms, cluster["device"], logs, config["vllm_scheduler"], ceiling_gib),
        truncation_row(arms, config["training"]["reward"]["truncated"]),
        refill_row(arms, config["training"]["dynamic_sampling"]),
        *drill_rows(arms, cluster["drills"], logs),
        *evaluation_rows(config["evaluation"]["max_tokens"], expected, found, cluster["device"]),
        *throughput_rows(throughput["enabled"], layouts, measured),
    ]
    return rows, verdict(rows, cluster["device"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", type=Path, default=[], help="presets merged over config.yaml")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--out", type=Path, default=None, help="default: <results>/smoke")
    parser.add_argument(
        "--peak-ceiling-gib", type=float, default=PEAK_CEILING_GIB, help="highest peak GPU memory a rank may reach"
    )
    a = parser.parse_args(argv)
    config = load_yaml_config(ROOT / "config.yaml", *a.configfile)  # validated, defaults filled
    why = not_started(config, a.results)
    if why:  # a dry run, or a run stopped before its first job (the pin gate): nothing to judge, no verdict written
        print(f"not started: {why}; no verdict written")
        return 1
    rows, result = build(config, a.results, a.peak_ceiling_gib)
    out = a.out or a.results / "smoke"
    out.mkdir(parents=True, exist_ok=True)
    (out / "verdict.json").write_text(json.dumps(result, indent=2) + "\n")
    text = table(rows)
    (out / "verdict.md").write_text(
        f"# Smoke verdict ({result['device']}): {'passed' if result['passed'] else 'FAILED'}\n\n{text}\n"
    )
    print(text)
    print(f"\n{'passed' if result['passed'] else 'FAILED: ' + ', '.join(result['failed'])} ({out / 'verdict.json'})")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
