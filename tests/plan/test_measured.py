"""The plan from measurements: timings and metrics of a --measured run replace estimates only at the planned scale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from brorl.benchmarks.problems import benchmark_problems
from brorl.config import load_yaml_config
from brorl.ops.plan.estimate import Estimates, Resources, plan_rows
from brorl.ops.plan.measured import (
    MeasuredError,
    eval_scale_mismatch,
    measured_mean_tokens,
    measured_tokens_per_s,
    read_measured,
    read_timing,
    train_scale_mismatch,
)
from brorl.ops.plan.pricing import evaluation_model, measured_prices
from brorl.ops.plan.profile import read_estimates
from brorl.training.metrics import FIELDS
from helpers import CONFIG, TINY

ROOT = Path(__file__).resolve().parents[2]
EST = read_estimates(ROOT / "profiles" / "slurm" / "estimates.yaml")
PAPER = load_yaml_config(CONFIG)
PROBLEMS = benchmark_problems(PAPER)
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def timing(path: Path, *seconds: float) -> None:
    """A Snakemake benchmark file (the header of Snakemake 9.27, one row per repeat)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        HEADER + "".join(f"{s}\t0:00:00\t32.8\t40.7\t18.3\t20.8\t0.00\t0.03\t0.00\t0.32\n" for s in seconds)
    )


def sidecar(
    root: Path,
    arm: str,
    step: int,
    bench: str,
    engine: str,
    items: int,
    n: int,
    max_tokens: int,
    mean: float,
    gpus: int | None = None,
):
    """The fields of a generation sidecar (brorl.generation.generate) that the plan reads (``gpus``: the job's
    resources.gpus, absent in sidecars written before they were recorded)."""
    path = root / "results" / "eval" / arm / f"step{step}" / f"{bench}.samples.parquet.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "benchmark": {"path": f"resources/benchmarks/{bench}.jsonl", "items": items, "benchmarks": [bench]},
        "sampling": {"n": n, "temperature": 0.6, "top_p": 0.95, "max_tokens": max_tokens},
        "engine": {"kind": engine, "max_model_len": max_tokens + 1024, "seed": 0},
        "summary": {"rows": items * n, "length_finished": 0, "mean_n_tokens": mean},
    }
    if gpus is not None:
        meta["resources"] = {"gpus": gpus}
    path.write_text(json.dumps(meta))


def paper_run(root: Path) -> Path:
    """A run at the paper's scale: aime24 and math500 of the start checkpoint generated and scored, one
    prepare_benchmark job, 2 training steps of prorl_n16, and brorl_n512's one step as the one-step 16K preset
    (workflow/presets/step_16k.yaml) records it: OpenRLHF's command on 8 nodes at the 16K budget, 1.8 h."""
    sidecar(root, "base", 3000, "aime24", "cluster", 30, 32, 32768, 12000.0)
    sidecar(root, "base", 3000, "math500", "cluster", 500, 32, 32768, 4000.0)
    timing(root / "results/timings/generate_samples/base/step3000/aime24.tsv", 600.0)
    timing(root / "results/timings/generate_samples/base/step3000/math500.tsv", 1800.0)
    timing(root / "results/timings/score_samples/base/step3000/aime24.tsv", 100.0, 140.0)
    timing(root / "results/timings/prepare_benchmark/aime24.tsv", 36.0)
    arm = root / "results/train/prorl_n16"
    arm.mkdir(parents=True)
    (arm / "segment0.json").write_text(json.dumps({"engine": "cluster", "plan": {"samples_per_step": 8192}}))
    (arm / "metrics.jsonl").write_text(metrics_line(1, 900.0) + "\n" + metrics_line(2, 900.0) + "\n")
    brorl = root / "results/train/brorl_n512"
    brorl.mkdir(parents=True)
    command = ["--actor.num_nodes", "8", "--rollout.max_new_tokens", "16384"]
    segment = {"engine": "cluster", "plan": {"samples_per_step": 65536}, "openrlhf_command": command}
    (brorl / "segment0.json").write_text(json.dumps(segment))
    waves = [{"prompts": 128, "kept": 79, "s": 3240.0}, {"prompts": 80, "kept": 50, "s": 1620.0}]
    (brorl / "metrics.jsonl").write_text(metrics_line(1, 6480.0, refill="rounds", waves=waves, update_s=1296.0) + "\n")
    return root


def tiny_run(root: Path) -> Path:
    """The tiny CPU preset's files: embedded engine, 32 tokens, every synthetic_math problem (32)."""
    sidecar(root, "prorl_n4", 16, "synthetic_math", "embedded", 32, 16, 32, 10.0)
    sidecar(root, "base", 0, "aime24", "embedded", 4, 32, 32, 10.0)
    timing(root / "results/timings/generate_samples/base/step0/aime24.tsv", 8.0)
    timing(root / "results/timings/score_samples/base/step0/aime24.tsv", 2.0)
    timing(root / "results/timings/prepare_benchmark/synthetic_math.tsv", 0.55)
    arm = root / "results/train/prorl_n16"
    arm.mkdir(parents=True)
    (arm / "segment0.json").write_text(json.dumps({"engine": "embedded", "plan": {"samples_per_step": 32}}))
    (arm / "metrics.jsonl").write_text(metrics_line(1, 6.5) + "\n")
    return root


