"""`python -m brorl.ops.plan`: the cost plan from the config and the SLURM profile (arithmetic, counts, errors)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from brorl.config import load_yaml_config
from brorl.evaluation.job_sizes import BenchmarkCost
from brorl.ops.plan.cli import sized_resources
from brorl.ops.plan.estimate import Estimates, Resources, plan_rows, totals, training_hours, wall_clock_hours
from brorl.ops.plan.job_counts import config_job_counts
from brorl.ops.plan.profile import ProfileError, job_resources, read_estimates, read_profile
from brorl.training.job_shape import train_job_resources
from brorl.training.recipe import arm_plan
from doc_quotes import QUOTES
from helpers import CONFIG, job_counts, snakemake

ROOT = Path(__file__).resolve().parents[2]
PROFILE_DIR = ROOT / "profiles" / "slurm"
EST = read_estimates(PROFILE_DIR / "estimates.yaml")


def test_the_training_estimate_reproduces_the_papers_two_arms_at_64_gpus():
    est = Estimates(EST.step_hours_fixed, EST.step_hours_per_sample, EST.reference_nodes, 0.0)
    assert training_hours(16 * 512, 535, 1, 8, est) == pytest.approx(133.8, rel=0.01)  # ProRL, paper Table 1
    assert training_hours(512 * 128, 191, 1, 8, est) == pytest.approx(173.8, rel=0.01)  # BroRL
    # a shorter response budget scales every step (here without start-up)
    short = dataclasses.replace(est, step_scale=2048 / 16384)
    assert training_hours(16 * 512, 535, 1, 8, short) == pytest.approx(133.8 / 8, rel=0.01)
    assert training_hours(512 * 128, 191, 1, 4, est) == pytest.approx(2 * 173.8, rel=0.01)  # half the nodes


def test_profile_resources_of_training_generation_and_scoring(monkeypatch):
    for key in ("GPU_NODE_CPUS", "GPUS_PER_NODE"):
        monkeypatch.delenv(f"BRORL_SLURM_{key}", raising=False)
    profile = read_profile(PROFILE_DIR)
    own = train_job_resources(load_yaml_config(CONFIG))  # the rule's own nodes and tasks: training.cluster.nodes
    assert job_resources(profile, "train_ppo", own=own) == Resources(nodes=8, gpus=64, cpus=8 * 96)
    # generation: the rule asks for its GPUs per benchmark (the profile names none); the plan's row is its largest job
    assert job_resources(profile, "generate_samples") == Resources(nodes=1, gpus=0, cpus=1)
    sizes = [BenchmarkCost("a", 30, 480, 8192.0, "", 4672.0, "", 0.1, gpus, 33) for gpus in (1, 4)]
    assert sized_resources(job_resources(profile, "generate_samples"), sizes, profile) == Resources(1, 4, 48)
    assert job_resources(profile, "score_samples") == Resources(nodes=1, gpus=0, cpus=16)
    assert job_resources(profile, "no_such_rule") == Resources(nodes=1, gpus=0, cpus=1)
    assert job_resources(profile, "train_ppo", own={"nodes": 2, "tasks": 2}).gpus == 16  # gres is per node


def test_rows_add_up_and_prefer_the_larger_of_dag_and_config_counts():
    res = {"generate_samples": Resources(1, 8, 96), "train_ppo": Resources(8, 64, 768)}
    est = Estimates(0.1, 0.0, 8, 0.5, {"generate_samples": 2.0, "plot_simulation": 0.5})
    rows = plan_rows(
        {"plot_simulation": 1, "generate_samples": 2, "all": 1},
        {"generate_samples": 5},
        {"armA": (100, 10, 2)},
        res,
        est,
    )
    by_name = {r.name: r for r in rows}
    assert set(by_name) == {"plot_simulation", "generate_samples", "train_ppo[armA]"}
    gen = by_name["generate_samples"]
    assert (gen.jobs, gen.dag_jobs, gen.hours, gen.gpu_hours) == (5, 2, 10.0, 80.0)
    train = by_name["train_ppo[armA]"]
    assert train.hours == pytest.approx(10 * 0.1 + 2 * 0.5) and train.gpu_hours == pytest.approx(64 * 2.0)
    assert totals(rows)["gpu_hours"] == pytest.approx(80.0 + 128.0)
    assert totals(rows)["cpu_hours"] == pytest.approx(0.5)
    wall = wall_clock_hours(rows, gpu_nodes=8, gpus_per_node=8)
    assert wall["training"] == pytest.approx(2.0) and wall["other_gpu"] == pytest.approx(max(80 / 64, 2.0))


def test_two_arms_run_side_by_side_when_the_nodes_allow():
    est = Estimates(1.0, 0.0, 8, 0.0)
    rows = plan_rows({}, {}, {"a": (1, 10, 1), "b": (1, 4, 1), "c": (1, 5, 1)}, {"train_ppo": Resources(8, 64, 8)}, est)
    assert wall_clock_hours(rows, 8, 8)["training"] == pytest.approx(19.0)  # one at a time
    assert wall_clock_hours(rows, 16, 8)["training"] == pytest.approx(10.0)  # lanes: 10 | 4 + 5


def test_config_counts_follow_the_arms_and_the_evaluation_protocol():
    config = load_yaml_config(CONFIG)
    counts, arms = config_job_counts(config)
    plans = [arm_plan(config, a) for a in ("prorl_n16", "brorl_n512")]
    assert set(arms) == {"prorl_n16", "brorl_n512"}  # the enabled arms
    assert counts["train_ppo"] == sum(len(p.segments) for p in plans)
    assert arms["brorl_n512"] == (65536, 191, len(plans[1].segments))
    # start + every 25th step + report steps + final, per arm; x 21 benchmarks
    prorl = {s for s in range(25, 536, 25)} | {225, 535}
    brorl = {s for s in range(25, 192, 25)} | {107, 134, 191}
    assert counts["generate_samples"] == (1 + len(prorl) + len(brorl)) * len(config["evaluation"]["benchmarks"])
    assert counts["bench_throughput"] == 2 * 2  # 2 layouts (the per-GPU shares) x prefix caching on/off


# The shipped presets the docs quote, each priced once here (the site settings its docs give): the doc-number test and
# the plan command's own tests read these runs.
PRESETS = {
    "paper": ([], {}),
    "one_node": (["workflow/presets/one_node.yaml"], {}),
    "released": (["workflow/presets/released.yaml"], {}),
    "smoke": (["workflow/presets/gpu_smoke.yaml"], {}),
    "step16k": (["workflow/presets/step_16k.yaml"], {}),
    "decision": (["workflow/presets/decision.yaml"], {}),
}


@pytest.fixture(scope="module")
def preset_plans(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, dict]]:
    """preset -> (the finished `python -m brorl.ops.plan` of it, its --json record); the four run side by side."""
    out = tmp_path_factory.mktemp("plans")
    procs = {}
    for name, (files, site) in PRESETS.items():
        args = ["--json", str(out / f"{name}.json")] + (["--configfile", *files] if files else [])
        procs[name] = plan_process(*args, site=site)
    runs = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        assert done.returncode == 0, (name, stderr[-3000:])
        runs[name] = (done, json.loads((out / f"{name}.json").read_text()))
    return runs


@pytest.mark.workflow
def test_plan_command_prints_stages_totals_and_matches_the_dry_run(tmp_path, preset_plans):
    proc, record = preset_plans["paper"]
    text = proc.stdout
    for words in ("GPU-hours", "wall-clock on 8 GPU nodes", "train_ppo[brorl_n512]", "paper: about 56-174 h"):
        assert words in text, text
    assert "warning: 1 hub source(s) of this run are not pinned" in proc.stderr  # the pin gate's list, as -n
    assert "one saved step: HF export 3.56 GB, full state 24.9 GB (estimates.yaml" in text
    assert record["saved_step_gb"] == {"hf_export": 3.56, "full_state": 24.9}
    dry = job_counts(snakemake("-n", "--forceall", "--directory", tmp_path / "dry"))
    for row in record["rows"]:
        if not row["name"].startswith("train_ppo["):
            assert row["dag_jobs"] == dry.get(row["name"], 0), row
    assert record["totals"]["gpu_hours"] == pytest.approx(sum(r["gpu_hours"] for r in record["rows"]))
    # scoring: a code benchmark's job runs every test of a failing program (both code scores from one run)
    (scoring,) = [r for r in record["rows"] if r["name"] == "score_samples"]
    per_checkpoint = 4 * EST.hours_of("score_samples_code") + 17 * EST.hours_of("score_samples")
    assert EST.hours_of("score_samples_code") > EST.hours_of("score_samples")
    assert scoring["jobs"] == 33 * 21 and scoring["hours"] == pytest.approx(33 * per_checkpoint)
    train = [r for r in record["rows"] if r["name"].startswith("train_ppo[")]
    assert all(r["gpus"] == 64 for r in train) and 100 < sum(r["hours"] for r in train) < 400


def test_an_evaluation_only_plan_prints_no_training_lines_and_says_what_it_is_doing(preset_plans):
    proc, record = preset_plans["released"]
    assert "building the DAG to count its jobs" in proc.stderr  # said before the inner dry run starts
    for words in ("training per arm", "walltime of a training job", "disk for training", "export_checkpoint"):
        assert words not in proc.stdout, words
    assert "(no training: evaluation and throughput only)" in proc.stdout
    assert not any(r["stage"] == "training" for r in record["rows"]) and record["training_disk_gb"] == {}
    paper, _ = preset_plans["paper"]
    assert "training per arm on 8 nodes" in paper.stdout and "disk for training per arm" in paper.stdout


def test_the_one_step_16k_preset_is_one_paper_shaped_brorl_job_and_nothing_evaluated(preset_plans):
    """workflow/presets/step_16k.yaml: the paper's brorl_n512 (its name: `--measured` prices the paper's arm from it)
    for one step on the paper's 8 nodes, no generation job."""
    _, record = preset_plans["step16k"]
    rows = {r["name"]: r for r in record["rows"]}
    assert [n for n in rows if n.startswith("train_ppo[")] == ["train_ppo[brorl_n512]"]
    assert rows["train_ppo[brorl_n512]"]["jobs"] == 1 and rows["train_ppo[brorl_n512]"]["gpus"] == 64
    assert "generate_samples" not in rows and "throughput" not in " ".join(rows)


