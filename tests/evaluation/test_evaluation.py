"""The evaluation stage: unbiased pass@k against brute force, summaries and scoring of hand-made samples (every
item x sample accounted for; unknown, duplicate and missing samples fail naming the id), the table's family
averages, the tiny preset's evaluation DAG, and a real end-to-end evaluation through Snakemake (tiny model,
offline benchmarks) that is then up to date and resumes from its generation shards."""

from __future__ import annotations

import base64
import importlib.util
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from brorl.benchmarks.records import write_records
from brorl.benchmarks.synthetic import arithmetic
from brorl.config import load_yaml_config
from brorl.evaluation.passk import ks_for, pass_at_k, pass_at_k_from_scores
from brorl.evaluation.score import EvaluationError, check_coverage
from brorl.evaluation.summary import collect, summarize
from helpers import BIN, CONFIG, SHORT_WARM_START, TINY, copy_workflow, job_counts, output_of, snakemake, write_yaml

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "brorl.evaluation", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


# ----------------------------------------------------------------------------------------------------------- pass@k
def brute_force_pass_at_k(outcomes: list[int], k: int) -> float:
    """Fraction of all k-subsets of the samples that hold at least one correct sample."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


def test_pass_at_k_equals_enumeration_over_all_subsets():
    for n in range(1, 9):
        for c in range(n + 1):
            outcomes = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                got = float(pass_at_k([n], [c], k)[0])
                assert got == pytest.approx(brute_force_pass_at_k(outcomes, k), abs=1e-12), (n, c, k)


def test_pass_at_k_is_vectorised_and_stable_for_large_n():
    n, c = np.array([16, 16, 16, 16]), np.array([0, 5, 15, 16])
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)
    assert pass_at_k([16], [5], 1)[0] == 0.3125  # pass@1 = c / n = 5 / 16 (docs/design.md#passk)
    big = pass_at_k([100_000], [3], 1000)[0]  # binomials of this size overflow floats
    assert big == pytest.approx(1 - np.prod([1 - 1000 / i for i in range(99_998, 100_001)]))
    with pytest.raises(ValueError, match="at least 8 samples"):
        pass_at_k([4], [1], 8)


def test_continuous_scores_pass_at_1_is_the_mean_and_pass_at_k_counts_full_scores():
    scores = np.array([[0.5, 1.0, 0.0, 0.25], [1.0, 1.0, 0.9, 0.0]])
    assert pass_at_k_from_scores(scores, 1) == pytest.approx([0.4375, 0.725])
    assert pass_at_k_from_scores(scores, 2) == pytest.approx(
        [brute_force_pass_at_k([0, 1, 0, 0], 2), brute_force_pass_at_k([1, 1, 0, 0], 2)]
    )
    assert ks_for(16) == [1, 2, 4, 8, 16] and ks_for(4) == [1, 2, 4]


# ------------------------------------------------------------------------------------------------ scoring, summary
def _items(n_items: int = 3) -> list[dict]:
    return arithmetic(n_items, 7, benchmark="synthetic_math")


def _samples(items: list[dict], n: int) -> pd.DataFrame:
    """Sample s of item i answers correctly when (i + s) is even; the last sample of each item is truncated."""
    rows = []
    for i, item in enumerate(items):
        for s in range(n):
            answer = item["answer"] if (i + s) % 2 == 0 else "-1"
            response = f"<think>sum</think> The answer is \\boxed{{{answer}}}."
            rows.append(
                {
                    "id": item["id"],
                    "sample_idx": s,
                    "response": response,
                    "n_tokens": 10 + s,
                    "finish_reason": "length" if s == n - 1 else "stop",
                }
            )
    return pd.DataFrame(rows)


def test_summary_pass_at_1_is_the_mean_of_the_scores():
    rng = np.random.default_rng(0)
    items, n = _items(5), 8
    samples = _samples(items, n)
    scores = samples[["id", "sample_idx"]].assign(score=rng.random(len(samples)).round(2), error=None)
    scores.loc[::3, "score"] = 1.0
    scores["correct"] = scores["score"] == 1.0
    scores["correct_math_verify"] = scores["correct"]
    shuffled = scores.sample(frac=1.0, random_state=1)  # order of rows must not matter
    summary = summarize(items, samples, shuffled)
    assert summary["pass_at_1"] == pytest.approx(scores["score"].mean())
    assert summary["pass_at_k"]["1"] == pytest.approx(summary["pass_at_1"])
    assert set(summary["pass_at_k"]) == {"1", "2", "4", "8"}
    assert summary["n_items"] == 5 and summary["n_samples"] == 8 and summary["family"] == "math"
    assert summary["truncation_rate"] == pytest.approx(1 / 8)
    assert summary["mean_response_tokens"] == pytest.approx(10 + 3.5)


def test_score_and_summarize_cli_on_hand_made_samples(tmp_path):
    items = _items(4)
    bench = tmp_path / "synthetic_math.jsonl"
    write_records(bench, items)
    samples = tmp_path / "s.samples.parquet"
    _samples(items[:3], 4).to_parquet(samples)  # the first 3 items, as generation's --max-items 3
    scores = tmp_path / "s.scores.parquet"
    proc = cli(
        "score", "--benchmark", bench, "--samples", samples, "--max-items", 3, "--n", 4, "--workers", 2, "--out", scores
    )
    assert proc.returncode == 0, proc.stderr
    df = pd.read_parquet(scores)
    assert list(df.columns) == ["id", "sample_idx", "score", "correct", "error", "correct_math_verify", "tests_passed"]
    assert df["correct_math_verify"].tolist() == df["correct"].tolist()  # integer answers: the graders agree
    assert len(df) == 12 and set(zip(df.id, df.sample_idx)) == {(it["id"], s) for it in items[:3] for s in range(4)}
    expected = [1.0 if (i + s) % 2 == 0 else 0.0 for i in range(3) for s in range(4)]
    assert df["score"].tolist() == expected and df["correct"].tolist() == [e == 1.0 for e in expected]

    summary = tmp_path / "s.summary.json"
    proc = cli(
        "summarize",
        "--benchmark",
        bench,
        "--samples",
        samples,
        "--scores",
        scores,
        "--arm",
        "base",
        "--step",
        0,
        "--max-items",
        3,
        "--n",
        4,
        "--out",
        summary,
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads(summary.read_text())
    assert s["pass_at_1"] == pytest.approx(df["score"].mean()) == pytest.approx(0.5)
    assert s["pass_at_k"]["2"] == pytest.approx(1 - 1 / 6) and s["pass_at_k"]["4"] == 1.0
    assert s["arm"] == "base" and s["step"] == 0 and s["benchmark"] == "synthetic_math"
    assert s["truncation_rate"] == pytest.approx(0.25) and s["scorer_errors"] == {}
    # each of the 3 items has 2 of 4 samples right: no spread over problems
    assert s["pass_at_1_stderr"] == 0.0 and s["pass_at_1_ci95"] == [0.5, 0.5]
    assert s["math_verify"] == {
        "pass_at_1": 0.5,
        "pass_at_1_stderr": 0.0,
        "pass_at_1_ci95": [0.5, 0.5],
        "prorl_only": 0,
        "math_verify_only": 0,
        "agree": 12,
    }
    assert s["inputs"]["scores"]["sha256"] and "git" in s["provenance"]


def test_the_score_cli_gives_responses_the_think_tag_a_template_opened(tmp_path):
    """Generation records whether the model's chat template opened <think> (brorl.generation.engine); scoring
    then reads a response cut off inside its reasoning as truncated, as the training reward does."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from brorl.evaluation.score import SAMPLES_META_KEY
    from brorl.generation.generate import META_KEY

    assert SAMPLES_META_KEY == META_KEY  # evaluation never imports generation: the key is written twice
    items = _items(1)
    bench = tmp_path / "synthetic_math.jsonl"
    write_records(bench, items)
    answer = items[0]["answer"]
    responses = [f"reasoning</think> \\boxed{{{answer}}}", f"maybe \\boxed{{{answer}}}, but wait"]  # 2nd: cut off
    table = pa.Table.from_pandas(
        pd.DataFrame(
            {
                "id": [items[0]["id"]] * 2,
                "sample_idx": [0, 1],
                "response": responses,
                "n_tokens": [10, 10],
                "finish_reason": ["stop", "length"],
            }
        ),
        preserve_index=False,
    )
    correct = {}
    for opened in (False, True):
        meta = {"engine": {"info": {"template_opens_reasoning": opened}}}
        samples = tmp_path / f"opened-{opened}.samples.parquet"
        pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), samples)
        out = tmp_path / f"opened-{opened}.scores.parquet"
        proc = cli("score", "--benchmark", bench, "--samples", samples, "--n", 2, "--workers", 1, "--out", out)
        assert proc.returncode == 0, proc.stderr
        correct[opened] = pd.read_parquet(out)["correct"].tolist()
    assert correct == {False: [True, True], True: [True, False]}


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda df: pd.concat([df, df.iloc[[5]]]), "duplicate sample(s) (id, sample_idx): ('synthetic_math/1', 1)"),
        (lambda df: df.drop(index=6), "missing samples for 1 item(s): 'synthetic_math/1 (3 of 4)'"),
        (lambda df: df[df.id != "synthetic_math/2"], "missing samples for 1 item(s): 'synthetic_math/2 (0 of 4)'"),
        (lambda df: df.replace({"id": {"synthetic_math/0": "aime24/0"}}), "not among the 3 benchmark item(s)"),
        (lambda df: df.assign(sample_idx=df.sample_idx.where(df.index != 0, 9)), "sample_idx outside 0..3"),
    ],
    ids=["duplicate", "missing-sample", "missing-item", "unknown-id", "bad-index"],
)
def test_score_cli_rejects_samples_that_do_not_cover_the_items(tmp_path, mutate, words):
    items = _items(3)
    bench = tmp_path / "synthetic_math.jsonl"
    write_records(bench, items)
    samples = tmp_path / "s.samples.parquet"
    mutate(_samples(items, 4)).to_parquet(samples)
    out = tmp_path / "s.scores.parquet"
    proc = cli("score", "--benchmark", bench, "--samples", samples, "--n", 4, "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert "error:" in proc.stderr and words in proc.stderr, proc.stderr
    assert str(samples) in proc.stderr and not out.exists()


def test_coverage_check_orders_rows_by_item_then_sample():
    items = _items(2)
    df = _samples(items, 3).iloc[::-1]
    ordered, n = check_coverage(items, df, "x")
    assert n == 3 and list(zip(ordered.id, ordered.sample_idx)) == [(i["id"], s) for i in items for s in range(3)]
    with pytest.raises(EvaluationError, match="no samples"):
        check_coverage(items, df.iloc[:0], "x")


def test_summary_gives_standard_errors_intervals_and_math_verify_disagreements():
    items, n = _items(4), 4
    samples = _samples(items, n)
    correct = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)  # item x sample
    math_verify = correct.copy()
    math_verify[0, :2] = False  # the ProRL grader accepts, math-verify alone does not (e.g. "4.5e33")
    math_verify[3, 0] = True  # and the other way
    scores = samples[["id", "sample_idx"]].assign(
        score=correct.ravel().astype(float),
        correct=correct.ravel(),
        error=None,
        correct_math_verify=math_verify.ravel(),
    )
    s = summarize(items, samples, scores)
    rates = np.array([1.0, 0.5, 0.25, 0.0])
    se = rates.std(ddof=1) / 2
    assert s["pass_at_1"] == pytest.approx(rates.mean()) and s["pass_at_1_stderr"] == pytest.approx(se)
    assert s["pass_at_1_ci95"] == pytest.approx([rates.mean() - 1.959964 * se, rates.mean() + 1.959964 * se])
    pass2 = pass_at_k_from_scores(correct.astype(float), 2)
    assert s["pass_at_k_stderr"]["2"] == pytest.approx(pass2.std(ddof=1) / 2)
    mv = s["math_verify"]
    assert mv["pass_at_1"] == pytest.approx(math_verify.mean(axis=1).mean())
    assert (mv["prorl_only"], mv["math_verify_only"], mv["agree"]) == (2, 1, 13)
    # one problem: no spread estimate (null in the JSON); a non-math benchmark has no math-verify verdict
    one = summarize(items[:1], samples[samples.id == items[0]["id"]], scores[scores.id == items[0]["id"]])
    assert one["pass_at_1_stderr"] is None and one["pass_at_1_ci95"] == [None, None]
    other = [{**it, "scorer": "stem", "family": "stem"} for it in items]
    assert summarize(other, samples, scores.drop(columns="correct_math_verify"))["math_verify"] is None
    with pytest.raises(EvaluationError, match="lack column correct_math_verify"):
        summarize(items, samples, scores.drop(columns="correct_math_verify"))


