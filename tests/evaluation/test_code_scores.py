"""Code scored both ways in one sandboxed run per sample: all tests passing (the protocol's pass@1, today's verdict)
and the fraction of tests passed, through score_samples, the benchmark summary and Table 4, on a real item of the
repository's codeforces file (three stdin/stdout tests) with four fixed responses."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from brorl.analysis.checkpoints import benchmark_pass1
from brorl.analysis.load import load_units
from brorl.analysis.paper import checkpoint_rows, load_paper
from brorl.analysis.tables import benchmark_table
from brorl.benchmarks.records import write_records
from brorl.evaluation.score import score_samples, write_scores
from brorl.evaluation.summary import collect, display_collected, summarize
from brorl.scoring.code import normalize_tests, score_code
from helpers import ROOT

ITEM_INDEX = 20  # the first item of codeforces.json with three tests


def lookup_program(answers: dict[str, str]) -> str:
    """A fenced program that prints the stored output for the inputs it knows and a wrong one otherwise."""
    table = {k.strip(): v for k, v in answers.items()}
    return (
        f"```python\nimport sys\nanswers = {table!r}\nprint(answers.get(sys.stdin.read().strip(), 'surely wrong'))\n```"
    )


@pytest.fixture(scope="module")
def item() -> dict:
    rows = json.loads((ROOT / "data/benchmarks/deepscaler/codeforces.json").read_text())
    return {
        "id": f"codeforces/{ITEM_INDEX}",
        "benchmark": "codeforces",
        "family": "code",
        "prompt": rows[ITEM_INDEX]["problem"],
        "answer": None,
        "tests": {k: v for k, v in normalize_tests(rows[ITEM_INDEX]["tests"]).items() if v is not None},
        "scorer": "code",
        "metadata": {},
    }


def test_one_run_per_sample_gives_both_code_scores_through_the_summary_and_table_4(item, tmp_path):
    tests = normalize_tests(item["tests"])
    assert len(tests["inputs"]) == 3
    pairs = dict(zip(tests["inputs"], tests["outputs"]))
    responses = [
        lookup_program(pairs),  # passes all three tests
        lookup_program(dict(list(pairs.items())[:1])),  # passes the first only
        "```python\nprint('surely wrong')\n```",  # passes none
        "```python\nwhile True:\n    pass\n```",  # runs out of the time budget
    ]
    samples = pd.DataFrame(
        {
            "id": item["id"],
            "sample_idx": range(4),
            "response": responses,
            "n_tokens": 10,
            "finish_reason": "stop",
        }
    )
    scores = score_samples([item], samples, workers=2, progress=False)
    assert scores["score"].tolist() == [1.0, 0.0, 0.0, 0.0]  # all tests passing
    assert scores["tests_passed"].tolist() == pytest.approx([1.0, 1 / 3, 0.0, 0.0])
    assert scores["error"].tolist()[1:] == ["wrong_answer", "wrong_answer", "timeout"]
    # the all-tests-pass column is today's verdict (binary mode, stopping at the first failing test)
    assert [float(score_code(item, r).correct) for r in responses] == scores["score"].tolist()

    summary = summarize([item], samples, scores)
    assert summary["pass_at_1"] == pytest.approx(0.25)
    assert summary["tests_passed"]["pass_at_1"] == pytest.approx((1 + 1 / 3) / 4)
    shown = display_collected(collect([{**summary, "arm": "base", "step": 3000}]))
    assert shown.loc[0, "second score (%)"] == "tests passed 33.33 ± n/a"

    records = write_records(tmp_path / "codeforces.jsonl", [item]) and tmp_path / "codeforces.jsonl"
    path = tmp_path / "eval/base/step3000/codeforces.scores.parquet"
    write_scores(scores, path)
    bench = benchmark_pass1(load_units([path], [records], expected_samples=4))
    paper = load_paper()
    rows = checkpoint_rows(paper, [], {"control": "c", "treatment": "t"}, 3000, {("base", 3000)})
    table = benchmark_table(paper, "code", rows, bench)
    row = table[(table["benchmark"] == "codeforces") & (table["arm"] == "base")].iloc[0]
    given = paper["benchmark_tables"]["code"]["benchmarks"]["codeforces"]["base@0"]
    assert row["pass@1"] == pytest.approx(25.0) and row["tests passed"] == pytest.approx(100 * (1 + 1 / 3) / 4)
    assert row["diff"] == pytest.approx(25.0 - given)
    assert row["tests passed vs paper"].startswith(f"{100 * (1 + 1 / 3) / 4 - given:+.2f} ± ")
    # the two columns differ exactly by the sample that passed some tests: 1/3 of a sample of 4, in points
    assert row["tests passed"] - row["pass@1"] == pytest.approx(100 / 3 / 4)
    other = table[table["benchmark"] != "codeforces"]
    assert (other["tests passed"] == "not run").all()


def test_scoring_code_refuses_weaker_isolation_than_bubblewrap_unless_the_config_accepts_it(item, tmp_path):
    """score_samples stops before the first model-written program runs where bubblewrap cannot isolate it."""
    import os
    import subprocess
    import sys

    benchmark = tmp_path / "codeforces.jsonl"
    write_records(benchmark, [item])
    argv = [sys.executable, "-m", "brorl.evaluation", "score", "--benchmark", str(benchmark)]
    argv += ["--samples", str(tmp_path / "absent.samples.parquet"), "--out", str(tmp_path / "s.parquet")]
    env = {**os.environ, "BRORL_SANDBOX": "rlimits"}  # what a node without user namespaces gets
    refused = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 2 and "evaluation.allow_unsandboxed_code: true" in refused.stderr, refused.stderr
    assert "'rlimits'" in refused.stderr and "absent.samples.parquet" not in refused.stderr  # before reading samples
    allowed = subprocess.run([*argv, "--allow-unsandboxed"], capture_output=True, text=True, env=env, timeout=120)
    assert "allow_unsandboxed_code" not in allowed.stderr and "absent.samples.parquet" in allowed.stderr
