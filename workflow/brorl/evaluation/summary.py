"""Summaries of one (arm, step, benchmark) and the table over all of them (the paper's Appendix D protocol).

pass@1 = mean score over a problem's samples, then mean over problems (continuous Reasoning Gym scores count as
their value); pass@k for k in {1, 2, 4, 8, 16} (k <= n) by the unbiased estimator (brorl.evaluation.passk).
Family averages are unweighted means over the benchmarks present: Math over its benchmarks, Code over its four,
Reasoning Gym over its categories (our family mean; BroRL's printed Reasoning Gym "Avg" is not the category mean,
and the analysis tables show its own averages beside it).

Error bars (brorl.stats.stderr, docs/design.md#error-bars): every pass@k has the analytic standard error of a mean
over problems and pass@1 its 95% interval; a family average has ``sqrt(sum se^2) / k``. Math benchmarks also get
pass@1 under math-verify alone (the lighteval / open-r1 grader) and the samples on which it and the ProRL grader
(DeepScaleR OR math-verify) disagree, both ways; other families have ``math_verify: null``. Code benchmarks also get
the mean fraction of tests passed (``tests_passed``; pass@1 is all tests passing): the paper's code scoring is not
published, and its Baseline row sits 12-19 points above the model card's code numbers for the same weights, which
a partial-credit score would explain; once measured, Table 4 says which of the two reproduces it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.provenance import sha256_file
from ..reporting.tables import plus_minus
from ..scoring.result import NO_ANSWER_REASONS
from ..stats.stderr import MeanError, mean_error, mean_of_errors
from .passk import DEFAULT_KS, ks_for, pass_at_k_from_scores
from .score import (
    MATH_VERIFY_COLUMN,
    SAMPLE_COLUMNS,
    SCORE_COLUMNS,
    TESTS_PASSED_COLUMN,
    EvaluationError,
    check_coverage,
)

FAMILY_LABELS = {"math": "Math", "code": "Code", "reasoning_gym": "Reasoning Gym"}
FAMILY_ORDER = tuple(FAMILY_LABELS)


def error_reason(error: str) -> str:
    """The reason of a scorer error without its details: "crash: ValueError: ..." -> "crash"."""
    return error.split(":", 1)[0].strip() or error


def _finite(x: float) -> float | None:
    """A float for JSON: None for NaN (no spread estimate from one problem)."""
    return None if np.isnan(x) else float(x)


def _error_fields(err: MeanError, prefix: str = "pass_at_1") -> dict:
    return {f"{prefix}_stderr": _finite(err.se), f"{prefix}_ci95": [_finite(err.low), _finite(err.high)]}


def math_verify_summary(items: list[dict], scores: pd.DataFrame, n: int, where: str) -> dict | None:
    """pass@1 under math-verify alone (with its error) and the disagreements with ``correct`` (the ProRL grader),
    for a benchmark scored by the math verifier; None for any other. ``scores`` in item order, then sample_idx."""
    if any(item.get("scorer") != "math" for item in items):
        return None
    if MATH_VERIFY_COLUMN not in scores.columns:
        raise EvaluationError(
            f"{where}: the scores of a math benchmark lack column {MATH_VERIFY_COLUMN} (scored before it existed: "
            "score the samples again)"
        )
    verdict = scores[MATH_VERIFY_COLUMN]
    if verdict.isna().any():
        raise EvaluationError(f"{where}: {int(verdict.isna().sum())} math sample(s) have no {MATH_VERIFY_COLUMN}")
    mv = verdict.astype(bool).to_numpy()
    prorl = scores["correct"].astype(bool).to_numpy()
    err = mean_error(mv.astype(np.float64).reshape(len(items), n).mean(axis=1))
    return {
        "pass_at_1": err.mean,
        **_error_fields(err),
        "prorl_only": int((prorl & ~mv).sum()),  # the ProRL grader accepts, math-verify alone rejects
        "math_verify_only": int((mv & ~prorl).sum()),
        "agree": int((mv == prorl).sum()),
    }


def tests_passed_summary(items: list[dict], scores: pd.DataFrame, n: int, where: str) -> dict | None:
    """The second code score: the mean over problems of each problem's mean fraction of tests passed (with its
    error), for a benchmark scored by the code verifier whose scores carry it; None otherwise (other families, and
    code scored before both were recorded)."""
    if any(item.get("scorer") != "code" for item in items) or TESTS_PASSED_COLUMN not in scores.columns:
        return None
    fraction = scores[TESTS_PASSED_COLUMN]
    if fraction.isna().any():
        raise EvaluationError(f"{where}: {int(fraction.isna().sum())} code sample(s) have no {TESTS_PASSED_COLUMN}")
    err = mean_error(fraction.to_numpy(dtype=np.float64).reshape(len(items), n).mean(axis=1))
    return {"pass_at_1": err.mean, **_error_fields(err)}


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
    pass_k = {k: pass_at_k_from_scores(matrix, k) for k in ks_for(n, ks)}  # per-item estimates
    err = mean_error(item_means)
    errors = Counter(error_reason(str(e)) for e in scores["error"] if e is not None and not pd.isna(e))
    families = sorted({item["family"] for item in items})
    benchmarks = sorted({item["benchmark"] for item in items})
    return {
        "benchmark": benchmarks[0] if len(benchmarks) == 1 else benchmarks,
        "family": families[0] if len(families) == 1 else families,
        "n_items": len(items),
        "n_samples": n,
        "pass_at_1": float(item_means.mean()),
        **_error_fields(err),
        "pass_at_k": {str(k): float(v.mean()) for k, v in pass_k.items()},
        "pass_at_k_stderr": {str(k): _finite(mean_error(v).se) for k, v in pass_k.items()},
        "math_verify": math_verify_summary(items, scores, n, where),
        "tests_passed": tests_passed_summary(items, scores, n, where),
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
    from ..reporting.provenance import provenance
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
ERROR_COLUMNS = ("pass@1 se", "pass@1 ci95 low", "pass@1 ci95 high")
MV_COLUMNS = ("pass@1 math-verify", "pass@1 math-verify se", "ProRL only", "math-verify only")
TP_COLUMNS = ("pass@1 tests passed", "pass@1 tests passed se")  # code: the mean fraction of tests passed


def _nan(x: object) -> float:
    return float("nan") if x is None else float(x)


def _benchmark_row(s: dict, ks, cols: list[str]) -> dict:
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
    low, high = s.get("pass_at_1_ci95") or (None, None)
    row.update(zip(ERROR_COLUMNS, (_nan(s.get("pass_at_1_stderr")), _nan(low), _nan(high))))
    mv = s.get("math_verify") or {}
    row.update(
        zip(
            MV_COLUMNS,
            (_nan(mv.get(k)) for k in ("pass_at_1", "pass_at_1_stderr", "prorl_only", "math_verify_only")),
        )
    )
    tp = s.get("tests_passed") or {}
    row.update(zip(TP_COLUMNS, (_nan(tp.get("pass_at_1")), _nan(tp.get("pass_at_1_stderr")))))
    row["mean_response_tokens"] = s["mean_response_tokens"]
    row["truncation_rate"] = s["truncation_rate"]
    reasons = s["scorer_errors"]
    row["no_answer"] = int(sum(v for k, v in reasons.items() if k in NO_ANSWER_REASONS))
    row["scorer_errors"] = int(sum(v for k, v in reasons.items() if k not in NO_ANSWER_REASONS))
    return row


def _average_row(arm: str, step: int, family: str, group: pd.DataFrame, cols: list[str]) -> dict:
    """A family's unweighted average of its benchmark rows; errors combined as sqrt(sum se^2) / k."""
    avg = {
        "arm": arm,
        "step": step,
        "benchmark": f"{FAMILY_LABELS.get(family, family)} avg",
        "family": family,
        "n_benchmarks": len(group),
        "n_items": int(group["n_items"].sum()),
        "n_samples": int(group["n_samples"].min()),
        "_fam": group["_fam"].iloc[0],
        "_avg": 1,
    }
    for c in [*cols, "mean_response_tokens", "truncation_rate"]:
        avg[c] = float(group[c].mean())  # NaN where a benchmark lacks that k
    err = mean_of_errors(group["pass@1"], group["pass@1 se"], avg["n_items"])
    avg.update(zip(ERROR_COLUMNS, (err.se, err.low, err.high)))
    mv = mean_of_errors(group["pass@1 math-verify"], group["pass@1 math-verify se"], avg["n_items"])
    avg.update(zip(MV_COLUMNS[:2], (mv.mean, mv.se)))
    tp = mean_of_errors(group[TP_COLUMNS[0]], group[TP_COLUMNS[1]], avg["n_items"])
    avg.update(zip(TP_COLUMNS, (tp.mean, tp.se)))
    for c in MV_COLUMNS[2:]:
        avg[c] = group[c].sum(min_count=len(group))  # NaN unless every benchmark counted its disagreements
    avg["no_answer"] = int(group["no_answer"].sum())
    avg["scorer_errors"] = int(group["scorer_errors"].sum())
    return avg