def test_scores_carry_the_math_verify_verdict_for_math_items_only():
    from brorl.evaluation.score import score_samples

    math = {**_items(1)[0], "id": "m/0", "answer": "4.5e33"}
    stem = {**math, "id": "s/0", "scorer": "stem", "family": "stem"}
    boxed = ["</think> \\boxed{4.5e33}", "</think> \\boxed{4.5 \\times 10^{33}}"]
    samples = pd.DataFrame({"id": ["m/0", "m/0", "s/0", "s/0"], "sample_idx": [0, 1, 0, 1], "response": boxed * 2})
    scores = score_samples([math, stem], samples, workers=1, progress=False, where="x")
    assert scores["correct"].tolist() == [True] * 4  # the ProRL grader (and STEM, built on it) accept both forms
    assert scores["correct_math_verify"].tolist()[:2] == [False, True]  # math-verify alone reads e as Euler's number
    assert scores["correct_math_verify"][2:].isna().all()  # not a math item: no math-verify verdict


def _summary(arm, step, bench, family, p1, n=16, tokens=10.0, trunc=0.0, errors=None, se=0.01, mv=None):
    return {
        "arm": arm,
        "step": step,
        "benchmark": bench,
        "family": family,
        "n_items": 10,
        "n_samples": n,
        "pass_at_1": p1,
        "pass_at_1_stderr": se,
        "pass_at_1_ci95": [p1 - 1.96 * se, p1 + 1.96 * se],
        "pass_at_k": {str(k): min(1.0, p1 * k) for k in ks_for(n)},
        "math_verify": mv,
        "mean_response_tokens": tokens,
        "truncation_rate": trunc,
        "scorer_errors": errors or {},
    }


