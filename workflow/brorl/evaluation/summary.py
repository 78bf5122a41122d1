"""Summaries of one (arm, step, benchmark) and the table over all of them (the paper's Appendix D protocol).

pass@1 = mean score over a problem's samples, then mean over problems (continuous Reasoning Gym scores count as
their value); pass@k for k in {1, 2, 4, 8, 16} (k <= n) by the unbiased estimator (brorl.evaluation.passk).
Family averages are unweighted means over the benchmarks present: Math over its benchmarks, Code over its four,
Reasoning Gym over its categories (ProRL's "Avg" columns).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from ..provenance import sha256_file
from .passk import DEFAULT_KS, ks_for, pass_at_k_from_scores
from .score import SAMPLE_COLUMNS, SCORE_COLUMNS, EvaluationError, check_coverage

FAMILY_LABELS = {"math": "Math", "code": "Code", "reasoning_gym": "Reasoning Gym"}
FAMILY_ORDER = tuple(FAMILY_LABELS)


def error_reason(error: str) -> str:
    """The reason of a scorer error without its details: "crash: ValueError: ..." -> "crash"."""
    return error.split(":", 1)[0].strip() or error


def summarize(
    items: list[dict],
    samples: pd.DataFrame,
    scores: pd.DataFrame,
    ks=DEFAULT_KS,
    n: int | None = None,
    where: str = "scores",
) -> dict:
    """The protocol's numbers for one benchmark from its samples and scores (both covering every item x sample)."""
    samples, n = check_coverage(items, samples, f"{where} (samples)", n)
    scores, _ = check_coverage(items, scores, f"{where} (scores)", n)
    matrix = scores["score"].to_numpy(dtype=np.float64).reshape(len(items), n)  # (items, n), item order
    item_means = matrix.mean(axis=1)
    errors = Counter(error_reason(str(e)) for e in scores["error"] if e is not None and not pd.isna(e))
    families = sorted({item["family"] for item in items})
    benchmarks = sorted({item["benchmark"] for item in items})
    return {
        "benchmark": benchmarks[0] if len(benchmarks) == 1 else benchmarks,
        "family": families[0] if len(families) == 1 else families,
        "n_items": len(items),
        "n_samples": n,
        "pass_at_1": float(item_means.mean()),
        "pass_at_k": {str(k): float(pass_at_k_from_scores(matrix, k).mean()) for k in ks_for(n, ks)},
        "correct_rate": float(scores["correct"].astype(bool).mean()),
        "mean_response_tokens": float(samples["n_tokens"].astype(float).mean()),
        "truncation_rate": float((samples["finish_reason"].astype(str) == "length").mean()),
        "finish_reasons": dict(Counter(samples["finish_reason"].astype(str))),
        "scorer_errors": dict(sorted(errors.items())),
        "item_mean_scores": {item["id"]: float(m) for item, m in zip(items, item_means)},
    }


def summary_record(
    items: list[dict],
    samples_path: Path | str,
    scores_path: Path | str,
    benchmark_path: Path | str,
    arm: str,
    step: int,
    n: int | None = None,
    max_items: int | None = None,
) -> dict:
    """``summarize`` from files, with the arm, step, input checksums, generation sidecar and provenance."""
    from ..provenance import provenance
    from .score import read_table

    samples = read_table(samples_path, SAMPLE_COLUMNS, "samples")
    scores = read_table(scores_path, SCORE_COLUMNS, "scores")
    body = summarize(items, samples, scores, n=n, where=str(scores_path))
    sidecar = Path(str(samples_path) + ".json")
    generation = json.loads(sidecar.read_text()) if sidecar.is_file() else None
    inputs = {
        "benchmark": {"path": str(benchmark_path), "sha256": sha256_file(benchmark_path)},
        "samples": {"path": str(samples_path), "sha256": sha256_file(samples_path)},
        "scores": {"path": str(scores_path), "sha256": sha256_file(scores_path)},
    }
    return {
        "arm": arm,
        "step": int(step),
        **body,
        "max_items": max_items,
        "inputs": inputs,
        "generation": generation,
        "provenance": provenance(),
    }


# ---------------------------------------------------------------------------------------------------------- collect
def collect(summaries: list[dict], ks=DEFAULT_KS) -> pd.DataFrame:
    """One row per (arm, step, benchmark), then per (arm, step) one average row per family present.

    An average row has benchmark "<Family> avg" and n_benchmarks = the benchmarks it averages (unweighted).
    """
    cols = [f"pass@{k}" for k in ks]
    rows = []
    for s in summaries:
        if not isinstance(s.get("benchmark"), str) or not isinstance(s.get("family"), str):
            raise EvaluationError(f"summary of {s.get('arm')}/{s.get('step')} mixes benchmarks or families")
        row = {
            "arm": s["arm"],
            "step": int(s["step"]),
            "benchmark": s["benchmark"],
            "family": s["family"],
            "n_benchmarks": 1,
            "n_items": s["n_items"],
            "n_samples": s["n_samples"],
        }
        for k, c in zip(ks, cols):
            row[c] = s["pass_at_k"].get(str(k), np.nan)
        row["pass@1"] = s["pass_at_1"]
        row["mean_response_tokens"] = s["mean_response_tokens"]
        row["truncation_rate"] = s["truncation_rate"]
        row["scorer_errors"] = int(sum(s["scorer_errors"].values()))
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        raise EvaluationError("no summaries to collect")
    dup = df[df.duplicated(["arm", "step", "benchmark"], keep=False)]
    if len(dup):
        first = dup.iloc[0]
        raise EvaluationError(f"two summaries for arm {first.arm!r}, step {first.step}, benchmark {first.benchmark!r}")
    fam_rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    df["_fam"] = df["family"].map(lambda f: fam_rank.get(f, len(fam_rank)))
    df["_avg"] = 0
    averages = []
    for (arm, step, family), group in df.groupby(["arm", "step", "family"], sort=False):
        label = FAMILY_LABELS.get(family, family)
        avg = {
            "arm": arm,
            "step": step,
            "benchmark": f"{label} avg",
            "family": family,
            "n_benchmarks": len(group),
            "n_items": int(group["n_items"].sum()),
            "n_samples": int(group["n_samples"].min()),
            "_fam": group["_fam"].iloc[0],
            "_avg": 1,
        }
        for c in [*cols, "mean_response_tokens", "truncation_rate"]:
            avg[c] = float(group[c].mean())  # NaN where a benchmark lacks that k
        avg["scorer_errors"] = int(group["scorer_errors"].sum())
        averages.append(avg)
    df = pd.concat([df, pd.DataFrame(averages)], ignore_index=True)
    df = df.sort_values(["arm", "step", "_avg", "_fam", "benchmark"], kind="stable").drop(columns=["_fam", "_avg"])
    return df.reset_index(drop=True)