def plan_values(record: dict, stdout: str = "") -> SimpleNamespace:
    """The numbers of one plan record that the docs quote (the placeholders of tests/plan/doc_quotes.py); `power`
    and `can`: the printed verdict's power at seed sd 0.3 and whether the run "can" or "cannot" settle the claim."""
    verdict = re.search(r"power (\S+) at seed sd 0.3 .*?: this run (can|cannot) support or falsify", stdout)
    rows = {r["name"]: r for r in record["rows"]}
    model = record["evaluation_model"]
    wall = record["wall_clock_hours"]
    return SimpleNamespace(
        jobs=int(record["totals"]["jobs"]),
        sbatch=record["sbatch_calls"]["calls"],
        on_driver=record["sbatch_calls"]["on_driver"],
        in_groups=record["sbatch_calls"]["in_groups"],
        gpu_hours=record["totals"]["gpu_hours"],
        wall_h=wall["total"],
        days=wall["total"] / 24,
        training_h=wall["training"],
        export_gb=record["saved_step_gb"]["hf_export"],
        state_gb=record["saved_step_gb"]["full_state"],
        disk={arm: d["peak_gb"] for arm, d in record["training_disk_gb"].items()},
        train_jobs={name[10:-1]: r["jobs"] for name, r in rows.items() if name.startswith("train_ppo[")},
        eval_jobs=int(model["jobs"]),
        eval_old=model["old_gpu_hours"],
        eval_generation=sum(
            b["gpu_hours_per_checkpoint"] * (b["checkpoints"] + b["start_extra_draws"]) for b in model["benchmarks"]
        ),
        eval_node_per_job=model["model_gpu_hours_profile_size"],
        eval_sized=model["model_gpu_hours_sized"],
        checkpoints=max(b["checkpoints"] for b in model["benchmarks"]),
        problems=sum(b["problems"] for b in model["benchmarks"]),
        samples_m=sum(b["samples"] * (b["checkpoints"] + b["start_extra_draws"]) for b in model["benchmarks"]) / 1e6,
        tokens_b=model["tokens"] / 1e9,
        power=verdict[1] if verdict else "none",
        can=verdict[2] if verdict else "none",
        settles={"can": "yes", "cannot": "no"}.get(verdict[2] if verdict else "", "none"),
    )