def collect(summaries: list[dict], ks=DEFAULT_KS) -> pd.DataFrame:
    """One row per (arm, step, benchmark), then per (arm, step) one average row per family present.

    An average row has benchmark "<Family> avg" and n_benchmarks = the benchmarks it averages (unweighted); its
    n_items is their sum and its standard error ``sqrt(sum se^2) / k``. Math-verify columns are NaN outside math.
    """
    cols = [f"pass@{k}" for k in ks]
    df = pd.DataFrame([_benchmark_row(s, ks, cols) for s in summaries])
    if df.empty:
        raise EvaluationError("no summaries to collect")
    dup = df[df.duplicated(["arm", "step", "benchmark"], keep=False)]
    if len(dup):
        first = dup.iloc[0]
        raise EvaluationError(f"two summaries for arm {first.arm!r}, step {first.step}, benchmark {first.benchmark!r}")
    fam_rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    df["_fam"] = df["family"].map(lambda f: fam_rank.get(f, len(fam_rank)))
    df["_avg"] = 0
    averages = [
        _average_row(arm, step, family, group, cols)
        for (arm, step, family), group in df.groupby(["arm", "step", "family"], sort=False)
    ]
    df = pd.concat([df, pd.DataFrame(averages)], ignore_index=True)
    df = df.sort_values(["arm", "step", "_avg", "_fam", "benchmark"], kind="stable").drop(columns=["_fam", "_avg"])
    return df.reset_index(drop=True)