def test_collect_gives_one_row_per_benchmark_and_unweighted_family_averages(tmp_path):
    summaries = [
        _summary("base", 0, "aime24", "math", 0.2, tokens=100),
        _summary("base", 0, "math500", "math", 0.6, tokens=50, errors={"timeout": 2, "no_code": 3}),
        _summary("base", 0, "synthetic_math", "math", 0.4),
        _summary("base", 0, "apps", "code", 0.3),
        _summary("base", 0, "rg_games", "reasoning_gym", 0.5, trunc=0.5),
        _summary("base", 0, "rg_arc", "reasoning_gym", 0.1),
        _summary("prorl_n16", 25, "aime24", "math", 0.3),
    ]
    df = collect(summaries)
    assert len(df) == 7 + 3 + 1  # benchmark rows + (Math, Code, Reasoning Gym) of base + Math of prorl_n16
    avg = df[df.benchmark.str.endswith(" avg")].set_index(["arm", "benchmark"])
    assert avg.loc[("base", "Math avg"), "pass@1"] == pytest.approx(0.4)
    assert avg.loc[("base", "Math avg"), "n_benchmarks"] == 3
    assert avg.loc[("base", "Math avg"), "mean_response_tokens"] == pytest.approx(160 / 3)
    assert avg.loc[("base", "Math avg"), "scorer_errors"] == 2  # a timeout is the verifier's
    assert avg.loc[("base", "Math avg"), "no_answer"] == 3  # a response without an answer is the model's
    assert avg.loc[("base", "Code avg"), "pass@1"] == pytest.approx(0.3)
    assert avg.loc[("base", "Reasoning Gym avg"), "pass@1"] == pytest.approx(0.3)
    assert avg.loc[("base", "Reasoning Gym avg"), "truncation_rate"] == pytest.approx(0.25)
    assert avg.loc[("prorl_n16", "Math avg"), "pass@1"] == pytest.approx(0.3)
    base = df[df.arm == "base"].benchmark.tolist()
    assert base[:3] == ["aime24", "math500", "synthetic_math"] and base[-3:] == [
        "Math avg",
        "Code avg",
        "Reasoning Gym avg",
    ]
    with pytest.raises(EvaluationError, match="two summaries"):
        collect(summaries + [summaries[0]])
    assert avg.loc[("base", "Math avg"), "pass@1 se"] == pytest.approx(np.sqrt(3 * 0.01**2) / 3)
    assert np.isnan(avg.loc[("base", "Math avg"), "pass@1 math-verify"])  # these summaries carry no verdicts

    paths = []
    for i, s in enumerate(summaries):
        paths.append(tmp_path / f"{i}.summary.json")
        paths[-1].write_text(json.dumps(s))
    md, csv = tmp_path / "t.md", tmp_path / "t.csv"
    proc = cli("collect", "--summaries", *paths, "--out-csv", csv, "--out-md", md)
    assert proc.returncode == 0, proc.stderr
    assert (
        len(pd.read_csv(csv)) == 11 and "| base / 0 | Math avg | math | 3 | 30 x 16 | 40.00 ± 0.58 |" in md.read_text()
    )
    header = next(line for line in md.read_text().splitlines() if line.startswith("|"))
    assert header.count("|") - 1 == 12 and "| no answer / scorer errors |" in header  # within the printed width
    assert pd.read_csv(csv).loc[0, "pass@1 se"] == pytest.approx(0.01)  # the CSV keeps the numbers


