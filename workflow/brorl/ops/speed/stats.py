"""Time the significance analysis at the paper's size: ``python -m brorl.ops.speed.stats --out FILE.json``.

Data: ~12,200 problem instances, our estimate of the paper's evaluation (it says only ">10,000"): 1,590 math in 6
benchmarks, 1,024 code in 4, 9,600 Reasoning Gym as ProRL's 96 tasks of 100 items, x 16 samples x 10 checkpoints x 2
arms = ~3.9 million scored samples, synthetic, with a
known small effect: each instance has a latent pass rate (Beta, mostly near 0 or 1 as in real evaluations), the
treatment arm adds ``--effect`` to it (clipped to [0, 1]; the exact true delta after clipping is reported), math and
code samples are Bernoulli and Reasoning Gym samples continuous (Beta with that mean).

Timed (the "analysis"): per-instance means from the sample-level table (one pass over all arms and checkpoints),
then for every checkpoint pair (baseline vs treatment at the same checkpoint) the pooled, per-family and
per-benchmark paired one-tailed tests with Holm, and a 10,000-resample bootstrap CI of the pooled delta.
Reported: wall seconds per stage and in all, and the peak RSS of the process (resource.getrusage; includes the
data generation). Target: <= 30 s and <= 2 GiB on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from brorl.stats.units import compare_arms, instance_means

MATH = {"aime24": 30, "aime25": 30, "amc": 83, "math500": 500, "minerva": 272, "olympiadbench": 675}  # 1,590
CODE = {"apps": 256, "codecontests": 256, "codeforces": 256, "taco": 256}  # 1,024 (split assumed)
RG = {f"rg_{i:02d}": 100 for i in range(96)}  # 9,600


def benchmarks(scale: float = 1.0) -> list[tuple[str, str, int]]:
    """(benchmark, family, instances) at ``scale`` of the paper's counts (each benchmark keeps >= 2)."""
    out = []
    for family, table in (("math", MATH), ("code", CODE), ("reasoning_gym", RG)):
        out += [(name, family, max(2, round(n * scale))) for name, n in table.items()]
    return out