def probe_values(paper_gpu_hours: float, override: Path) -> SimpleNamespace:
    """The probe's price over the paper config (probe.enabled), as `make plan` computes it."""
    from brorl.ops.plan.pricing import probe_price

    override.write_text("probe: {enabled: true}\n")
    config = load_yaml_config(CONFIG, override)
    checkpoints = 1 + sum(len(arm_plan(config, a).regular_saves) for a in ("prorl_n16", "brorl_n512"))
    (row,), price = probe_price(config["probe"], checkpoints, EST, 8)
    return SimpleNamespace(
        per_checkpoint=row.job_gpu_hours,
        gpus=row.gpus,
        checkpoints=checkpoints,
        gpu_hours=price.gpu_hours,
        share=100 * price.gpu_hours / (paper_gpu_hours + price.gpu_hours),
    )


def segment_values(paper_config: dict, one_node_config: dict) -> SimpleNamespace:
    """Each arm's longest training job, priced by the plan's step model (brorl.ops.plan.walltime's check), with its
    steps and the arm's jobs; `one_node` is the one-node preset's ProRL arm on its one node."""
    prompts_config = load_yaml_config(CONFIG, ROOT / "workflow/presets/n_sweep_prompts.yaml")
    from brorl.ops.plan.estimate import training_hours

    steps, hours, jobs = {}, {}, {}
    for key, config, arm, nodes in (
        ("prorl_n16", paper_config, "prorl_n16", 8),
        ("brorl_n512", paper_config, "brorl_n512", 8),
        ("sweep_n1024", prompts_config, "sweep_n1024", 8),  # an arm of workflow/presets/n_sweep_prompts.yaml
        ("one_node", one_node_config, "prorl_n16", 1),
    ):
        plan = arm_plan(config, arm)
        steps[key] = max(len(s.steps) for s in plan.segments)
        hours[key] = training_hours(plan.samples_per_step, steps[key], 1, nodes, EST)
        jobs[key] = len(plan.segments)
    return SimpleNamespace(steps=steps, hours=hours, jobs=jobs)