def test_collect_writes_the_math_verify_agreement_table(tmp_path):
    mv = {"pass_at_1": 0.5, "pass_at_1_stderr": 0.02, "prorl_only": 7, "math_verify_only": 1, "agree": 152}
    summaries = [
        _summary("base", 0, "aime24", "math", 0.55, se=0.03, mv=mv),
        _summary("base", 0, "math500", "math", 0.7, se=0.01, mv={**mv, "pass_at_1": 0.69, "prorl_only": 3}),
        _summary("base", 0, "rg_games", "reasoning_gym", 0.5),
    ]
    df = collect(summaries)
    math = df.set_index("benchmark").loc["Math avg"]
    assert math["pass@1 math-verify"] == pytest.approx(0.595) and math["ProRL only"] == 10
    assert math["pass@1 math-verify se"] == pytest.approx(np.sqrt(2 * 0.02**2) / 2)
    assert np.isnan(df.set_index("benchmark").loc["rg_games", "pass@1 math-verify"])
    paths = []
    for i, s in enumerate(summaries):
        paths.append(tmp_path / f"{i}.summary.json")
        paths[-1].write_text(json.dumps(s))
    out = {k: tmp_path / f"t.{k}" for k in ("md", "csv")}
    agree = {k: tmp_path / f"agree.{k}" for k in ("md", "csv")}
    args = ("collect", "--summaries", *paths, "--out-csv", out["csv"], "--out-md", out["md"])
    proc = cli(*args, "--agreement-md", agree["md"], "--agreement-csv", agree["csv"])
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(agree["csv"])
    assert table["benchmark"].tolist() == ["aime24", "math500", "Math avg"]  # math rows only
    assert table.loc[0, "pass@1 math-verify"] == 0.5 and table.loc[0, "difference"] == pytest.approx(0.05)
    assert table.loc[0, "ProRL only"] == 7 and table.loc[0, "n_items"] == 10 and table.loc[2, "ProRL only"] == 10
    assert "| aime24 | 10 x 16 | 55.00 ± 3.00 | 50.00 ± 2.00 | +5.00 | 7 | 1 |" in agree["md"].read_text()
    bad = cli(*args, "--agreement-md", agree["md"])
    assert bad.returncode == 2 and "go together" in bad.stderr


