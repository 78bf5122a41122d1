"""The SLURM profile: a dry run of the paper config without a cluster, and the tiny preset through a REAL local
Slurm (workflow/scripts/local_slurm.sh: slurmctld + slurmdbd/MariaDB + 8 emulated 8-GPU nodes and a CPU node on
this host), driven by the slurm executor plugin from the driver environment .venv-slurm (docs/cluster.md#prerequisites).

The Slurm tests skip, saying why, when there is no driver environment or no running Slurm (`make test` as root on
Debian installs and starts both; `make slurm-up` does it by hand).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from brorl.ops.plan.profile import read_profile
from brorl.ops.run.submission import submissions
from helpers import BIN as ENGINE_BIN  # rules run `python -m brorl...` from the engine environment
from helpers import (
    CI_SITE,
    DRIVER,
    DRIVER_SNAKEMAKE,
    PAPER_ON_CI,
    ROOT,
    SHORT_WARM_START,
    TINY,
    copy_slurm_workflow,
    job_counts,
    output_of,
    sacct,
    slurm_up,
)

RAY_LAUNCHER = ROOT / "workflow" / "scripts" / "ray_on_slurm.sh"
# The end-to-end subset: the full tiny preset (~60 jobs, training included) takes > 15 min through sbatch on 2
# cores; data + the start checkpoint's evaluation of one benchmark exercises CPU jobs, a GPU job and local rules in
# ~3 min. (The 2-node train_ppo jobs of the tiny preset also completed through this profile:
# docs/testing.md#the-slurm-tests.)
E2E_TARGET = "results/eval/base/step0/synthetic_math.summary.json"
E2E_OVERRIDE = {
    **SHORT_WARM_START,
    "simulation": {"enabled": False},
    "throughput": {"enabled": False},
    "evaluation": {
        "benchmarks": ["synthetic_math"],
        "max_items": 2,
        "n_samples": 4,
        "max_tokens": 8,
        "shard_size": 1,
        "one_engine_per_checkpoint": False,  # the paper's generation job (one per checkpoint x benchmark)
    },
}

needs_driver = pytest.mark.skipif(not DRIVER.exists(), reason=f"no driver environment {DRIVER} (make slurm-env)")


def driver(*args, cwd: Path, timeout: int = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """The driver's snakemake, engine environment first on PATH, killed hard on timeout (a failed status query
    can hang the plugin; SIGTERM alone may not end it)."""
    full = {**os.environ, **CI_SITE, **(env or {}), "PATH": os.pathsep.join([str(ENGINE_BIN), os.environ["PATH"]])}
    return subprocess.run(
        ["timeout", "-k", "15", str(timeout), *DRIVER_SNAKEMAKE, *map(str, args)],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
    )


# ----------------------------------------------------------------------------------------- without a cluster
@pytest.mark.slurm
@pytest.mark.skipif(slurm_up() is not None, reason=str(slurm_up()))
def test_the_rehearsal_uses_only_the_slurm_this_project_started(tmp_path):
    """`make rehearsal` submits only to a Slurm that local_slurm.sh started (its configuration, read from the
    running controller): a site's Slurm, which answers `scontrol ping` as well, is never given its jobs."""
    script = ROOT / "workflow" / "scripts" / "local_slurm.sh"
    assert subprocess.run(["bash", str(script), "owned"], timeout=60).returncode == 0
    site = tmp_path / "etc"
    site.mkdir()
    (site / "slurm.conf").write_text("ClusterName=site\nSlurmctldHost=login1\n")  # a site's configuration
    owned = subprocess.run(["bash", str(script), "owned"], env={**os.environ, "LOCAL_SLURM_ETC": str(site)}, timeout=60)
    assert owned.returncode == 1
    assert "local_slurm.sh owned" in (ROOT / "workflow" / "scripts" / "rehearse.sh").read_text()
    assert "scontrol ping" not in (ROOT / "workflow" / "scripts" / "rehearse.sh").read_text()


def test_the_slurm_link_at_the_root_is_the_profile():
    assert (ROOT / "slurm").is_symlink() and (ROOT / "slurm").resolve() == (ROOT / "profiles" / "slurm").resolve()


