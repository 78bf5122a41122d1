"""The README's cluster commands as printed: `make plan PLAN_ARGS=...` and `make dry-run` from the repository root
(the driver environment .venv-slurm runs Snakemake with the slurm executor plugin; the engines of .venv on PATH)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import CI_SITE, slurm_up

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / ".venv-slurm" / "bin" / "snakemake"


def make(*args: str, site: dict | None = None) -> subprocess.CompletedProcess:
    """`make ARGS` with the production site settings; the site check is off unless `site` sets it (these tests do
    not depend on whether the local Slurm, whose nodes are smaller than H100 nodes, is up)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | {"BRORL_SITE_CHECK": "0"}
    env |= site or {}
    return subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.workflow
@pytest.mark.skipif(not DRIVER.exists(), reason="no .venv-slurm (make slurm-env)")
def test_make_dry_run_lists_the_papers_jobs_through_the_slurm_profile(tmp_path):
    proc = make("dry-run", f"SUBMIT_ARGS=--directory {tmp_path}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "train_ppo" in proc.stdout and "This was a dry-run" in proc.stdout
    # ~30,000 lines, then one per rule and the warnings again (they come first, some 30,000 lines up)
    tail = proc.stdout.split("This was a dry-run", 1)[1]
    assert "  train_ppo: 37 job(s): slurm_partition=h100, nodes=8, tasks=8, gres=gpu:h100:8" in tail
    assert "warnings (repeated from the top of the output):" in tail
    assert "warning: 1 hub source(s) of this run are not pinned" in tail
    # it names the route a submission would take (it adds none, so it never needs conda)
    assert "software: none chosen: the jobs run the `python` on PATH" in proc.stdout


# a stand-in conda: the three questions Snakemake asks before it lists the environments it would build
STAND_IN_CONDA = """#!/bin/sh
case "$*" in
  "info --json") echo '{"conda_prefix": "/nonexistent", "platform": "linux-64", "envs_dirs": []}' ;;
  "--version") echo "conda 24.11.3" ;;
  "config --get channel_priority --json") echo '{"get": {"channel_priority": "strict"}}' ;;
  *) echo "stand-in conda cannot $*" >&2; exit 1 ;;
esac
"""


@pytest.mark.workflow
@pytest.mark.skipif(not DRIVER.exists(), reason="no .venv-slurm (make slurm-env)")
def test_gpu_submissions_refuse_the_cpu_build_and_an_unbuilt_training_environment(tmp_path):
    """`make submit` and `make smoke` with this suite's .venv (vLLM's CPU build) on PATH and no software route stop
    before Snakemake starts, naming both routes; with --sdm conda they stop while envs/train.yaml's environment is not
    built (a stand-in conda answers Snakemake's questions), and pass once Snakemake's own flag says it is."""
    for target in ("submit", "smoke"):
        proc = make(target, f"SUBMIT_ARGS=--directory {tmp_path}")
        assert proc.returncode != 0 and "the `python` on PATH has vLLM's CPU build" in proc.stderr, proc.stderr[-2000:]
        assert "--sdm conda" in proc.stderr and "--sdm conda apptainer" in proc.stderr
        assert "Building DAG of jobs" not in proc.stdout + proc.stderr  # refused before Snakemake ran
    conda = tmp_path / "bin" / "conda"
    conda.parent.mkdir()
    conda.write_text(STAND_IN_CONDA)
    conda.chmod(0o755)
    env = {**os.environ, "PATH": f"{conda.parent}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    check = [
        str(ROOT / ".venv/bin/python"),
        "-m",
        "brorl.ops.run.software_route",
        "--check",
        "--snakemake",
        str(DRIVER),
    ]
    check += ["--", "--profile", "slurm", "--sdm", "conda", "--directory", str(tmp_path / "run")]
    proc = subprocess.run(check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "envs/train.yaml's conda environment" in proc.stderr, proc.stderr[-2000:]
    location = proc.stderr.split("environment (", 1)[1].split(")", 1)[0]
    (tmp_path / "run" / location).with_suffix(".env_setup_done").touch()  # what Snakemake writes when it is built
    proc = subprocess.run(check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.workflow
def test_make_plan_takes_plan_args(tmp_path):
    proc = make("plan", "PLAN_ARGS=--gpu-nodes 16")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "wall-clock on 16 GPU nodes" in proc.stdout


def test_make_help_lists_every_documented_target():
    """Each `## ...` comment above a target (a variable line between them is fine) shows in `make help`."""
    proc = subprocess.run(["make", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    lines = (ROOT / "Makefile").read_text().splitlines()
    documented = set()
    for i, line in enumerate(lines):
        if line.startswith("## ") and not (i + 1 < len(lines) and lines[i + 1].startswith("## ")):
            following = next(x for x in lines[i + 1 :] if not x.split(" ")[0].isupper())
            documented.add(following.split(":")[0])
    assert {"plan", "pin", "smoke", "rehearsal", "demo", "test"} <= documented <= listed, documented - listed


@pytest.mark.slurm
@pytest.mark.skipif(slurm_up() is not None, reason=str(slurm_up()))
@pytest.mark.skipif(not DRIVER.exists(), reason="no .venv-slurm (make slurm-env)")
def test_make_dry_run_refuses_a_wrong_partition_and_a_bad_arm_before_anything(tmp_path):
    """Against the local Slurm's real sinfo: a GPU partition it does not have, then an arm OpenRLHF would refuse
    (N = 24 x 100 prompts: mini-batches of 300 samples for 64 GPUs), each stop `make dry-run` in seconds."""
    site = {**CI_SITE, "BRORL_SITE_CHECK": "1", "BRORL_SLURM_GPUS_PER_NODE": "8"}
    proc = make("dry-run", f"SUBMIT_ARGS=--directory {tmp_path}", site={**site, "BRORL_SLURM_GPU_PARTITION": "h200"})
    assert proc.returncode != 0 and "partition 'h200'" in proc.stderr and "sinfo lists: h100, cpu" in proc.stderr
    assert "Building DAG of jobs" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    bad = tmp_path / "bad_arm.yaml"
    bad.write_text(
        "arms:\n  - {name: prorl_n16, n: 24, prompts_per_step: 100, continued_steps: 10}\n"
        "  - {name: brorl_n512, n: 512, prompts_per_step: 128, continued_steps: 191}\n"
        "analysis: {n_sweep: {arms: [], controls: []}}\n"
    )
    proc = make("dry-run", f"SUBMIT_ARGS=--configfile {bad} --directory {tmp_path}", site=site)
    assert proc.returncode != 0 and "prorl_n16's mini-batch of 300 samples" in proc.stderr, proc.stderr[-2000:]
    proc = make("dry-run", f"SUBMIT_ARGS=--directory {tmp_path} --until download_base_model", site=site)
    assert proc.returncode == 0 and "site: every partition and request checked against sinfo" in proc.stdout, (
        proc.stdout + proc.stderr
    )[-2000:]


@pytest.mark.workflow
def test_make_targets_read_the_checkout_they_run_in(tmp_path):
    """A second checkout sharing this one's .venv (whose editable install points here): `make plan` there prices
    that checkout's config, not this one's."""
    clone = tmp_path / "other"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    config = (clone / "config.yaml").read_text()
    assert "continued_steps: 535 " in config
    (clone / "config.yaml").write_text(config.replace("continued_steps: 535 ", "continued_steps: 1070 ", 1))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BRORL_SLURM_", "PYTHONPATH"))}
    proc = subprocess.run(
        ["make", "-o", ".venv/.installed", "-o", "sandbox", "plan"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**env, "BRORL_SITE_CHECK": "0"},
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    per_arm = next(line for line in proc.stdout.splitlines() if line.startswith("training per arm"))
    hours = float(per_arm.split("prorl_n16 ", 1)[1].split(" h", 1)[0])
    assert hours > 250, per_arm  # 1,070 steps of the clone's config, not this checkout's 535 (about 140 h)
