"""Speed benchmark of the simulation stage: the paper sweep with this engine vs the straightforward implementation.

Both sweeps run the same (N, seed) jobs in the same number of worker processes, one torch/BLAS thread each, the
same allocator setting, after a warm-up in every worker (imports and torch.optim's lazy set-up are not timed). Reports
wall time of each
sweep, their ratio, CPU seconds per run, the peak resident memory of the workers, and how far the final Q_pos of
the two implementations lie apart (they use different random streams, so they agree statistically, not bitwise).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

from ...simulation.spec import SimulationSpec


def _job(kind: str, spec: SimulationSpec) -> dict:
    """One run in a worker: returns timings, final metrics and the worker's peak memory."""
    import torch
    from threadpoolctl import threadpool_limits

    from ...simulation.engine import simulate
    from ...simulation.memory import keep_freed_memory
    from ...simulation.reference import simulate_reference

    keep_freed_memory()  # for both implementations alike
    torch.set_num_threads(1)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with threadpool_limits(limits=1):
        df = simulate(spec) if kind == "fast" else simulate_reference(spec)
    last = df.iloc[-1]
    return {
        "kind": kind,
        "n": spec.n,
        "seed": spec.seed,
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "q_pos": float(last.q_pos),
        "pct_improved": float(last.pct_improved),
        "worst_drop": float(last.worst_drop),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _sweep(kind: str, specs: list[SimulationSpec], workers: int) -> tuple[float, list[dict]]:
    """Time one sweep in a fresh pool (warmed up first); returns (wall seconds, per-run results)."""
    warm = replace(specs[0], vocab=64, correct=8, n=4, steps=3)
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        list(pool.map(_job, [kind] * workers, [warm] * workers))
        # Longest runs first so that the two workers finish together.
        order = sorted(specs, key=lambda s: -s.n)
        t0 = time.perf_counter()
        results = list(pool.map(_job, [kind] * len(order), order))
        wall = time.perf_counter() - t0
    return wall, results


def run_benchmark(a: argparse.Namespace, make_spec: Callable[[argparse.Namespace, int, int], SimulationSpec]) -> dict:
    """Run both sweeps, print a summary, write the JSON report to ``a.out``."""
    specs = [make_spec(a, n, seed) for n in a.n_values for seed in a.seeds]
    print(f"benchmark: {len(specs)} runs (N in {a.n_values}, seeds {a.seeds}, {a.steps} steps), {a.workers} workers")
    fast_wall, fast = _sweep("fast", specs, a.workers)
    print(f"  this engine:      {fast_wall:7.1f} s wall")
    ref_wall, ref = _sweep("reference", specs, a.workers)
    print(f"  straightforward:  {ref_wall:7.1f} s wall (autograd + torch.multinomial + torch.optim)")
    ref_by_key = {(r["n"], r["seed"]): r for r in ref}
    agreement = {
        str(n): max(abs(r["q_pos"] - ref_by_key[(r["n"], r["seed"])]["q_pos"]) for r in fast if r["n"] == n)
        for n in a.n_values
    }
    report = {
        "runs": len(specs),
        "n_values": a.n_values,
        "seeds": a.seeds,
        "steps": a.steps,
        "workers": a.workers,
        "fast_wall_s": fast_wall,
        "reference_wall_s": ref_wall,
        "speedup": ref_wall / fast_wall,
        "fast_cpu_s_total": sum(r["cpu_s"] for r in fast),
        "reference_cpu_s_total": sum(r["cpu_s"] for r in ref),
        "fast_peak_rss_mib": max(r["peak_rss_mib"] for r in fast),
        "reference_peak_rss_mib": max(r["peak_rss_mib"] for r in ref),
        "max_abs_final_q_pos_difference_by_n": agreement,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "per_run": fast + ref,
    }
    print(
        f"  speed-up {report['speedup']:.1f}x; CPU {report['fast_cpu_s_total']:.1f} s vs "
        f"{report['reference_cpu_s_total']:.1f} s; peak memory per worker {report['fast_peak_rss_mib']:.0f} MiB "
        f"(straightforward {report['reference_peak_rss_mib']:.0f} MiB)"
    )
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"  report -> {out}")
    return report


def main(argv: list[str] | None = None) -> None:
    from ...simulation.cli import add_optimizer_args, add_problem_args, spec_from_args

    parser = argparse.ArgumentParser(
        prog="python -m brorl.ops.speed.simulation",
        description="time the paper sweep: this engine vs autograd + multinomial + torch AdamW",
    )
    add_problem_args(parser)
    add_optimizer_args(parser)
    parser.add_argument("--n-values", type=int, nargs="+", default=[4, 8, 16, 512, 51200])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", required=True)
    run_benchmark(parser.parse_args(argv), spec_from_args)


if __name__ == "__main__":
    main()