ARMS = {"prorl_n16": 8192, "brorl_n512": 65536}


def metrics_line(step: int, step_s: float, **fields) -> str:
    """One record of the metrics schema (brorl.training.metrics.FIELDS), the fields the plan does not read null."""
    record = {**dict.fromkeys(FIELDS), "step": step, "segment": 0, "wall_s": step * step_s, "step_s": step_s}
    return json.dumps(record | fields)


def test_a_benchmark_file_gives_the_mean_seconds_of_its_repeats(tmp_path):
    timing(tmp_path / "a.tsv", 1.0, 3.0)
    assert read_timing(tmp_path / "a.tsv") == 2.0
    (tmp_path / "b.tsv").write_text("x\ty\n1\t2\n")
    with pytest.raises(MeasuredError, match="column s"):
        read_timing(tmp_path / "b.tsv")


def test_scale_checks_name_what_differs():
    meta = {"engine": {"kind": "embedded"}, "sampling": {"n": 16, "max_tokens": 32}, "benchmark": {"items": 4}}
    assert eval_scale_mismatch(meta, PAPER, 30) == "engine embedded, planned cluster"
    meta["engine"]["kind"] = "cluster"
    assert eval_scale_mismatch(meta, PAPER, 30) == "max_tokens 32, planned 32768"
    meta["sampling"]["max_tokens"] = 32768
    assert eval_scale_mismatch(meta, PAPER, 30) == "4 problems, planned 30"  # evaluation.max_items was set
    meta["benchmark"]["items"] = 30
    assert eval_scale_mismatch(meta, PAPER, 30) is None
    assert train_scale_mismatch({"engine": "cluster", "plan": {"samples_per_step": 32}}, PAPER, 8192) == (
        "32 samples per step, planned 8192"
    )
    assert train_scale_mismatch({"engine": "cluster", "plan": {"samples_per_step": 8192}}, PAPER, 8192) is None
    # OpenRLHF's recorded command: the smoke run's 2,048-token steps, or one node's, are not the paper's step
    paper = ["--actor.num_nodes", "8", "--rollout.max_new_tokens", "16384"]
    segment = {"engine": "cluster", "plan": {"samples_per_step": 65536}, "openrlhf_command": paper}
    assert train_scale_mismatch(segment, PAPER, 65536) is None
    smoke = {**segment, "openrlhf_command": ["--actor.num_nodes", "8", "--rollout.max_new_tokens", "2048"]}
    assert train_scale_mismatch(smoke, PAPER, 65536) == "a 2048-token response budget, planned 16384"
    one_node = {**segment, "openrlhf_command": ["--actor.num_nodes", "1", "--rollout.max_new_tokens", "16384"]}
    assert train_scale_mismatch(one_node, PAPER, 65536) == "1 node(s), planned 8"


def test_the_tiny_presets_measurements_are_all_set_aside_for_the_paper_plan(tmp_path):
    run = read_measured(tiny_run(tmp_path), PAPER, PROBLEMS, ARMS)
    assert run.rule_seconds == {} and run.eval_jobs == [] and run.train_step_s == {}
    assert run.set_aside["generate_samples"] == ["engine embedded, planned cluster"] * 2  # timed or not
    assert run.set_aside["score_samples"] == ["engine embedded, planned cluster"]
    assert run.set_aside["prepare_benchmark"] == ["the run is not at the planned scale"]
    assert run.set_aside["train_ppo[prorl_n16]"] == ["engine embedded, planned cluster"]
    assert measured_prices(run) == {}


def test_the_tiny_presets_measurements_price_the_tiny_plan(tmp_path):
    tiny = load_yaml_config(CONFIG, TINY)
    tiny_problems = {**benchmark_problems(tiny), "aime24": 4}
    run = read_measured(tiny_run(tmp_path), tiny, tiny_problems, {"prorl_n16": 32})
    assert run.rule_seconds == {"score_samples": [2.0], "prepare_benchmark": [0.55]}
    assert run.train_step_s == {"prorl_n16": [6.5]}


