"""The evaluation cost model: tokens / (tokens/s per GPU) per benchmark, the proposed job sizes, the before/after."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from brorl.benchmarks.problems import benchmark_problems
from brorl.config import load_yaml_config
from brorl.evaluation.job_sizes import EvalPrior, Measured, evaluation_costs, job_gpus, size_gpus, summary
from brorl.ops.plan.estimate import Resources
from brorl.ops.plan.pricing import evaluation_model
from brorl.ops.plan.profile import ProfileError, read_estimates
from helpers import CONFIG

ROOT = Path(__file__).resolve().parents[2]
ESTIMATES = ROOT / "profiles" / "slurm" / "estimates.yaml"
PRIOR = EvalPrior(
    samples_per_s=36.5, reference_gpus=64, mean_response_tokens=8192, job_overhead_hours=0.1, target_job_hours=1.0
)


def test_the_prior_throughput_is_the_papers_table_2_at_n16():
    prior = read_estimates(ESTIMATES).evaluation
    paper = yaml.safe_load((ROOT / "workflow/brorl/analysis/paper_results.yaml").read_text())
    assert prior.samples_per_s == paper["table2"]["generation_samples_per_s"]["control"]  # N=16, like evaluation
    assert prior.reference_gpus == 64
    assert prior.tokens_per_s_per_gpu == pytest.approx(36.5 / 64 * 8192)


def test_job_size_is_the_fewest_gpus_that_fit_the_target():
    assert size_gpus(0.2, 1.0, 8) == 1
    assert size_gpus(1.5, 1.0, 8) == 2
    assert size_gpus(3.9, 1.0, 8) == 4
    assert size_gpus(26.5, 1.0, 8) == 8  # capped at a node
    assert size_gpus(26.5, 1.0, 4) == 4
    with pytest.raises(ValueError, match="target_job_hours"):
        size_gpus(1.0, 0.0, 8)


def test_the_arithmetic_of_one_benchmark_with_priors_and_with_measurements():
    (aime,) = evaluation_costs({"aime24": 30}, 16, 33, PRIOR, 8)
    assert aime.samples == 480 and aime.tokens == 480 * 8192
    assert aime.compute_gpu_hours == pytest.approx(480 * 8192 / (36.5 / 64 * 8192) / 3600)  # = 480 / 0.570 s
    assert aime.gpus == 1 and aime.job_hours == pytest.approx(aime.compute_gpu_hours + 0.1)
    assert aime.gpu_hours_on(8) == pytest.approx(aime.compute_gpu_hours + 0.8)  # a whole node waits for start-up
    assert aime.total_gpu_hours == pytest.approx(33 * aime.job_gpu_hours)
    # two draws of the start checkpoint: its job generates the samples twice (one more draw's compute, no start-up)
    (drawn,) = evaluation_costs({"aime24": 30}, 16, 33, PRIOR, 8, start_extra=1)
    assert drawn.total_gpu_hours == pytest.approx(33 * aime.job_gpu_hours + aime.compute_gpu_hours)
    assert drawn.start_job_hours == pytest.approx(aime.job_hours + aime.compute_gpu_hours / aime.gpus)
    (measured,) = evaluation_costs(
        {"aime24": 30}, 16, 1, PRIOR, 8, mean_tokens={"aime24": Measured(12000, 3)}, tokens_per_s=Measured(6000, 5)
    )
    assert measured.compute_gpu_hours == pytest.approx(480 * 12000 / 6000 / 3600)
    assert measured.overhead_hours == 0 and measured.mean_tokens_source == "measured (3 jobs)"
    assert measured.tokens_per_s_source == "measured (5 jobs)"


def test_job_sizes_come_from_the_priors_so_that_the_rule_and_the_plan_agree():
    """generate_samples asks Slurm for job_gpus' sizes; a measured run changes the hours, never the size."""
    sizes = job_gpus({"aime24": 30, "math500": 500, "rg_algorithmic": 3400}, 16, PRIOR, 8)
    assert sizes == {"aime24": 1, "math500": 4, "rg_algorithmic": 8}
    fast = evaluation_costs({"math500": 500}, 16, 1, PRIOR, 8, tokens_per_s=Measured(60000, 3))
    assert fast[0].gpus == 4 and fast[0].compute_gpu_hours < 1  # would size to 1 from the measurement
    assert job_gpus({"rg_algorithmic": 3400}, 16, PRIOR, 4) == {"rg_algorithmic": 4}  # capped at the node


def test_a_profile_size_forces_every_job_and_the_price_adds_up_each_jobs_gpus():
    est = read_estimates(ESTIMATES)
    problems = {"aime24": 30, "rg_algorithmic": 3400}
    rows, totals, price = evaluation_model(problems, 16, 2, est, Resources(1, 0, 1), 8, None)
    assert [r.gpus for r in rows] == [1, 8]
    assert price.gpu_hours == pytest.approx(sum(r.job_hours * r.gpus * 2 for r in rows))
    assert price.total_hours == pytest.approx(sum(r.job_hours * 2 for r in rows))
    forced, _, forced_price = evaluation_model(problems, 16, 2, est, Resources(1, 2, 24), 8, None)
    assert [r.gpus for r in forced] == [2, 2] and forced_price.gpu_hours != price.gpu_hours


def test_the_paper_plan_before_and_after():
    config = load_yaml_config(CONFIG)
    problems = benchmark_problems(config)
    assert sum(problems.values()) == 1590 + 1024 + 104 * 100  # math, code (1,024 split), 104 RG tasks x 100 items
    rows = evaluation_costs(problems, 16, 33, PRIOR, 8)
    totals = summary(rows, 8, 1.5)
    assert totals["jobs"] == 21 * 33 == 693 and totals["old_gpu_hours"] == pytest.approx(693 * 1.5 * 8)  # 8,316
    compute = 13014 * 16 * 33 / (36.5 / 64) / 3600  # samples / samples per GPU-second (the assumed length cancels)
    assert sum(r.compute_gpu_hours * 33 for r in rows) == pytest.approx(compute)
    assert totals["model_gpu_hours_profile_size"] == pytest.approx(compute + 693 * 8 * 0.1)
    sized = compute + 33 * 0.1 * sum(r.gpus for r in rows)
    assert totals["model_gpu_hours_sized"] == pytest.approx(sized) and sized < totals["model_gpu_hours_profile_size"]
    small = {r.benchmark: r.gpus for r in rows}
    assert small["aime24"] == small["aime25"] == 1 and small["rg_algorithmic"] == 8


def test_a_bad_evaluation_block_is_refused(tmp_path):
    text = ESTIMATES.read_text().replace("target_job_hours: 1.0", "target_job_hours: 0")
    bad = tmp_path / "estimates.yaml"
    bad.write_text(text)
    with pytest.raises(ProfileError, match="target_job_hours"):
        read_estimates(bad)
    bad.write_text(ESTIMATES.read_text().replace("  reference_gpus: 64", "  reference_gpu: 64"))
    with pytest.raises(ProfileError, match="reference_gpus"):
        read_estimates(bad)