def folded(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.workflow
def test_every_plan_number_the_docs_quote_is_the_plans_output(tmp_path, preset_plans):
    values = {name: plan_values(record, proc.stdout) for name, (proc, record) in preset_plans.items()}
    values["probe"] = probe_values(values["paper"].gpu_hours, tmp_path / "probe.yaml")
    values["seg"] = segment_values(
        load_yaml_config(CONFIG), load_yaml_config(CONFIG, ROOT / "workflow/presets/one_node.yaml")
    )
    pages = {page: folded((ROOT / page).read_text()) for page in {page for page, _ in QUOTES}}
    wrong = []
    for page, quote in QUOTES:
        expected = folded(quote.format(**values))
        if expected not in pages[page]:
            wrong.append(f"{page}: the plan says {expected!r}")
    assert not wrong, "quoted plan numbers differ from the plan (or the sentence changed):\n" + "\n".join(wrong)


def test_the_n_sweep_preset_is_priced_arm_by_arm():
    counts, arms = config_job_counts(load_yaml_config(CONFIG, ROOT / "workflow/presets/n_sweep.yaml"))
    sweep = {"control_n16_p4096", "sweep_eq_n64", "sweep_eq_n256", "sweep_eq_n1024", "control_n16_p128"}
    assert sweep | {"prorl_n16", "brorl_n512"} == set(arms)
    assert all(arms[name][0] == 65536 for name in sweep - {"control_n16_p128"})  # samples per step
    assert counts["train_ppo"] > config_job_counts(load_yaml_config(CONFIG))[0]["train_ppo"]


def test_the_algorithms_preset_is_priced_arm_by_arm():
    config = load_yaml_config(CONFIG, ROOT / "workflow/presets/algorithms.yaml")
    counts, arms = config_job_counts(config)
    pairs = {"grpo_n16", "grpo_n512", "rloo_n16", "rloo_n512", "drgrpo_n16", "drgrpo_n512"}
    assert pairs | {"prorl_n16", "brorl_n512"} == set(arms)
    assert all(
        arms[f"{a}_n512"] == arms["brorl_n512"] and arms[f"{a}_n16"] == arms["prorl_n16"]
        for a in ("grpo", "rloo", "drgrpo")
    )
    assert counts["train_ppo"] == 4 * config_job_counts(load_yaml_config(CONFIG))[0]["train_ppo"]
    assert {arm_plan(config, name).advantage_estimator for name in pairs} == {"group_norm", "rloo", "dr_grpo"}


def plan_process(*args: str, site: dict | None = None) -> subprocess.Popen:
    """`python -m brorl.ops.plan ARGS` started with only these site settings (BRORL_SLURM_*) in the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | (site or {})
    cmd = [sys.executable, "-m", "brorl.ops.plan", *args]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def plan(*args: str, site: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m brorl.ops.plan ARGS`, finished."""
    proc = plan_process(*args, site=site)
    stdout, stderr = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_the_one_node_preset_is_priced_on_one_node_and_a_node_mismatch_is_refused(tmp_path, preset_plans):
    preset = ["--configfile", "workflow/presets/one_node.yaml"]
    # a site profile that still sets train_ppo's nodes (as this one once did, from an environment variable)
    site_profile = tmp_path / "profile"
    shutil.copytree(PROFILE_DIR, site_profile)
    text = (site_profile / "config.yaml").read_text()
    (site_profile / "config.yaml").write_text(text.replace("  train_ppo:\n", "  train_ppo:\n    nodes: 8\n", 1))
    wrong = plan(*preset, "--profile", str(site_profile))
    assert (
        wrong.returncode != 0 and "sets train_ppo's nodes to 8, but training.cluster.nodes makes it 1" in wrong.stderr
    )
    assert not wrong.stdout  # refused before the DAG is built
    proc, _ = preset_plans["one_node"]
    assert "training per arm on 1 nodes: brorl_n512" in proc.stdout and "wall-clock on 1 GPU nodes" in proc.stdout
    assert "walltime of a training job's first attempt: 28 h" in proc.stdout and "warning: train_ppo" not in proc.stdout
    # the preset's own 10-step jobs fit; 25-step jobs (20 between its resets) do not, and the plan says what would
    longer = tmp_path / "segments25.yaml"
    longer.write_text("training:\n  segment_max_steps: 25\n")
    proc = plan(*preset, str(longer))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        "warning: train_ppo[brorl_n512]: jobs of up to 20 steps take ~32.7 h, over 85% of the 28 h time limit of a "
        "first attempt: set the arm's segment_max_steps (or training.segment_max_steps) to 10" in proc.stdout
    )