def test_a_paper_scale_run_replaces_estimates_and_feeds_the_evaluation_model(tmp_path):
    run = read_measured(paper_run(tmp_path), PAPER, PROBLEMS, ARMS)
    assert run.set_aside == {}
    assert run.rule_seconds == {"score_samples": [120.0], "prepare_benchmark": [36.0]}
    priced = measured_prices(run)
    assert priced["score_samples"].hours_per_job == pytest.approx(120 / 3600)
    assert priced["score_samples"].source == "measured (1 jobs)"
    assert priced["train_ppo[prorl_n16]"].hours_per_job == pytest.approx(0.25)
    assert priced["train_ppo[prorl_n16]"].source == "measured (2 steps)"
    # tokens/s per GPU over the timed jobs, on the profile's 8 GPUs: the start's jobs generate its two draws of 16
    # samples (evaluation.start_draws), (960 x 12,000 + 16,000 x 4,000) / (2,400 s x 8)
    tps, jobs = measured_tokens_per_s(run.eval_jobs, 8)
    assert jobs == 2 and tps == pytest.approx((960 * 12000 + 16000 * 4000) / (2400 * 8))
    assert measured_mean_tokens(run.eval_jobs) == {"aime24": (12000.0, 1), "math500": (4000.0, 1)}

    gen = Resources(1, 8, 96)
    rows, totals, price = evaluation_model(PROBLEMS, 16, 33, EST, gen, 8, run)
    by = {r.benchmark: r for r in rows}
    assert by["aime24"].mean_tokens == 12000 and by["aime24"].mean_tokens_source == "measured (1 jobs)"
    assert by["amc"].mean_tokens == EST.evaluation.mean_response_tokens  # the prior where nothing is measured
    assert by["amc"].mean_tokens_source == "prior (assumption)"
    assert all(r.overhead_hours == 0 for r in rows)  # the measured job times include the start-up
    assert price.source == "model (measured tokens/s, 2/21 measured lengths)"
    assert price.total_hours * 8 == pytest.approx(totals["model_gpu_hours_profile_size"])

    est = Estimates(0.1, 0.0, 8, 0.5, {"score_samples": 0.5})
    plan = plan_rows({}, {"score_samples": 10}, {"prorl_n16": (8192, 100, 4)}, {}, est, priced)
    by_name = {r.name: r for r in plan}
    assert by_name["score_samples"].hours == pytest.approx(10 * 120 / 3600)
    assert by_name["train_ppo[prorl_n16]"].hours == pytest.approx(100 * 0.25 + 4 * 0.5)
    assert by_name["train_ppo[prorl_n16]"].source == "measured (2 steps)"


def test_a_directory_without_results_is_refused(tmp_path):
    with pytest.raises(MeasuredError, match="no results/ folder"):
        read_measured(tmp_path, PAPER, PROBLEMS, ARMS)


@pytest.mark.workflow
def test_plan_command_with_a_measured_run_says_which_hours_are_measured(tmp_path):
    out = tmp_path / "plan.json"
    proc = subprocess.run(
        [sys.executable, "-m", "brorl.ops.plan", "--measured", str(paper_run(tmp_path / "run")), "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["name"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["score_samples"]["source"] == "measured (1 jobs)"
    assert rows["prepare_benchmark"]["source"] == "measured (1 jobs)"
    assert rows["train_ppo[prorl_n16]"]["source"] == "measured (2 steps)"
    # BroRL's one measured step (1.8 h) prices its arm and sizes its segments: 15 steps no longer fit 85% of 28 h
    assert rows["train_ppo[brorl_n512]"]["source"] == (
        "measured (1 steps; 2.0 waves a step (max 2, rounds); waves 75%, update 20% of the step time)"
    )
    late = {o["arm"]: o for o in json.loads(out.read_text())["walltime"]["overruns"]}
    assert late["brorl_n512"]["steps"] == 15 and late["brorl_n512"]["fits"] == 10, late
    assert "train_ppo[brorl_n512]: jobs of up to 15 steps take ~27.2 h" in proc.stdout
    assert rows["generate_samples"]["source"].startswith("model (measured tokens/s")
    assert f"measured: {tmp_path / 'run'}" in proc.stdout and "set aside: nothing" in proc.stdout


def test_measured_tokens_per_s_counts_the_gpus_each_job_had(tmp_path):
    """A job sized to its benchmark (e.g. 1 GPU for AIME, 8 for MATH500) records its GPUs in its sidecar; tokens/s
    per GPU divides each job's time by those, the profile's size only where a sidecar lacks them."""
    sidecar(tmp_path, "prorl_n16", 25, "aime24", "cluster", 30, 16, 32768, 12000.0, gpus=1)
    sidecar(tmp_path, "prorl_n16", 25, "math500", "cluster", 500, 16, 32768, 4000.0, gpus=4)
    timing(tmp_path / "results/timings/generate_samples/prorl_n16/step25/aime24.tsv", 600.0)
    timing(tmp_path / "results/timings/generate_samples/prorl_n16/step25/math500.tsv", 1800.0)
    run = read_measured(tmp_path, PAPER, PROBLEMS, {})
    assert sorted(j.gpus for j in run.eval_jobs) == [1, 4]
    tps, jobs = measured_tokens_per_s(run.eval_jobs, 8)
    assert jobs == 2 and tps == pytest.approx((480 * 12000 + 8000 * 4000) / (600 * 1 + 1800 * 4))