# ------------------------------------------------------------------------------------------------------- workflow
def expected_evaluation_counts(cfg: dict) -> dict[str, int]:
    """Jobs of the evaluation of every evaluated checkpoint, of the benchmark files it reads and of the models and
    training runs that make those checkpoints (tiny preset: built, warm-started, staged, extended)."""
    from brorl.training.recipe import arm_plan, enabled_arms, evaluation_steps

    benches = cfg["evaluation"]["benchmarks"]
    rg = sum(b.startswith("rg_") for b in benches)
    arms = enabled_arms(cfg)
    points = 1 + sum(len(evaluation_steps(cfg, arm)) for arm in arms)
    counts = {
        "build_tiny_model": 1,
        "warm_start_tiny_model": 1,
        "download_base_model": 1,
        "extend_context": 2 if arms else 1,
        "prepare_train_data": int(bool(arms)),
        "train_ppo": sum(len(arm_plan(cfg, arm).segments) for arm in arms),
        "export_checkpoint": points - 1,
        # one job per checkpoint where one engine serves every benchmark (the tiny preset), else per benchmark
        "generate_samples": points * (1 if cfg["evaluation"].get("one_engine_per_checkpoint") else len(benches)),
        "score_samples": points * len(benches),
        "summarize_evaluation": points * len(benches),
        "collect_evaluation": 1,
        "generate_reasoning_gym": rg,
        "prepare_benchmark": len(benches) - rg,
    }
    return {k: v for k, v in counts.items() if v}


@pytest.mark.workflow
def test_dry_run_of_the_tiny_preset_evaluates_the_start_checkpoint(tmp_path):
    cfg = load_yaml_config(CONFIG, TINY)
    assert cfg["engine"] == "embedded" and cfg["evaluation"]["n_samples"] == 16
    proc = snakemake("collect_evaluation", "-n", "--directory", tmp_path, "--configfile", TINY)
    text = output_of(proc)
    assert proc.returncode == 0, text
    assert job_counts(proc) == expected_evaluation_counts(cfg)
    step = cfg["base_model"]["start_step"]
    for bench in cfg["evaluation"]["benchmarks"]:
        for ext in ("samples.parquet", "scores.parquet", "summary.json"):
            assert f"results/eval/base/step{step}/{bench}.{ext}" in text
            assert f"results/eval/brorl_n16/step16/{bench}.{ext}" in text  # trained checkpoints too
    assert "--model results/train/prorl_n4/step16" in text
    assert "--max-items" not in text and "--n 16" in text and "--engine embedded" in text  # every problem


