"""Benchmark of the trainer's micro-batch partition (`make bench-partition`): OpenRLHF 0.11.2's Karmarkar-Karp and
first-fit count against brorl.training.openrlhf.partition, on one step's sample lengths at OpenRLHF's own micro-batch
count (first fit at max_tokens_per_gpu, rounded down to a multiple of the ranks, as `split_rollout_samples` does).

Karmarkar-Karp is measured at the sizes that fit this machine, its cost fitted as a x samples x micro-batches (time
and peak memory), and extrapolated to the target size (labelled "extrapolated"); the replacement is measured at the
target size itself. Each Karmarkar-Karp run is a forked child, so its peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import random
import resource
import time
from pathlib import Path
from typing import Any

from ...training.openrlhf.partition import balance, balanced_partitions, first_fit_count


def step_lengths(samples: int, low: int, high: int, seed: int) -> list[int]:
    """Prompt + response tokens of one step's samples, uniform in [low, high] (the bench's stated assumption)."""
    rng = random.Random(seed)
    return [rng.randint(low, high) for _ in range(samples)]


def micro_batches(lengths: list[int], max_tokens: int, ranks: int) -> int:
    """OpenRLHF's micro-batch count: first fit, rounded down to a multiple of the ranks, at least one per rank."""
    return max(first_fit_count(lengths, max_tokens) // ranks * ranks, ranks)


def fit_through_origin(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of y = a x."""
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


def _karmarkar_karp_child(lengths: list[int], k: int, out) -> None:
    from openrlhf.utils.seqlen_balancing import get_seqlen_balanced_partitions

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    groups = get_seqlen_balanced_partitions(lengths, k, False)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    out.send({"seconds": seconds, "peak_mib": peak_kib / 1024, **balance(lengths, groups)})


def karmarkar_karp(lengths: list[int], k: int) -> dict[str, Any]:
    """OpenRLHF's partition in a forked child: time, added peak memory, balance."""
    receive, send = mp.get_context("fork").Pipe(duplex=False)
    child = mp.get_context("fork").Process(target=_karmarkar_karp_child, args=(lengths, k, send))
    child.start()
    result = receive.recv()
    child.join()
    return result


def timed(call) -> tuple[Any, float]:
    start = time.perf_counter()
    value = call()
    return value, time.perf_counter() - start


def run(sizes: list[int], target: int, ranks: int, max_tokens: int, low: int, high: int, seed: int) -> dict[str, Any]:
    """Every measurement and the fitted extrapolation, as one JSON-able report."""
    from openrlhf.utils.seqlen_balancing import get_minimum_num_micro_batch_size

    rows = []
    for n in sizes:
        lengths = step_lengths(n, low, high, seed)
        k = micro_batches(lengths, max_tokens, ranks)
        print(f"  {n:>6} samples, {k} micro-batches: Karmarkar-Karp ...", flush=True)
        kk = karmarkar_karp(lengths, k)
        groups, lpt_s = timed(lambda: balanced_partitions(lengths, k))  # noqa: B023 (called at once)
        ours_count, ours_count_s = timed(lambda: first_fit_count(lengths, max_tokens))  # noqa: B023
        theirs_count, theirs_count_s = timed(lambda: get_minimum_num_micro_batch_size(lengths, max_tokens, 1, 1))  # noqa: B023
        assert ours_count == theirs_count, (ours_count, theirs_count)
        rows.append(
            {
                "samples": n,
                "micro_batches": k,
                "n_times_k": n * k,
                "karmarkar_karp": kk,
                "lpt": {"seconds": lpt_s, **balance(lengths, groups)},
                "speedup": kk["seconds"] / lpt_s,
                "first_fit_openrlhf_s": theirs_count_s,
                "first_fit_ours_s": ours_count_s,
            }
        )
        print(f"         {kk['seconds']:.1f} s, +{kk['peak_mib']:.0f} MiB; lpt {lpt_s:.3f} s", flush=True)
    xs = [float(r["n_times_k"]) for r in rows]
    s_per = fit_through_origin(xs, [r["karmarkar_karp"]["seconds"] for r in rows])
    mib_per = fit_through_origin(xs, [r["karmarkar_karp"]["peak_mib"] for r in rows])

    lengths = step_lengths(target, low, high, seed)
    k = micro_batches(lengths, max_tokens, ranks)
    print(f"  {target:>6} samples, {k} micro-batches: the replacement, and OpenRLHF's first fit ...", flush=True)
    groups, lpt_s = timed(lambda: balanced_partitions(lengths, k))
    ours_count, ours_count_s = timed(lambda: first_fit_count(lengths, max_tokens))
    theirs_count, theirs_count_s = timed(lambda: get_minimum_num_micro_batch_size(lengths, max_tokens, 1, 1))
    assert ours_count == theirs_count, (ours_count, theirs_count)
    return {
        "assumptions": {
            "lengths": f"prompt + response tokens uniform in [{low}, {high}] (seed {seed})",
            "max_tokens_per_gpu": max_tokens,
            "ranks": ranks,
            "micro_batches": "first fit at max_tokens_per_gpu, rounded down to a multiple of the ranks (OpenRLHF)",
        },
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
        "measured": rows,
        "karmarkar_karp_model": {"seconds_per_n_k": s_per, "mib_per_n_k": mib_per},
        "target": {
            "samples": target,
            "micro_batches": k,
            "karmarkar_karp_extrapolated": {"seconds": s_per * target * k, "peak_mib": mib_per * target * k},
            "lpt_measured": {"seconds": lpt_s, **balance(lengths, groups)},
            "first_fit_openrlhf_measured_s": theirs_count_s,
            "first_fit_ours_measured_s": ours_count_s,
        },
    }


def summary(report: dict[str, Any]) -> str:
    """The report as a table a person reads."""
    lines = [
        "samples  micro-batches  Karmarkar-Karp s  peak MiB  max/mean    lpt s  max/mean  speed-up",
    ]
    for r in report["measured"]:
        kk, lpt = r["karmarkar_karp"], r["lpt"]
        lines.append(
            f"{r['samples']:>7}  {r['micro_batches']:>13}  {kk['seconds']:>16.1f}  {kk['peak_mib']:>8.0f}  "
            f"{kk['max_over_mean']:>8.4f}  {lpt['seconds']:>7.3f}  {lpt['max_over_mean']:>8.4f}  {r['speedup']:>7.0f}x"
        )
    t = report["target"]
    kk, lpt = t["karmarkar_karp_extrapolated"], t["lpt_measured"]
    lines.append(
        f"{t['samples']:>7}  {t['micro_batches']:>13}  {kk['seconds']:>16.0f}  {kk['peak_mib']:>8.0f}  "
        f"{'':>8}  {lpt['seconds']:>7.3f}  {lpt['max_over_mean']:>8.4f}  (Karmarkar-Karp extrapolated)"
    )
    lines.append(
        f"first fit at {t['samples']} samples: OpenRLHF {t['first_fit_openrlhf_measured_s']:.2f} s, "
        f"ours {t['first_fit_ours_measured_s']:.3f} s (same count)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384], help="Karmarkar-Karp sizes")
    parser.add_argument("--target", type=int, default=65536, help="samples per step to extrapolate to (BroRL)")
    parser.add_argument("--ranks", type=int, default=64, help="actor ranks (paper: 8 nodes x 8 GPUs)")
    parser.add_argument("--max-tokens", type=int, default=32768, help="max_tokens_per_gpu")
    parser.add_argument("--min-len", type=int, default=1200)
    parser.add_argument("--max-len", type=int, default=17400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="JSON report")
    args = parser.parse_args(argv)
    report = run(args.sizes, args.target, args.ranks, args.max_tokens, args.min_len, args.max_len, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(summary(report))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