def generate(
    *, seed: int = 0, samples: int = 16, checkpoints: int = 10, effect: float = 0.0033, scale: float = 1.0
) -> tuple[pd.DataFrame, np.ndarray]:
    """The sample-level table (arm, checkpoint, benchmark, family, id, sample_idx, score) and the true pooled delta
    per checkpoint (checkpoints,). Arm 0 is the baseline, arm 1 the treatment."""
    rng = np.random.default_rng(seed)
    table = benchmarks(scale)
    names = [b for b, _, _ in table]
    fams = np.array([f for _, f, _ in table])
    counts = np.array([n for _, _, n in table])
    n_inst = int(counts.sum())
    bench = np.repeat(np.arange(len(table)), counts)
    ids = np.concatenate([np.arange(n) for n in counts])
    is_rg = fams[bench] == "reasoning_gym"

    base = rng.beta(0.35, 0.35, size=n_inst)  # latent pass rate per instance, mostly near 0 or 1
    drift = np.linspace(0.0, 0.02, checkpoints)  # both arms improve with training
    # p[arm, checkpoint, instance]
    p = np.empty((2, checkpoints, n_inst))
    p[0] = np.clip(base[None, :] + drift[:, None], 0.0, 1.0)
    p[1] = np.clip(base[None, :] + drift[:, None] + effect, 0.0, 1.0)
    true_delta = (p[1] - p[0]).mean(axis=1)

    shape = (2, checkpoints, n_inst, samples)
    pp = np.broadcast_to(p[..., None], shape)
    u = rng.random(shape, dtype=np.float32)
    score = (u < pp).astype(np.float32)
    rg = np.broadcast_to(is_rg[None, None, :, None], shape)
    conc = 4.0
    prg = np.clip(pp[rg], 1e-3, 1 - 1e-3)
    score[rg] = rng.beta(prg * conc, (1 - prg) * conc).astype(np.float32)
    del u, pp, prg

    total = score.size
    arm = np.repeat(np.arange(2, dtype=np.int8), total // 2)
    ckpt = np.tile(np.repeat(np.arange(checkpoints, dtype=np.int8), n_inst * samples), 2)
    inst = np.tile(np.repeat(np.arange(n_inst, dtype=np.int32), samples), 2 * checkpoints)
    frame = pd.DataFrame(
        {
            "arm": arm,
            "checkpoint": ckpt,
            "benchmark": pd.Categorical.from_codes(bench[inst].astype(np.int16), categories=names),
            "family": pd.Categorical.from_codes(
                pd.factorize(fams, sort=True)[0][bench[inst]], categories=sorted(set(fams))
            ),
            "id": ids[inst].astype(np.int32),
            "sample_idx": np.tile(np.arange(samples, dtype=np.int8), total // samples),
            "score": score.reshape(-1),
        }
    )
    return frame, true_delta


def analyse(frame: pd.DataFrame, *, seed: int, resamples: int, samples: int) -> dict:
    """The timed analysis: instance means, then per checkpoint the arm comparison with a bootstrap CI."""
    t0 = time.perf_counter()
    units = instance_means(frame, keys=("arm", "checkpoint", "benchmark", "id"), expected_samples=samples)
    t1 = time.perf_counter()
    rngs = np.random.default_rng(seed).spawn(int(units["checkpoint"].nunique()))
    results = []
    for rng, (ckpt, group) in zip(rngs, units.groupby("checkpoint", sort=True)):
        base = group[group["arm"] == 0].drop(columns=["arm", "checkpoint"])
        treat = group[group["arm"] == 1].drop(columns=["arm", "checkpoint"])
        rows = compare_arms(base, treat, rng=rng, resamples=resamples)
        results.append({"checkpoint": int(ckpt), "rows": rows})
    t2 = time.perf_counter()
    return {"units": units, "results": results, "seconds_instance_means": t1 - t0, "seconds_tests": t2 - t1}


def _parser() -> argparse.ArgumentParser:
    """The command line of `python -m brorl.ops.speed.stats`."""
    ap = argparse.ArgumentParser(prog="python -m brorl.ops.speed.stats", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="JSON report")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checkpoints", type=int, default=10)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--effect", type=float, default=0.0033, help="added to every treatment instance's pass rate")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the paper's instance counts (tests)")
    ap.add_argument("--max-seconds", type=float, default=30.0)
    ap.add_argument("--max-mib", type=float, default=2048.0)
    return ap


def _checkpoint_record(res: dict, truth: float) -> dict:
    """One checkpoint's line of the report: the pooled test against the true delta, benchmark rejections, families."""
    pooled = res["rows"][0]
    bench_rows = [r for r in res["rows"] if r["level"] == "benchmark"]
    return {
        "checkpoint": res["checkpoint"],
        "true_delta": float(truth),
        "delta": pooled["delta"],
        "t": pooled["t"],
        "p": pooled["p"],
        "sd_diff": pooled["sd_diff"],
        "ci": [pooled["ci_low"], pooled["ci_high"]],
        "ci_covers_truth": bool(pooled["ci_low"] <= truth <= pooled["ci_high"]),
        "benchmarks_reject_raw": sum(r["reject"] for r in bench_rows),
        "benchmarks_reject_holm": sum(r["reject_holm"] for r in bench_rows),
        "families": {
            r["group"]: {"delta": r["delta"], "p": r["p"], "p_holm": r["p_holm"]}
            for r in res["rows"]
            if r["level"] == "family"
        },
    }


def _report(
    args: argparse.Namespace, frame: pd.DataFrame, out: dict, true_delta: np.ndarray, generate_s: float, peak_mib: float
) -> dict:
    """The JSON report: sizes, seconds per stage, peak RSS against the targets, the machine, each checkpoint's test."""
    wall = out["seconds_instance_means"] + out["seconds_tests"]
    per_ckpt = [_checkpoint_record(res, truth) for res, truth in zip(out["results"], true_delta)]
    return {
        "sizes": {
            "instances": int(out["units"].shape[0] // (2 * args.checkpoints)),
            "samples_per_instance": args.samples,
            "checkpoints": args.checkpoints,
            "arms": 2,
            "scored_samples": int(frame.shape[0]),
            "benchmarks": len(benchmarks(args.scale)),
            "bootstrap_resamples": args.resamples,
        },
        "seconds": {
            "generate_untimed": generate_s,
            "instance_means": out["seconds_instance_means"],
            "tests_and_bootstrap": out["seconds_tests"],
            "analysis_wall": wall,
        },
        "peak_rss_mib": peak_mib,
        "targets": {"max_seconds": args.max_seconds, "max_mib": args.max_mib},
        "within_targets": bool(wall <= args.max_seconds and peak_mib <= args.max_mib),
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "platform": platform.platform(),
        },
        "effect": args.effect,
        "per_checkpoint": per_ckpt,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    g0 = time.perf_counter()
    frame, true_delta = generate(
        seed=args.seed, samples=args.samples, checkpoints=args.checkpoints, effect=args.effect, scale=args.scale
    )
    g1 = time.perf_counter()
    out = analyse(frame, seed=args.seed + 1, resamples=args.resamples, samples=args.samples)
    wall = out["seconds_instance_means"] + out["seconds_tests"]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB

    report = _report(args, frame, out, true_delta, g1 - g0, peak_mib)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"analysis {wall:.2f} s (instance means {out['seconds_instance_means']:.2f} s, tests + bootstrap "
        f"{out['seconds_tests']:.2f} s), peak RSS {peak_mib:.0f} MiB, {frame.shape[0]:,} samples; "
        f"{'within' if report['within_targets'] else 'OUTSIDE'} targets -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