@pytest.mark.workflow
def test_paper_config_evaluates_every_checkpoint_on_every_benchmark(tmp_path):
    from brorl.training.recipe import enabled_arms, evaluation_steps

    cfg = load_yaml_config(CONFIG)
    proc = snakemake("-n", "--directory", tmp_path)
    assert proc.returncode == 0, output_of(proc)
    points = 1 + sum(len(evaluation_steps(cfg, arm)) for arm in enabled_arms(cfg))
    assert job_counts(proc)["generate_samples"] == points * len(cfg["evaluation"]["benchmarks"]) == 33 * 21


# ------------------------------------------------------------------------------------------------------ real run
ENGINE_READY = all(importlib.util.find_spec(m) is not None for m in ("brorl.models.cli", "brorl.generation.cli"))


# Two checkpoints of evaluation.models, as workflow/presets/released.yaml names the released weights: the tiny model
# as built (never trained) and its warm start (the start checkpoint's weights) standing for a paper row.
TINY_MODELS = [
    {"name": "bare", "label": "tiny model as built", "path": "resources/build/tiny-qwen2"},
    {
        "name": "warm",
        "label": "tiny warm start (as a model)",
        "path": "resources/build/tiny-qwen2-warm",
        "continued_steps": 191,
        "paper_row": "treatment@191",
    },
]