def display_collected(df: pd.DataFrame) -> pd.DataFrame:
    """The collected table as text for markdown: pass@1 (%) ``± se`` with its 95% interval and ``n`` (problems x
    samples), the math-verify pass@1 the same way; the other pass@k as fractions."""
    out = df.drop(columns=[*ERROR_COLUMNS, "pass@1 math-verify se", "pass@1", "pass@1 math-verify", *TP_COLUMNS])
    at = out.columns.get_loc("n_samples") + 1
    out.insert(at, "n", [f"{int(i)} x {int(k)}" for i, k in zip(df["n_items"], df["n_samples"])])
    out.insert(at + 1, "pass@1 (%)", [plus_minus(v, e, scale=100) for v, e in zip(df["pass@1"], df["pass@1 se"])])
    ci = [
        "" if np.isnan(lo) else f"[{100 * lo:.2f}, {100 * hi:.2f}]"
        for lo, hi in zip(df["pass@1 ci95 low"], df["pass@1 ci95 high"])
    ]
    out.insert(at + 2, "pass@1 95% CI", ci)
    mv = [plus_minus(v, e, scale=100) for v, e in zip(df["pass@1 math-verify"], df["pass@1 math-verify se"])]
    tp = [plus_minus(v, e, scale=100) for v, e in zip(df[TP_COLUMNS[0]], df[TP_COLUMNS[1]])]
    second = [f"math-verify {m}" if m else f"tests passed {t}" if t else "" for m, t in zip(mv, tp)]
    out.insert(out.columns.get_loc("ProRL only"), SECOND_VERDICT, second)
    return out.drop(columns=["n_items", "n_samples"])


# math: pass@1 under math-verify alone; code: the mean fraction of tests passed (pass@1 is all tests passing)
SECOND_VERDICT = "second score (%)"


AGREEMENT_COLUMNS = (
    "arm",
    "step",
    "benchmark",
    "n_items",
    "n_samples",
    "pass@1",
    "pass@1 se",
    "pass@1 math-verify",
    "pass@1 math-verify se",
    "ProRL only",
    "math-verify only",
)


def agreement_table(df: pd.DataFrame) -> pd.DataFrame:
    """The math rows of a collected table (fractions): pass@1 under the ProRL grader and math-verify alone with their
    errors, their difference and the samples on which they disagree (ProRL only: DeepScaleR accepted what
    math-verify rejects; math-verify only: the other way)."""
    math = df.loc[df["family"] == "math", list(AGREEMENT_COLUMNS)].reset_index(drop=True)
    return math.assign(difference=math["pass@1"] - math["pass@1 math-verify"])


def display_agreement(table: pd.DataFrame) -> pd.DataFrame:
    """``agreement_table`` as text: percent ± se, the difference in signed points, n = problems x samples."""
    return pd.DataFrame(
        {
            "arm": table["arm"],
            "step": table["step"],
            "benchmark": table["benchmark"],
            "n": [f"{int(i)} x {int(k)}" for i, k in zip(table["n_items"], table["n_samples"])],
            "pass@1 ProRL grader (%)": [
                plus_minus(v, e, scale=100) for v, e in zip(table["pass@1"], table["pass@1 se"])
            ],
            "pass@1 math-verify (%)": [
                plus_minus(v, e, scale=100) for v, e in zip(table["pass@1 math-verify"], table["pass@1 math-verify se"])
            ],
            "difference (points)": [f"{100 * d:+.2f}" for d in table["difference"]],
            "ProRL only (samples)": table["ProRL only"],
            "math-verify only (samples)": table["math-verify only"],
        }
    )
