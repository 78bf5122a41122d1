"""A trainer's reward calls: fresh verifier workers per call (score_batch's default) against a kept ScoringPool.

`python -m brorl.ops.speed.scoring_pool --out pool.json` runs `--calls` reward calls of `--samples` math responses each in
a process holding `--ballast-gb` of memory (a trainer with torch and vLLM loaded is that large, and forking copies
its page tables), once with fresh workers and once with one pool, and writes both times and their ratio (one run, the
same process and data).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from brorl.benchmarks.synthetic import sums
from brorl.scoring import ScoringPool
from brorl.training.reward import score_rollouts


def measure(calls: int, samples: int, pool: ScoringPool | None) -> float:
    """Seconds for `calls` reward calls of `samples` sums responses each (a ninth of them right)."""
    items = sums(samples, seed=0, benchmark="sums")
    responses = [f"</think> \\boxed{{{i % 9}}}" for i in range(samples)]
    start = time.perf_counter()
    for _ in range(calls):
        score_rollouts(items, responses, workers=2, pool=pool)
    return time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=16, help="reward calls (the tiny arms' steps)")
    ap.add_argument("--samples", type=int, default=64, help="responses per call (the tiny BroRL arm's step)")
    ap.add_argument("--ballast-gb", type=float, default=1.5, help="resident memory of the calling process (GB)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    ballast = np.ones(int(args.ballast_gb * 2**30 // 8))  # touched: resident, as a trainer's weights are
    fresh = measure(args.calls, args.samples, None)
    with ScoringPool(workers=2) as pool:
        kept = measure(args.calls, args.samples, pool)
    report = {
        "calls": args.calls,
        "samples_per_call": args.samples,
        "ballast_gb": args.ballast_gb,
        "resident_ballast_bytes": int(ballast.nbytes),
        "fresh_workers_s": fresh,
        "kept_pool_s": kept,
        "ratio": fresh / kept,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"{args.calls} calls x {args.samples} samples: fresh workers {fresh:.2f} s, kept pool {kept:.2f} s ({fresh / kept:.1f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