@pytest.mark.slow
@pytest.mark.skipif(not ENGINE_READY, reason="brorl.models / brorl.generation are not here yet")
@pytest.mark.workflow
def test_tiny_evaluation_runs_end_to_end_then_is_up_to_date_and_resumes_from_shards(tmp_path):
    repo = copy_workflow(tmp_path / "repo")
    untrained = [{**arm, "enabled": False} for arm in load_yaml_config(CONFIG, TINY)["arms"]]  # the start model only
    override = write_yaml(
        tmp_path / "small.yaml",
        {
            **SHORT_WARM_START,
            "simulation": {"enabled": False},
            "throughput": {"enabled": False},
            "arms": untrained,
            "evaluation": {
                "benchmarks": ["synthetic_math", "rg_arithmetic"],
                "max_items": 3,
                "n_samples": 16,
                "start_draws": 1,  # as workflow/presets/released.yaml: no two arms to give each its own draw
                "max_tokens": 16,
                "shard_size": 1,
                "models": TINY_MODELS,  # the tiny twin of workflow/presets/released.yaml: checkpoints, no training
            },
        },
    )
    env_data_root = os.environ.get("BRORL_DATA_ROOT")
    os.environ["BRORL_DATA_ROOT"] = str(tmp_path / "no-data")  # offline: no local data files needed
    try:
        args = ("--cores", "2", "--directory", tmp_path, "--configfile", TINY, override)
        proc = snakemake(*args, cwd=repo, timeout=1200)
        assert proc.returncode == 0, output_of(proc)[-8000:]
        eval_dir = tmp_path / "results" / "eval" / "base" / "step0"
        for bench in ("synthetic_math", "rg_arithmetic"):
            items = [json.loads(line) for line in (tmp_path / f"resources/benchmarks/{bench}.jsonl").open()][:3]
            samples = pd.read_parquet(eval_dir / f"{bench}.samples.parquet")
            scores = pd.read_parquet(eval_dir / f"{bench}.scores.parquet")
            summary = json.loads((eval_dir / f"{bench}.summary.json").read_text())
            assert sorted(samples.id.unique()) == sorted(i["id"] for i in items)
            for _, group in samples.groupby("id"):
                assert sorted(group.sample_idx) == list(range(16))
            assert (samples.n_tokens <= 16).all()
            assert len(scores) == len(samples) == 48
            assert set(zip(scores.id, scores.sample_idx)) == set(zip(samples.id, samples.sample_idx))
            assert summary["pass_at_1"] == pytest.approx(scores.score.mean())
            assert summary["n_items"] == 3 and summary["n_samples"] == 16
            assert "pass_at_1_stderr" in summary and len(summary["pass_at_1_ci95"]) == 2
            mv = summary["math_verify"]
            if bench == "synthetic_math":  # the real scorer's two verdicts, every sample counted once
                assert mv["agree"] + mv["prorl_only"] + mv["math_verify_only"] == 48
                assert scores["correct_math_verify"].notna().all()
            else:
                assert mv is None and scores["correct_math_verify"].isna().all()
        table = pd.read_csv(tmp_path / "results/tables/eval_summary.csv")
        assert {"synthetic_math", "rg_arithmetic", "Math avg", "Reasoning Gym avg"} <= set(table.benchmark)
        agreement = pd.read_csv(tmp_path / "results/tables/math_verify_agreement.csv")
        assert set(agreement.benchmark) == {"synthetic_math", "Math avg"}
        check_model_rows(tmp_path)

        again = snakemake(*args, cwd=repo)
        assert again.returncode == 0 and "Nothing to be done" in output_of(again), output_of(again)

        shards = sorted(p for p in (eval_dir / "synthetic_math.samples.parquet.shards").iterdir() if p.is_file())
        assert len(shards) >= 3, shards  # shard_size 1: one shard per item (plus any bookkeeping files)
        victim = next(p for p in shards if p.suffix == ".parquet")
        kept = {p: p.stat().st_mtime_ns for p in shards if p != victim and p.suffix == ".parquet"}
        victim.unlink()
        (eval_dir / "synthetic_math.samples.parquet").unlink()
        # every per-checkpoint output is a target: the plain command remakes a deleted one (Snakemake alone would not
        # rebuild a missing intermediate file whose consumers are complete)
        resumed = snakemake(*args, cwd=repo)
        text = output_of(resumed)
        assert resumed.returncode == 0, text[-8000:]
        assert victim.is_file() and all(p.stat().st_mtime_ns == t for p, t in kept.items())
        jobs = job_counts(resumed)
        assert jobs["generate_samples"] == 1 and "build_tiny_model" not in jobs, jobs
        assert {"score_samples", "summarize_evaluation", "collect_evaluation"} <= set(jobs)  # new samples, rescored
        # the tiny preset's one generation job per checkpoint (evaluation.one_engine_per_checkpoint): one log
        log = (tmp_path / "results/logs/generate_samples/base/step0/all_benchmarks.log").read_text()
        assert f"1 of {len(kept) + 1} shard(s) to generate" in log, log[-3000:]
        assert len(pd.read_parquet(eval_dir / "synthetic_math.samples.parquet")) == 48
        check_lost_scores_are_remade(repo, tmp_path, args)

        # A verifier change reruns scoring (and what reads the scores), never generation.
        verifier = repo / "workflow" / "brorl" / "scoring" / "math" / "__init__.py"
        verifier.write_text(verifier.read_text() + "\n_A_VERIFIER_EDIT = 1\n")  # behaviour, not a comment
        changed = job_counts(snakemake("-n", *args, cwd=repo))
        assert changed.get("score_samples") == 2 * (1 + len(TINY_MODELS)), changed  # start + models
        assert "generate_samples" not in changed and "build_tiny_model" not in changed, changed

        check_make_evaluate(tmp_path, override)
    finally:
        if env_data_root is None:
            os.environ.pop("BRORL_DATA_ROOT", None)
        else:
            os.environ["BRORL_DATA_ROOT"] = env_data_root


def check_lost_scores_are_remade(repo: Path, work: Path, args: tuple) -> None:
    """A scores file whose job was killed with the driver (docs/cluster.md#after-a-failure) is remade equal by the
    plain command after --unlock (a deleted output is remade by the plain command: the shard check above)."""
    scores = work / "results/eval/base/step0/synthetic_math.scores.parquet"
    before = pd.read_parquet(scores)
    # kill the driver and its jobs while the scoring job runs: its output, deleted at the job's start, stays missing
    rel = scores.relative_to(work).as_posix()
    marker = work / ".snakemake/incomplete" / base64.urlsafe_b64encode(rel.encode()).decode()
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    driver = subprocess.Popen(
        [str(BIN / "snakemake"), rel, "--forcerun", "score_samples", *map(str, args)],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not (marker.exists() and not scores.exists()) and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.2)
    assert marker.exists() and driver.poll() is None, "the scoring job did not start"
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert not scores.exists()
    assert snakemake("--unlock", *args, cwd=repo).returncode == 0
    rerun = snakemake(*args, cwd=repo)
    assert rerun.returncode == 0, output_of(rerun)[-4000:]
    pd.testing.assert_frame_equal(pd.read_parquet(scores), before)