def test_table2_jobs_are_sized_by_their_work_and_one_that_cannot_finish_is_refused(tmp_path):
    from brorl.ops.plan.throughput import RULE_RUNTIME_MIN, bench_jobs, last_attempt_minutes, overlong, runtime_limit

    settings = {"warmup": 1, "repeats": 3, "max_tokens": 16384, "prefix_caching": [True, False]}
    settings["layouts"] = [{"prompts": 2, "n": 512}, {"prompts": 128, "n": 512}]
    jobs = bench_jobs(settings, EST.evaluation)
    assert [j.name for j in jobs] == ["p2_n512_pcon", "p128_n512_pcon", "p2_n512_pcoff", "p128_n512_pcoff"]
    assert jobs[0].tokens == 2 * 512 * 16384 * 4
    assert jobs[1].tokens == 64 * jobs[0].tokens
    assert jobs[0].hours == pytest.approx(jobs[0].tokens / (36.5 / 64 * 8192) / 3600 + 0.1)
    limit, where = last_attempt_minutes(read_profile(PROFILE_DIR))
    assert limit == 3 * 360  # the slurm profile: retries 2, 360 min per attempt
    # a profile without a runtime for the rule: the rule's own, which Snakemake applies then (not default-resources')
    assert runtime_limit(None, 3)[0] == RULE_RUNTIME_MIN == 720
    assert last_attempt_minutes({"default-resources": {"runtime": "60 * attempt"}})[0] == 720
    late = overlong(jobs, limit, where)
    assert [m.split(":")[0] for m in late] == ["bench_throughput p128_n512_pcon", "bench_throughput p128_n512_pcoff"]
    assert "over the 18.0 h runtime of its last attempt (3) in the profile" in late[0]
    one_engine = bench_jobs({**settings, "one_engine_per_setting": True}, EST.evaluation)
    assert len(one_engine) == 2
    assert one_engine[0].tokens == jobs[0].tokens + jobs[1].tokens
    # the plan refuses before building the DAG; the shipped config's jobs are priced by their work
    whole_step = tmp_path / "whole_step.yaml"
    whole_step.write_text("throughput:\n  layouts: [{prompts: 8, n: 16}, {prompts: 128, n: 512}]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "brorl.ops.plan", "--configfile", str(whole_step)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Table 2's jobs cannot finish" in proc.stderr
    assert "bench_throughput p128_n512_pcon" in proc.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--profile", "/nonexistent"], "no profile at /nonexistent/config.yaml"),
        (["--estimates", "/nonexistent.yaml"], "no estimates file"),
        (["--gpu-nodes", "0"], "--gpu-nodes must be >= 1"),
    ],
)
def test_bad_input_gets_a_clear_error(args, words):
    proc = subprocess.run([sys.executable, "-m", "brorl.ops.plan", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_estimates_with_a_missing_key_are_rejected(tmp_path):
    bad = tmp_path / "estimates.yaml"
    bad.write_text("training: {step_hours_fixed: 0.1}\n")
    with pytest.raises(ProfileError, match="step_hours_per_sample"):
        read_estimates(bad)


def test_checkpoint_sizes_come_from_the_downloaded_safetensors(tmp_path):
    from brorl.ops.plan.profile import checkpoint_sizes

    assert checkpoint_sizes(tmp_path / "absent") is None
    (tmp_path / "m").mkdir()
    assert checkpoint_sizes(tmp_path / "m") is None  # no weights yet: the estimates stay
    (tmp_path / "m" / "model.safetensors").write_bytes(b"\0" * 2_000_000)  # 1e6 bf16 parameters
    (tmp_path / "m" / "tokenizer.json").write_bytes(b"\0" * 10_000)
    export, state = checkpoint_sizes(tmp_path / "m")
    assert export == pytest.approx(0.00201) and state == pytest.approx(0.014)  # 14 bytes per parameter


def test_walltime_overruns_and_slurm_time_limits():
    from brorl.ops.plan.estimate import Estimates
    from brorl.ops.plan.walltime import overruns, parse_slurm_time

    est = Estimates(0.1557, 1.1511e-5, 8, 0.25, {})
    # 25 BroRL steps: 23.0 h, under 85% of 28 h; nothing to say for either arm
    assert overruns({"brorl": (65_536, 25), "prorl": (8_192, 25)}, 8, est, 28.0, grid=5) == []
    found = overruns({"brorl": (65_536, 25)}, 8, est, 24.0, grid=5)  # a 24 h partition
    assert [(o.arm, o.steps, o.fits) for o in found] == [("brorl", 25, 20)]
    assert round(found[0].hours, 2) == 23.0 and "set the arm's segment_max_steps" in found[0].message()
    assert overruns({"huge": (10**7, 3)}, 8, est, 1.0)[0].fits == 1  # never below one step
    # a measured BroRL step (the one-step 16K preset) replaces the step model: at 1.5 h, 25 steps overrun 28 h
    slow = overruns({"brorl": (65_536, 25)}, 8, est, 28.0, grid=5, measured_step_hours={"brorl": 1.5})
    assert [(o.steps, o.fits, round(o.hours, 2)) for o in slow] == [(25, 15, 37.75)]
    # sinfo's %l
    assert parse_slurm_time("1-00:00:00") == 24 and parse_slurm_time("2-12:30:00") == 60.5
    assert parse_slurm_time("08:00:00") == 8 and parse_slurm_time("30:00") == 0.5 and parse_slurm_time("90") == 1.5
    assert parse_slurm_time("infinite") is None and parse_slurm_time("UNLIMITED") is None


def test_the_probe_switch_is_priced_per_probed_checkpoint(tmp_path):
    from brorl.ops.plan.pricing import in_batch_line, in_batch_price, probe_line, probe_price

    override = tmp_path / "probe.yaml"
    override.write_text("probe: {enabled: true}\n")
    config = load_yaml_config(CONFIG, override)
    counts, _ = config_job_counts(config)
    saved = sum(len(arm_plan(config, a).regular_saves) for a in ("prorl_n16", "brorl_n512"))
    assert counts["generate_probe"] == counts["score_probe"] == 1 + saved  # the start and every saved step
    # the in-batch probe (steps 1, 96 and 191 of both arms): two sides each, their own prompts and one analysis
    assert (counts["in_batch_prompts"], counts["generate_in_batch"], counts["score_in_batch"]) == (6, 12, 12)
    assert counts["analyse_in_batch"] == 1
    assert "generate_probe" not in config_job_counts(load_yaml_config(CONFIG))[0]  # off by default
    (row,), price = probe_price(config["probe"], 1 + saved, EST, 8)
    assert row.samples == 128 * 64 and row.gpus in (1, 2, 4, 8)
    # GPU-h of one checkpoint = samples x mean tokens / tokens per second per GPU + start-up on each of its GPUs
    prior = EST.evaluation
    per_checkpoint = 128 * 64 * prior.mean_response_tokens / prior.tokens_per_s_per_gpu / 3600
    assert row.job_gpu_hours == pytest.approx(per_checkpoint + prior.job_overhead_hours * row.gpus)
    assert price.gpu_hours == pytest.approx(row.job_gpu_hours * (1 + saved))
    assert f"{1 + saved} checkpoints (the start and every saved step)" in probe_line(row, config["probe"])
    (side,), in_batch = in_batch_price(config["probe"], 12, EST, 8)
    assert side.samples == 128 * 64 and in_batch.gpu_hours == pytest.approx(side.job_gpu_hours * 12)
    assert "12 sides" in in_batch_line(side, config["probe"]) and "steps 1, 96, 191" in in_batch_line(
        side, config["probe"]
    )


@pytest.mark.workflow
def test_the_plans_dry_run_finds_a_checkpoint_folder_given_relative_to_where_it_runs(tmp_path):
    """A relative evaluation.models path (as `make plan` runs from the repository root) reaches the plan's dry run,
    which runs in an empty directory elsewhere: without absolute_folders it stops on the missing folder."""
    from brorl.ops.plan.job_counts import DagError, absolute_folders, dag_job_counts

    (tmp_path / "ckpts" / "mine").mkdir(parents=True)
    (tmp_path / "ckpts" / "mine" / "config.json").write_text('{"architectures": ["Qwen2ForCausalLM"]}')
    entry = {"name": "mine", "label": "mine", "path": "ckpts/mine", "step": 0}
    extra = tmp_path / "mine.yaml"
    extra.write_text(json.dumps({"evaluation": {"models": [entry]}}))
    tiny = Path(CONFIG).parent / "workflow/presets/tiny.yaml"
    config = load_yaml_config(CONFIG, tiny, extra)
    overlay = absolute_folders(config, tmp_path)
    assert overlay["evaluation"]["models"][0]["path"] == str(tmp_path / "ckpts/mine")
    assert absolute_folders(load_yaml_config(CONFIG, tiny), tmp_path) == {}  # nothing relative, nothing added
    assert dag_job_counts([tiny, extra], overlay=overlay)["download_eval_model"] == 1
    with pytest.raises(DagError, match="ckpts/mine"):
        dag_job_counts([tiny, extra])