def paper_dry_run(tmp_path: Path, targets: list[str], site: dict | None = None, args: tuple = ()) -> tuple[dict, dict]:
    """`--profile slurm -n` with production settings (plus ``site``) and no Slurm command on PATH (nothing contacts
    a cluster), a start checkpoint in place (download_base_model needs the hub): job counts, first resources per
    rule, and per benchmark as `<rule>[<benchmark>]` for the rules with a {benchmark} wildcard."""
    (tmp_path / "resources/models/Nemotron-Research-Reasoning-Qwen-1.5B").mkdir(parents=True)
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("which", "bash", "sh", "env", "git", "uname"):
        if shutil.which(tool):
            (tools / tool).symlink_to(shutil.which(tool))
    assert not any((tools / t).exists() for t in ("sbatch", "sacct", "squeue", "sinfo"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | (site or {})
    env["PATH"] = os.pathsep.join([str(DRIVER.parent), str(tools)])
    proc = subprocess.run(
        [str(DRIVER), "-m", "snakemake", "--profile", "slurm", "-n", "--directory", str(tmp_path), *targets, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    text = output_of(proc)
    assert proc.returncode == 0, text[-4000:]
    counts = job_counts(proc)
    # a group job's members are printed indented under "Group job <name>", their fields twice as deep
    jobs = [
        (m[2], m[3]) for m in re.finditer(r"^( {0,4})(?:local)?rule (\w+):\n(.*?)(?=^\1\S|^\S|\Z)", text, re.M | re.S)
    ]
    assert len(jobs) == sum(counts.values()), (len(jobs), counts)
    resources = {}
    for rule, body in jobs:
        match = re.search(r"resources: (.*)", body)
        assert match, f"job of {rule} without resources:\n{body}"
        resources.setdefault(rule, dict(kv.split("=", 1) for kv in match[1].split(", ")))
        benchmark = re.search(r"wildcards: .*\bbenchmark=(\w+)", body)
        if benchmark:
            resources.setdefault(f"{rule}[{benchmark[1]}]", dict(kv.split("=", 1) for kv in match[1].split(", ")))
    resources["__text__"] = text  # the dry run's output (shell commands included), for the tests that read them
    return counts, resources


# GPUs per generation job (brorl.evaluation.job_sizes.job_gpus from estimates.yaml's priors: 16 samples x 8,192 tokens
# at 4,672 tokens/s per GPU, the fewest of 1/2/4/8 within an hour), the sizes `make plan` prints
PAPER_GENERATION_GPUS = {
    **dict.fromkeys(["aime24", "aime25", "amc", "codeforces"], "1"),
    **dict.fromkeys(["apps", "rg_code", "rg_geometry", "rg_induction"], "2"),
    **dict.fromkeys(["math500", "minerva", "codecontests", "taco", "rg_arc"], "4"),
    **dict.fromkeys(["olympiadbench", "rg_algebra", "rg_algorithmic", "rg_arithmetic", "rg_cognition"], "8"),
    **dict.fromkeys(["rg_games", "rg_graphs", "rg_logic"], "8"),
}


def generation_gpus(resources: dict) -> dict[str, str]:
    """The `gpu` resource of generate_samples per benchmark, from paper_dry_run's resources."""
    return {
        k[len("generate_samples[") : -1]: v["gpu"] for k, v in resources.items() if k.startswith("generate_samples[")
    }


@needs_driver
@pytest.mark.workflow
def test_the_one_node_preset_dry_runs_with_one_node_training_jobs(tmp_path):
    """No environment variable: the training jobs' size is the preset's training.cluster.nodes (one source)."""
    counts, resources = paper_dry_run(
        tmp_path,
        ["results/train/prorl_n16/train.json", "results/train/brorl_n512/train.json"],
        None,
        ("--configfile", "workflow/presets/one_node.yaml"),
    )
    train = resources["train_ppo"]
    assert (train["nodes"], train["tasks"], train["gres"]) == ("1", "1", "gpu:h100:8"), train
    assert "mpi" not in train, train  # the plugin refuses an MPI job of one task (gpu-assumptions S-mpi-one-task)
    assert counts["train_ppo"] >= 2 and counts["finish_training"] == 2
    assert "preflight_cross_node" not in counts  # one node: nothing crosses nodes


@needs_driver
@pytest.mark.workflow
def test_a_profile_that_sets_other_training_nodes_is_refused_before_any_job(tmp_path):
    """A site profile that asks 8 nodes per training job for a one-node config, or a site whose nodes have 4 GPUs for
    an 8-GPU config, stops the dry run with both values named (each job would otherwise wait for its nodes and then
    be refused by the launcher)."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "profiles" / "slurm", site)
    config = (site / "config.yaml").read_text()
    (site / "config.yaml").write_text(config.replace("  train_ppo:\n", "  train_ppo:\n    nodes: 8\n", 1))
    for profile, env, words in (
        (site, PAPER_ON_CI, "sets train_ppo's nodes to 8, but training.cluster.nodes makes it 1"),
        ("slurm", PAPER_ON_CI | {"BRORL_SLURM_GPUS_PER_NODE": "4"}, "asks 4 GPUs per training node (train_ppo's gres"),
    ):
        proc = subprocess.run(
            [str(DRIVER), "-m", "snakemake", "--profile", str(profile), "-n", "--directory", str(tmp_path / "work")]
            + ["--configfile", "workflow/presets/one_node.yaml"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env={k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | env,
        )
        assert proc.returncode != 0 and words in output_of(proc), output_of(proc)[-3000:]


@needs_driver
@pytest.mark.workflow
def test_the_decision_preset_dry_runs_on_one_node_with_its_registration_first(tmp_path):
    """workflow/presets/decision.yaml under the production profile: F1's start and release evaluated, F3's two step
    shapes trained on one node, every one of those jobs after the registration record, then the decision rule."""
    counts, resources = paper_dry_run(tmp_path, ["all"], None, ("--configfile", "workflow/presets/decision.yaml"))
    assert counts["register_decision"] == counts["decide"] == 1 and counts["train_ppo"] == 2, counts
    assert counts["generate_samples"] == 2 * 21 and counts["bench_throughput"] == 2, counts
    assert resources["train_ppo"]["nodes"] == "1", resources["train_ppo"]
    text = resources["__text__"]
    for rule in ("train_ppo", "generate_samples"):  # each waits for the thresholds' registration
        bodies = re.findall(rf"rule {rule}:\n(.*?)(?=\n\S|\n\s*rule )", text, re.S)
        assert bodies and all("results/decision/registration.json" in b for b in bodies), (rule, bodies[:1])
    assert "F1 and F3" in text  # the workflow's start-up note: what this run can establish


@needs_driver
@pytest.mark.workflow
def test_the_released_preset_dry_runs_evaluation_only_with_the_released_weights(tmp_path):
    """workflow/presets/released.yaml under the production profile: the start checkpoint and the released BroRL
    weights, staged and context-checked, each generated on every benchmark with the GPUs its size asks; nothing trains."""
    counts, resources = paper_dry_run(tmp_path, ["all"], None, ("--configfile", "workflow/presets/released.yaml"))
    assert counts["generate_samples"] == 2 * 21 and counts["download_eval_model"] == counts["extend_eval_model"] == 1
    assert not {"train_ppo", "export_checkpoint", "bench_throughput", "simulate_token_level"} & set(counts), counts
    # evaluation waits on the evaluation software's preflight only: no training stack to compile first
    assert counts["preflight_eval_node"] == 1 and "preflight_train_node" not in counts, counts
    assert resources["preflight_eval_node"]["gpu"] == "1"
    assert counts["extend_context"] == 1  # the evaluation length only: no 16K training folder without training
    assert resources["extend_eval_model"]["slurm_partition"] == "cpu"
    assert generation_gpus(resources) == PAPER_GENERATION_GPUS


@needs_driver
@pytest.mark.workflow
def test_dry_run_of_the_paper_config_lists_every_job_with_its_sbatch_resources(tmp_path):
    # the evaluation chain of the start checkpoint is in the DAG once the checkpoint is staged
    counts, resources = paper_dry_run(tmp_path, ["all", "results/eval/base/step3000/aime24.scores.parquet"])
    for rule, res in resources.items():
        if rule in ("all", "__text__"):
            continue
        assert res["slurm_partition"] in {"cpu", "h100"} and int(res["runtime"]) > 0 and int(res["mem_mb"]) > 0, rule
    gen = resources["generate_samples[aime24]"]
    assert (gen["slurm_partition"], gen["nodes"], gen["gpu_model"], gen["mem_mb_per_cpu"]) == (
        "h100",
        "1",
        "h100",
        "18750",
    )
    # each benchmark's generation asks for the plan's job size, with 12 cores per GPU (96-core, 1.8 TB nodes)
    assert generation_gpus(resources) == PAPER_GENERATION_GPUS
    assert resources["generate_samples[math500]"]["cpus_per_gpu"] == "12"
    assert resources["score_samples"]["slurm_partition"] == "cpu" and "gpu" not in resources["score_samples"]
    assert {"simulate_token_level", "simulate_sensitivity", "generate_samples", "score_samples"} <= set(counts)
    assert counts["simulate_token_level"] == 1 and counts["simulate_sensitivity"] == 10  # all runs / one per variant
    assert counts["preflight_eval_node"] == counts["preflight_train_node"] == 1  # each in its own software
    assert resources["train_ppo"]["mpi"] == "srun"  # 8 nodes: the rule's srun starts Ray across the allocation
    cross = resources["preflight_cross_node"]  # the all-reduce across two nodes before 8-node training
    assert (cross["nodes"], cross["tasks"], cross["gres"], cross["mpi"]) == ("2", "2", "gpu:h100:8", "srun"), cross
    # its srun names the rank count: the batch step's SLURM_NTASKS (2) would otherwise cap it at 2 ranks, not 16
    assert "srun --overlap --nodes=2 --ntasks=16 --ntasks-per-node=8" in resources["__text__"]


def test_the_profile_names_jobs_and_writes_the_efficiency_report_under_results():
    profile = read_profile(ROOT / "profiles" / "slurm")
    # the plugin refuses prefixes outside this pattern when the executor starts (2.8.0 __init__.py)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,50}", profile["slurm-jobname-prefix"]) and profile["slurm-jobname-prefix"]
    assert profile["slurm-efficiency-report"] is True
    assert profile["slurm-efficiency-report-path"] == profile["slurm-logdir"] == "results/logs/slurm"
    assert 0 < profile["slurm-efficiency-threshold"] <= 1


@needs_driver
@pytest.mark.workflow
def test_a_site_mail_address_reaches_every_job_as_sbatch_mail_on_failure(tmp_path):
    site = {"BRORL_SLURM_MAIL_USER": "ops@example.org"}
    _, resources = paper_dry_run(tmp_path, ["results/eval/base/step3000/aime24.scores.parquet"], site)
    mail = "--mail-type=FAIL --mail-user=ops@example.org"
    for rule in ("generate_samples", "score_samples", "prepare_benchmark"):
        assert resources[rule]["slurm_extra"] == mail, (rule, resources[rule])
    _, without = paper_dry_run(tmp_path / "none", ["results/eval/base/step3000/aime24.scores.parquet"])
    assert all("slurm_extra" not in res for res in without.values()), without


@needs_driver
@pytest.mark.workflow
def test_set_resources_of_rules_not_in_the_workflow_are_ignored_and_the_training_recipe_resolves(tmp_path):
    # a minimal workflow with the training rule's name: the profile's recipe gives the multi-node sbatch layout, and
    # leaves the job's size (nodes, tasks) and mpi to the rule, which asks for training.cluster.nodes itself
    (tmp_path / "Snakefile").write_text(
        'rule train_ppo:\n    output: "done"\n    log: "log"\n    shell: "touch {output} {log}"\n'
    )
    (tmp_path / "slurm").symlink_to(ROOT / "profiles" / "slurm")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")}
    clean["BRORL_SLURM_MAIL_USER"] = "ops@example.org"  # appended to the recipe's own slurm_extra
    proc = subprocess.run(
        [str(DRIVER), "-m", "snakemake", "--profile", "slurm", "-n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=clean,
    )
    text = output_of(proc)
    assert proc.returncode == 0, text[-3000:]
    res = re.search(r"resources: (.*)", text)[1]
    # nodes, tasks and (for multi-node jobs) mpi are the rule's own (brorl.training.job_shape), never the profile's
    assert "nodes=" not in res and "tasks=" not in res.replace("tasks_per_gpu", "") and "mpi=" not in res, res
    for expected in (
        "tasks_per_gpu=0",
        "gres=gpu:h100:8",
        "slurm_partition=h100",
        "slurm_extra=--ntasks-per-node=1 --exclusive --mail-type=FAIL --mail-user=ops@example.org",
        "runtime=1680",
        "ray_emulated=0",
    ):
        assert expected in res, (expected, res)


# ------------------------------------------------------------------------------------------- real local Slurm
WHY_NOT = slurm_up()
needs_slurm = pytest.mark.skipif(WHY_NOT is not None or not DRIVER.exists(), reason=WHY_NOT or f"no {DRIVER}")


@pytest.mark.slow
@needs_slurm
@pytest.mark.slurm
def test_tiny_preset_through_sbatch_with_a_cancelled_job_then_up_to_date(tmp_path):
    repo = copy_slurm_workflow(tmp_path / "repo")
    work = tmp_path / "work"
    override = tmp_path / "e2e.yaml"
    override.write_text(yaml.safe_dump(E2E_OVERRIDE))
    args = (
        E2E_TARGET,
        "--profile",
        "slurm",
        "--profile",
        "profiles/ci",
        "--directory",
        work,
        "--configfile",
        TINY,
        override,
    )
    env = {"BRORL_DATA_ROOT": str(tmp_path / "no-data")}
    # the sbatch calls brorl.ops.run.submission (and so `make plan`) predicts for this DAG
    dry = driver(*args, "-n", cwd=repo, env=env)
    assert dry.returncode == 0, output_of(dry)[-3000:]
    predicted = submissions(job_counts(dry), "embedded")
    started = time.time()
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started - 1))

    # 1. run, and cancel the generation job while it runs: Snakemake sees CANCELLED in sacct and fails
    full = {**os.environ, **CI_SITE, **env, "PATH": os.pathsep.join([str(ENGINE_BIN), os.environ["PATH"]])}
    cmd = ["timeout", "-k", "15", "900", *DRIVER_SNAKEMAKE, *map(str, args)]
    with open(tmp_path / "run1.log", "w") as log:
        run1 = subprocess.Popen(cmd, cwd=repo, env=full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        cancelled = None
        while run1.poll() is None and cancelled is None and time.time() - started < 600:
            queue = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k|%Z"], capture_output=True, text=True).stdout
            for job_id, state, comment, workdir in (line.split("|") for line in queue.splitlines() if line):
                if state == "RUNNING" and comment.startswith("rule_generate_samples") and workdir == str(work):
                    subprocess.run(["scancel", job_id], check=True)
                    cancelled = job_id
            time.sleep(1)
        # snakemake-executor-plugin-slurm 2.8.0 reads a manual cancel as `CANCELLED by <uid>` from sacct and does
        # not count it as failed: the driver waits forever. Users stop it and rerun
        # (docs/cluster.md#what-the-slurm-side-does-to-a-failed-job); so does the test, once sacct has recorded the
        # cancel and the driver has had two status checks (capped at 5 s apart) to see it.
        deadline = time.time() + 60
        while cancelled and time.time() < deadline and run1.poll() is None:
            if any(row[0].startswith("CANCELLED") for row in sacct("-X", "-j", cancelled, "-o", "State")):
                break
            time.sleep(1)
        try:
            run1.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(run1.pid, 9)  # timeout and the driver under it: the process group this test started
            run1.wait()
    text1 = (tmp_path / "run1.log").read_text()
    assert cancelled, "the generation job was never seen RUNNING:\n" + text1[-4000:]
    assert run1.returncode != 0, text1[-4000:]
    assert sacct("-X", "-j", cancelled, "-o", "State")[0][0].startswith("CANCELLED")
    unlock = driver(*args, "--unlock", cwd=repo, env=env)
    assert unlock.returncode == 0, output_of(unlock)[-3000:]

    # 2. the rerun completes what was cancelled (and nothing that had finished)
    run2 = driver(*args, cwd=repo, env=env)
    text2 = output_of(run2)
    assert run2.returncode == 0, text2[-6000:]
    assert "rule build_tiny_model" not in text2, "a finished job ran again"
    assert (work / E2E_TARGET).stat().st_size > 0
    elapsed = time.time() - started

    # every non-local job went through sbatch, and sacct shows each COMPLETED (except the cancelled one)
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", text1 + text2)
    assert len(submitted) >= 4, submitted  # build_tiny_model, generate_samples x2 (one cancelled), score_samples, ...
    states = {
        row[0]: row
        for row in sacct("-X", "-j", ",".join(submitted), "-o", "JobIDRaw,State,Partition,AllocTRES%80,Comment%80")
    }
    for job_id in submitted:
        job_id_, state, partition, tres, comment = states[job_id]
        if job_id == cancelled:
            continue
        assert state == "COMPLETED", states[job_id]
        if comment.startswith(("rule_generate_samples", "rule_bench_throughput")):
            assert partition == "h100" and "gres/gpu=1" in tres, states[job_id]
        elif not comment.startswith("rule_train_ppo"):
            assert partition == "cpu" and "gres/gpu" not in tres, states[job_id]
    rules = {states[j][4].split("_wildcards")[0] for j in submitted}
    assert {"rule_build_tiny_model", "rule_generate_samples"} <= rules, rules
    assert "rule_scoring_score_samples_summarize_evaluation" in rules, rules  # the group job names its members
    # local rules (data preparation, tables) ran on the driver, never through sbatch; the summary rode in the
    # scoring group's job
    assert "localrule prepare_benchmark" in text1 and "localrule summarize_evaluation" not in text1 + text2
    # Slurm's accounting holds as many jobs from this working directory as the plan's rule predicts, plus the
    # resubmission of the cancelled one
    accounted = [r for r in sacct("-X", "-S", since, "-o", "JobIDRaw,WorkDir%400,Timelimit") if r[1] == str(work)]
    assert len(accounted) == predicted.calls + 1 == len(submitted), (accounted, predicted, submitted)
    # the group job's time limit is its members' summed (score_samples 180 min + summarize_evaluation 10)
    scoring = [job for job in submitted if states[job][4].startswith("rule_scoring")]
    assert {r[2] for r in accounted if r[0] in scoring} == {"03:10:00"}, accounted
    assert predicted.in_groups == 1 and predicted.on_driver > 0, predicted

    # 3. a second run submits nothing
    run3 = driver(*args, cwd=repo, env=env)
    assert run3.returncode == 0 and "Nothing to be done" in output_of(run3), output_of(run3)[-3000:]
    assert "has been submitted" not in output_of(run3)
    print(
        f"\ntiny subset through sbatch (run with a cancel + rerun): {elapsed:.0f} s, {len(accounted)} sbatch calls "
        f"in sacct ({predicted.jobs} jobs: {predicted.on_driver} local, {predicted.in_groups} in a group, 1 resubmitted)"
    )

    # 4. the same working directory trains an arm: a stop request, a dead driver, a refused second driver, a requeue
    training_drill(repo, work, tmp_path, args, env)


TRAIN_TARGET = "results/train/prorl_n4/train.json"
TRAIN_STEPS = 16  # the tiny arm's own length (analysis.n_sweep.step reads step 16)


def train_override(tmp_path: Path) -> Path:
    """The tiny ProRL arm alone, TRAIN_STEPS steps in one segment, saved at its end."""
    arms = yaml.safe_load(Path(TINY).read_text())["arms"]
    for arm in arms:
        arm["enabled"] = arm["name"] == "prorl_n4"
        if arm["enabled"]:
            arm |= {"continued_steps": TRAIN_STEPS, "report_steps": [TRAIN_STEPS], "segment_max_steps": TRAIN_STEPS}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump({"arms": arms, "training": {"checkpoint_every": TRAIN_STEPS}}))
    return path


def running_train_job(work: Path) -> str | None:
    """The RUNNING train_ppo job of this working directory, if any."""
    queue = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k|%Z"], capture_output=True, text=True).stdout
    for job_id, state, comment, workdir in (line.split("|") for line in queue.splitlines() if line):
        if state == "RUNNING" and comment.startswith("rule_train_ppo") and workdir == str(work):
            return job_id
    return None


def driver_chain(repo: Path, work: Path, args: tuple, env: dict) -> list[str]:
    """Run the driver as a chain of two driver jobs on the cpu partition; returns their logs, in order."""
    for venv in (".venv", ".venv-slurm"):
        if not (repo / venv).exists():
            (repo / venv).symlink_to(ROOT / venv)
    logs = work / "results" / "logs" / "driver"
    logs.mkdir(parents=True, exist_ok=True)
    chain = {
        "BRORL_DRIVER_SNAKEMAKE": " ".join(DRIVER_SNAKEMAKE),
        "BRORL_DRIVER_WORKDIR": str(work),
        "BRORL_DRIVER_POLL_S": "2",
        "BRORL_DRIVER_LINKS": "2",
    }
    full = {**os.environ, **CI_SITE, **env, **chain}
    assert list(map(str, args[1:3])) == ["--profile", "slurm"]  # the script gives --profile slurm itself
    options = [str(a) for a in args[3:]]  # the CI profile and the config files (--configfile takes what follows)
    first = subprocess.run(
        ["sbatch", "--parsable", "--partition=cpu", "--time=30", f"--output={logs}/%j.log"]
        + ["workflow/scripts/driver_job.sh", str(args[0]), *options],
        cwd=repo,
        env=full,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    log1 = logs / f"{first}.log"
    wait_for("the first link's Snakemake", lambda: log1.is_file() and "starting:" in log1.read_text(), timeout=600)
    subprocess.run(["scancel", "--signal=USR1", "--batch", first], check=True)  # what --signal=B:USR1@900 sends
    second = wait_for("the second link", lambda: re.findall(r"next link is job (\d+)", log1.read_text()), 120)[0]
    wait_for("both links to end", lambda: not in_queue(first) and not in_queue(second), timeout=600, poll=2)
    return [log1.read_text(), (logs / f"{second}.log").read_text()]


def squeue_field(job_id: str, field: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job_id, "-o", field], capture_output=True, text=True).stdout


def in_queue(job_id: str) -> bool:
    return bool(subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True).stdout.strip())


def committed_steps(work: Path) -> int:
    metrics = work / "results/train/prorl_n4/run/metrics.jsonl"
    return len(metrics.read_text().splitlines()) if metrics.is_file() else 0


def wait_for(what: str, check, timeout: float = 300.0, poll: float = 0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}")


def training_drill(repo: Path, work: Path, tmp_path: Path, base_args: tuple, env: dict) -> None:
    """A run that lasts weeks, drilled on the embedded engine through the real local Slurm
    (docs/cluster.md#a-run-that-lasts-weeks): a time limit brought near (`scontrol update`) stops the job after the
    step under way and the retry resumes from it; the driver is killed, and a second driver refuses while the job
    trains; `scontrol requeue` keeps the job's lease; the job finishes alone, the next driver completes the arm
    without training again, and the one after does nothing."""
    args = (TRAIN_TARGET, *base_args[1:], train_override(tmp_path))  # rerun-incomplete: profiles/default
    full = {**os.environ, **CI_SITE, **env, "PATH": os.pathsep.join([str(ENGINE_BIN), os.environ["PATH"]])}
    started = time.time()
    cmd = ["timeout", "-k", "15", "900", *DRIVER_SNAKEMAKE, *map(str, args), "--retries", "1"]
    with open(tmp_path / "train1.log", "w") as log:
        first = subprocess.Popen(cmd, cwd=repo, env=full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # the time limit comes near: 3 to 4 minutes left, less than one step, one save and the margin
        job1 = wait_for("the training job's first step", lambda: committed_steps(work) >= 1 and running_train_job(work))
        elapsed = subprocess.run(["squeue", "-h", "-j", job1, "-o", "%M"], capture_output=True, text=True).stdout
        minutes = sum(int(x) * 60**i for i, x in enumerate(reversed(elapsed.strip().split(":")))) // 60
        subprocess.run(["scontrol", "update", f"JobId={job1}", f"TimeLimit={minutes + 4}"], check=True)
        job2 = wait_for("the retry", lambda: (j := running_train_job(work)) not in (None, job1) and j)
        stopped_at = committed_steps(work)
        assert 1 <= stopped_at < TRAIN_STEPS, stopped_at
        wait_for("a step of the retry", lambda: committed_steps(work) > stopped_at)
    finally:
        os.killpg(first.pid, 9)  # the driver dies (a login node's reboot); its Slurm job trains on
        first.wait()
    # a requeue (preemption's way back) restarts the same job id, which keeps the lease: at once, while the job
    # still trains (its remaining steps take seconds; later, under load, it may have finished and there is no lease)
    restarts_before = committed_steps(work)
    subprocess.run(["scontrol", "requeue", job2], check=True)
    assert restarts_before < TRAIN_STEPS, f"the retry finished all {TRAIN_STEPS} steps before it could be requeued"
    text1 = (tmp_path / "train1.log").read_text()
    log1 = sacct("-X", "-j", job1, "-o", "State,ExitCode")[0]
    # the rule exits with STOP_EXIT (75); Slurm records the jobstep Snakemake's status around it
    assert log1[0] == "FAILED", (log1, text1[-3000:])
    assert "stopped: prorl_n4 stopped after step" in text1 and "the time limit (" in text1, text1[-3000:]
    assert driver(*args, "--unlock", cwd=repo, env=env).returncode == 0

    # a second driver refuses before any sbatch, naming the job that holds the arm's lease (requeued: still queued)
    second = driver(*args, cwd=repo, env=env)
    text2 = output_of(second)
    assert second.returncode != 0 and f"Slurm job {job2} on" in text2 and "scancel" in text2, text2[-3000:]
    assert "has been submitted" not in text2

    # Slurm holds a requeued job back for a while (BeginTime); release it now
    wait_for("the requeue", lambda: "BeginTime" in squeue_field(job2, "%r") or "RUNNING" in squeue_field(job2, "%T"))
    subprocess.run(["scontrol", "update", f"JobId={job2}", "StartTime=now"], check=False)

    # the next driver is the chain of driver jobs (workflow/scripts/driver_job.sh): its first link waits for the
    # requeued job, starts Snakemake, and on the warning (sent by hand here) submits the second link and stops
    # Snakemake's submissions; the second completes the arm without training again
    links = driver_chain(repo, work, args, env)
    assert "waiting for jobs of this directory to end: " + job2 in links[0], links[0]
    assert "time limit near: next link is job" in links[0] and "link 2/2" in links[1], links
    assert "Snakemake ended with status 0" in links[-1] and "rule train_ppo" not in "".join(links), links[-1][-3000:]
    segment_log = (work / "results/logs/train_ppo/prorl_n4/segment0.log").read_text()
    assert f"lease: kept by this job after a restart (Slurm job {job2} on" in segment_log, segment_log[-3000:]
    assert not (work / "results/train/prorl_n4/run/lease.json").exists()  # given back at the end
    records = [json.loads(line) for line in (work / "results/train/prorl_n4/metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, TRAIN_STEPS + 1))  # each step once: nothing lost or redone
    fourth = driver(*args, cwd=repo, env=env)
    assert fourth.returncode == 0 and "Nothing to be done" in output_of(fourth), output_of(fourth)[-3000:]
    print(
        f"training drill: stopped at step {stopped_at} (job {job1}), retry {job2} requeued after step "
        f"{restarts_before}, arm done in {time.time() - started:.0f} s"
    )


@pytest.mark.slow
@needs_slurm
@pytest.mark.skipif(not RAY_LAUNCHER.exists(), reason=f"{RAY_LAUNCHER.name} (OpenRLHF engineer) does not exist yet")
@pytest.mark.slurm
def test_multi_node_training_recipe_starts_ray_across_emulated_nodes(tmp_path):
    """The profile's train_ppo recipe on 2 emulated nodes: the launcher starts a Ray head and a worker with srun
    and a driver sees both nodes."""
    pytest.importorskip("ray")
    (tmp_path / "driver.py").write_text(
        "import ray, socket\nray.init()\nalive = [n for n in ray.nodes() if n['Alive']]\n"
        "print('RAY_NODES', len(alive))\nray.shutdown()\n"
    )
    (tmp_path / "Snakefile").write_text(
        "rule train_ppo:\n"
        '    output: "ray_nodes.txt"\n'
        '    log: "train_ppo.log"\n'
        '    resources: nodes=2, tasks=2, mpi="srun"\n'  # as the workflow's rule asks (brorl.training.job_shape)
        f'    shell: "{RAY_LAUNCHER} --logs ray_logs --nodes 2 -- python driver.py > {{output}} 2> {{log}}"\n'
    )
    (tmp_path / "slurm").symlink_to(ROOT / "profiles" / "slurm")
    (tmp_path / "ci").symlink_to(ROOT / "profiles" / "ci")
    # the whole 8-GPU nodes, as in production (the launcher gives Ray every GPU of the node)
    proc = driver(
        "--profile", "slurm", "--profile", "ci", cwd=tmp_path, timeout=600, env={"BRORL_SLURM_GPUS_PER_NODE": "8"}
    )
    assert proc.returncode == 0, output_of(proc)[-4000:] + (tmp_path / "train_ppo.log").read_text()[-3000:]
    assert "RAY_NODES 2" in (tmp_path / "ray_nodes.txt").read_text()
    job_id = re.findall(r"has been submitted with SLURM jobid (\d+)", output_of(proc))[0]
    ((state, nodes, tres),) = [r for r in sacct("-X", "-j", job_id, "-o", "State,NNodes,AllocTRES%80")]
    assert state == "COMPLETED" and nodes == "2" and "node=2" in tres, (state, nodes, tres)


@needs_slurm
@pytest.mark.slurm
def test_a_table2_job_that_cannot_finish_in_its_last_attempt_stops_the_run_before_any_job(tmp_path):
    """A whole BroRL step on one GPU (about 255 h, brorl.ops.plan.throughput) under the slurm profile (runtime 360 min x
    attempt, 2 retries): the dry run prints each job's size; the run stops at its start, naming the job and the
    runtime, and submits nothing."""
    whole_step = tmp_path / "whole_step.yaml"
    whole_step.write_text("throughput:\n  layouts: [{prompts: 8, n: 16}, {prompts: 128, n: 512}]\n")
    args = ["--profile", "slurm", "--directory", str(tmp_path / "work"), "--configfile"]
    args += ["workflow/presets/one_node.yaml", str(whole_step)]
    # the emulated nodes' sizes, so the site check passes and the run reaches its start
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | CI_SITE
    env["BRORL_SLURM_GPUS_PER_NODE"] = "8"
    dry = subprocess.run(
        [str(DRIVER), "-m", "snakemake", "-n", *args], cwd=ROOT, capture_output=True, text=True, env=env
    )
    size = "bench_throughput p128_n512_pcon: 4.29e+09 tokens, about 255.5 h at 4,672 tokens/s per GPU"
    assert dry.returncode == 0, output_of(dry)[-3000:]
    assert size in output_of(dry), output_of(dry)[-3000:]
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 1))
    run = subprocess.run(
        [str(DRIVER), "-m", "snakemake", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300
    )
    text = output_of(run)
    assert run.returncode != 0, text[-3000:]
    assert "not started: Table 2's jobs cannot finish" in text, text[-3000:]
    assert "over the 18.0 h runtime of its last attempt (3) in the profile" in text, text[-3000:]
    # nothing submitted from this run's folder (other tests' jobs may run on the same Slurm meanwhile)
    work = str(tmp_path / "work")
    assert [r for r in sacct("-X", "-S", since, "-o", "JobIDRaw,WorkDir%400") if r[1] == work] == []


NODE_FAIL_SNAKEFILE = """
rule all:
    input: "held.done", "after.done"

rule held:
    output: "held.done"
    priority: 10
    resources: nodes=2, tasks=2, slurm_partition="h100", slurm_extra="--nodelist={nodes} --exclusive", runtime=10
    shell: "sleep 600; touch {{output}}"

rule after:
    output: "after.done"
    resources: slurm_partition="cpu", runtime=5
    shell: "touch {{output}}"
"""


@needs_slurm
@pytest.mark.slurm
def test_a_node_failure_excludes_the_failed_node_from_later_jobs_not_its_healthy_partner(tmp_path):
    """A node set down under a running 2-node job ends it in NODE_FAIL; the plugin as released adds both nodes to
    every later sbatch's --exclude (`--exclude=gpu[07-08]`, run by hand with the patch removed); the driver's patch
    (workflow/scripts/driver_site/brorl_slurm_nodes.py) excludes the failed one only."""
    idle = [
        line.split()[0]
        for line in subprocess.run(
            ["sinfo", "-h", "-N", "-p", "h100", "-t", "idle", "-o", "%N"], capture_output=True, text=True
        ).stdout.splitlines()
    ]
    if len(idle) < 2:
        pytest.skip(f"two idle h100 nodes needed, found {idle}")
    healthy, failing = idle[-2:]
    (tmp_path / "Snakefile").write_text(NODE_FAIL_SNAKEFILE.format(nodes=f"{healthy},{failing}"))
    run = subprocess.Popen(
        [
            "timeout",
            "-k",
            "15",
            "300",
            *DRIVER_SNAKEMAKE,
            "--executor",
            "slurm",
            "--jobs",
            "1",
            "--keep-going",
            "--verbose",
            "--slurm-no-requeue",
            "--slurm-init-seconds-before-status-checks",
            "1",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PATH": os.pathsep.join([str(ENGINE_BIN), os.environ["PATH"]])},
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _running_on(failing):
            time.sleep(1)
        assert _running_on(failing), f"the 2-node job did not start on {failing}"
        # down ends the job in NODE_FAIL; drained keeps the node out, as a node whose slurmd died stays down (the
        # local Slurm's emulated slurmd would register again at once: ReturnToService=2)
        for state in ("down", "drain"):
            subprocess.run(
                ["scontrol", "update", f"nodename={failing}", f"state={state}", "reason=brorl-test"], check=True
            )
        output, _ = run.communicate(timeout=240)
    finally:
        run.kill()
        subprocess.run(["scontrol", "update", f"nodename={failing}", "state=resume"], check=False)
        _wait_until_it_responds(failing)  # the other Slurm tests get all nodes back
    assert "NODE_FAIL" in output, output[-4000:]
    calls = [line for line in output.splitlines() if "sbatch call:" in line and "after" in line]
    assert len(calls) == 1, output[-4000:]
    assert f"--exclude={failing}" in calls[0] and healthy not in calls[0], calls[0]
    assert (tmp_path / "after.done").is_file()


def _running_on(node: str) -> bool:
    """Whether this test's 2-node job (the plugin's job comment names the rule) runs on ``node``."""
    proc = subprocess.run(["squeue", "-h", "-t", "R", "-w", node, "-o", "%k"], capture_output=True, text=True)
    return "rule_held" in proc.stdout


def _wait_until_it_responds(node: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-N", "-n", node, "-o", "%T"], capture_output=True, text=True).stdout
        if state.strip() and not state.strip().endswith("*") and "drain" not in state and "down" not in state:
            return
        time.sleep(1)