def check_make_evaluate(work: Path, override: Path) -> None:
    """`make evaluate MODEL=<folder>` on this fixture's run folder: a tiny Llama built offline (another architecture
    vLLM serves) evaluated alone through the real rules with the fixture's settings (CONFIG=), without the start
    checkpoint (no BASE=1): no model of the start is built or extended, and SUMMARY.md says why nothing is compared
    with it."""
    from brorl.models.tiny import build_tiny_model

    llama = build_tiny_model(work / "ckpt" / "tiny-llama", architecture="llama")
    argv = ["make", "evaluate", f"MODEL={llama}", "PROFILE=local", f"CONFIG={override}", "CONFIRM=1"]
    proc = subprocess.run(
        [*argv, f"SUBMIT_ARGS=--directory {work} --cores 2"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    jobs = job_counts(proc)
    assert jobs["generate_samples"] == 1 and jobs["score_samples"] == 2, jobs  # the model alone, two benchmarks
    assert not {"build_tiny_model", "warm_start_tiny_model", "download_base_model", "extend_context"} & set(jobs)
    staged = json.loads((work / "resources/models/eval/tiny_llama/brorl_manifest.json").read_text())
    assert staged["architecture"] == "LlamaForCausalLM" and staged["source"]["path"] == str(llama)
    summary = json.loads((work / "results/eval/tiny_llama/step0/synthetic_math.summary.json").read_text())
    assert summary["n_items"] == 3 and summary["n_samples"] == 16
    rows = pd.read_csv(work / "results/tables/table1.csv", keep_default_na=False).set_index("arm")
    assert "tiny_llama" in rows.index and "bare" not in rows.index  # this run's checkpoint only
    text = (work / "results/SUMMARY.md").read_text()
    assert "`tiny_llama`: no change against the start checkpoint is shown" in text and "BASE=1" in text
    # `make report` of this run, with the profile and config files it ran with, as make evaluate prints it
    command = proc.stdout.rsplit("the run's report: ", 1)[1].splitlines()[0]
    assert "PROFILE=local" in command and "results/evaluate/tiny_llama.yaml" in command, command
    report = subprocess.run(shlex.split(command), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.returncode == 0 and (work / "results/report.html").stat().st_size > 0, report.stderr[-3000:]


def check_model_rows(work: Path) -> None:
    """evaluation.models went through the real rules: staged with a manifest, derived for the evaluation context,
    generated, scored and summarised; rows in Tables 1 and 3 (the paper row beside the one that names it); each
    tested against the start checkpoint with the paired one-tailed test in significance.json and SUMMARY.md."""
    for m in TINY_MODELS:
        staged = work / "resources/models/eval" / m["name"]
        manifest = json.loads((staged / "brorl_manifest.json").read_text())
        assert manifest["source"]["kind"] == "local" and manifest["source"]["path"] == m["path"], manifest["source"]
        summary = json.loads((work / f"results/eval/{m['name']}/step0/synthetic_math.summary.json").read_text())
        assert summary["n_items"] == 3 and summary["n_samples"] == 16
    table1 = pd.read_csv(work / "results/tables/table1.csv", keep_default_na=False)  # "n/a" stays a marker
    rows = table1.set_index("arm")
    assert {"base", "bare", "warm"} <= set(rows.index), table1["arm"].tolist()
    assert rows.loc["warm", "paper row"].startswith("BroRL N=512") and rows.loc["bare", "paper row"] == "no paper row"
    assert float(rows.loc["warm", "Math, paper"]) == 63.03 and rows.loc["warm", "continued steps"] == "+191 (model)"
    assert rows.loc["warm", "time (h)"] == "n/a"  # not trained here
    table3 = pd.read_csv(work / "results/tables/table3.csv")
    assert set(table3.loc[table3["benchmark"] == "synthetic_math", "arm"]) >= {"base", "bare", "warm"}
    sig = json.loads((work / "results/stats/significance.json").read_text())
    models = {r["arm"]: r for r in sig["models"]}
    assert set(models) == {"bare", "warm"}
    for r in models.values():
        assert r["status"] == "ok" and r["pooled"]["n"] >= 3, r  # paired over the same problems as the start
    summary = (work / "results/SUMMARY.md").read_text()
    assert "## Evaluated checkpoints against the start checkpoint" in summary
    assert "`bare` step 0 vs start" in summary and "`warm` step 0 vs start" in summary
