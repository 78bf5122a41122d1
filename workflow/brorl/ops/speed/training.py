"""Where training time goes, from metrics.jsonl files: steps/s, the share of generation, reward, logprobs, update
and weight reload, and the mean reward at the start and end of each run (`python -m brorl.ops.speed.training --metrics FILE... --out FILE.json`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ...training.metrics import pass_rate, read_metrics

PARTS = ("gen_s", "reward_s", "logprob_s", "update_s", "reload_s")


def summarize_run(records: list[dict]) -> dict:
    """One run's numbers: steps/s over the steps' wall time, seconds and share per part, reward trend."""
    total = sum(r["step_s"] for r in records)
    parts = {p: sum(r[p] or 0.0 for r in records) for p in PARTS}
    parts["other_s"] = total - sum(parts.values())
    rewards = np.array([r["reward_mean"] for r in records], dtype=float)
    steps = np.array([r["step"] for r in records], dtype=float)
    slope = float(np.polyfit(steps, rewards, 1)[0]) if len(records) > 1 else None
    return {
        "steps": len(records),
        "step_seconds": total,
        "steps_per_s": len(records) / total if total else None,
        "seconds": parts,
        "share": {p: v / total for p, v in parts.items()} if total else None,
        "reward_mean_by_step": rewards.tolist(),
        "reward_first": float(rewards[0]),
        "reward_last": float(rewards[-1]),
        "reward_slope_per_step": slope,
        "pass_rate": pass_rate(records),
    }


def run_bench(metrics_paths: list[Path], out: Path) -> dict:
    """Summaries of each run (keyed by the arm folder's name), written to `out` and printed as a table."""
    result = {path.parent.name: summarize_run(read_metrics(path)) for path in metrics_paths}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(
        f"{'arm':<16}{'steps/s':>9}{'gen':>7}{'reward':>8}{'logprob':>9}{'update':>8}{'reload':>8}{'other':>7}"
        f"{'pass rate':>11}   mean reward by step"
    )
    for arm, r in result.items():
        share = r["share"]
        cells = "".join(f"{share[p]:>{w}.0%}" for p, w in zip((*PARTS, "other_s"), (7, 8, 9, 8, 8, 7)))
        rewards = " ".join(f"{x:.3f}" for x in r["reward_mean_by_step"])
        print(f"{arm:<16}{r['steps_per_s']:>9.3f}{cells}{r['pass_rate']:>11.2f}   {rewards}")
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.speed.training", description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", required=True, nargs="+", type=Path, help="metrics.jsonl files, one per run")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    run_bench(args.metrics, args.out)


if __name__ == "__main__":
    main()
