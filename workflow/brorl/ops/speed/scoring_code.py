"""Throughput of the code scorer: programs scored per second on one core, sequentially.

`python -m brorl.ops.speed.scoring_code --out bench.json` scores a trivial correct stdin/stdout program (a + b, three
tests) `--n` times in a row, repeated `--repeats` times, with the sandbox's best isolation (bubblewrap) and again
with rlimits only (BRORL_SANDBOX=rlimits), and writes the median and spread (min, max) of programs/s for each.
Target: >= 15 programs/s per core with isolation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from brorl.scoring.code import score_code
from brorl.scoring.sandbox import isolation_mode

TARGET = 15.0
ITEM = {"tests": {"inputs": ["1 2\n", "3 4\n", "10 -3\n"], "outputs": ["3\n", "7\n", "7\n"]}}
RESPONSE = "</think>\n```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def _rate(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        s = score_code(ITEM, RESPONSE)
        if not s.correct:
            raise RuntimeError(f"benchmark program did not score 1: {s}")
    return n / (time.perf_counter() - start)


def measure(mode: str | None, n: int, repeats: int) -> dict:
    old = os.environ.get("BRORL_SANDBOX")
    if mode is None:
        os.environ.pop("BRORL_SANDBOX", None)
    else:
        os.environ["BRORL_SANDBOX"] = mode
    try:
        isolation = isolation_mode()
        _rate(2)  # warm-up
        rates = [_rate(n) for _ in range(repeats)]
    finally:
        if old is None:
            os.environ.pop("BRORL_SANDBOX", None)
        else:
            os.environ["BRORL_SANDBOX"] = old
    return {
        "isolation": isolation,
        "programs_per_s": rates,
        "median": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=50, help="programs per repeat")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core: children inherit the affinity
    report = {
        "program": "a + b on stdin/stdout, 3 tests, binary reward",
        "n_per_repeat": args.n,
        "repeats": args.repeats,
        "cores": 1,
        "target_programs_per_s": TARGET,
        "isolated": measure(None, args.n, args.repeats),
        "rlimits_only": measure("rlimits", args.n, args.repeats),
    }
    report["meets_target"] = report["isolated"]["median"] >= TARGET
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("isolated", "rlimits_only", "meets_target")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
