"""The README's cluster commands as printed: `make plan PLAN_ARGS=...` and `make dry-run` from the repository root
(the driver environment .venv-slurm runs Snakemake with the slurm executor plugin; the engines of .venv on PATH)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import PAPER_ON_CI, slurm_up

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / ".venv-slurm" / "bin" / "snakemake"


def make(*args: str, site: dict | None = None) -> subprocess.CompletedProcess:
    """`make ARGS` with the production site settings; the site check is off unless `site` sets it (these tests do
    not depend on whether the local Slurm, whose nodes are smaller than H100 nodes, is up)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | {"BRORL_SITE_CHECK": "0"}
    env |= site or {}
    return subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)


def readme_cluster_lines() -> list[str]:
    """The README's set-up and dry run of the paper, as typed: the lines of its fenced block that activates the
    driver environment, from `source` on (comments cut; `make slurm-env` before it built .venv-slurm)."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in text.split("```bash")[1:] if "source .venv-slurm/bin/activate" in b.split("```")[0])
    lines = [line.split("#")[0].strip() for line in block.split("```")[0].splitlines()]
    lines = [line for line in lines if line]
    return lines[lines.index("source .venv-slurm/bin/activate") :]


def typed(lines: list[str], *extra: str, site: dict | None = None) -> subprocess.CompletedProcess:
    """`lines` in a fresh bash from the repository root, the last one given `extra` arguments: no PYTHONPATH, no
    engine environment on PATH, the production site settings plus `site` (the CI's BRORL_SLURM_* overrides)."""
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(str(ROOT))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BRORL_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env |= {"PATH": os.pathsep.join(path)} | (site or {})
    script = "\n".join([*lines[:-1], shlex.join([*shlex.split(lines[-1]), *extra])])
    return subprocess.run(["bash", "-ec", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.workflow
@pytest.mark.skipif(not DRIVER.exists(), reason="no .venv-slurm (make slurm-env)")
def test_the_readme_dry_run_as_typed_lists_the_papers_jobs_then_one_line_per_rule(tmp_path):
    lines = readme_cluster_lines()
    assert lines[-1] == "snakemake --profile slurm -n", lines
    proc = typed(lines, "--directory", str(tmp_path), site=PAPER_ON_CI)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "This was a dry-run" in proc.stdout
    assert re.search(
        r"^site: (every partition and request checked against sinfo|not checked \(no sinfo)", proc.stderr, re.M
    )
    # ~30,000 lines, then one per rule, the route and the warnings again (they come first, some 30,000 lines up)
    tail = proc.stdout.split("This was a dry-run", 1)[1]
    assert "  train_ppo: 37 job(s): slurm_partition=h100, nodes=8, tasks=8, gres=gpu:h100:8" in tail
    assert "  group scoring: 693 group job(s)" in tail
    assert "software: none chosen: the jobs run the `python` on PATH" in tail
    assert "warnings (repeated from the top of the output):" in tail
    assert "warning: 1 hub source(s) of this run are not pinned" in tail
    # the driver environment has no engines: a submission without a route would stop, and the dry run says so
    assert "warning: a submission would stop here: no software route is chosen" in tail
    assert "cannot import torch, vllm" in tail


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
def test_gpu_submissions_refuse_no_engines_the_cpu_build_and_an_unbuilt_training_environment(tmp_path):
    """A submission as typed stops while the Snakefile is read, before any job: with the driver environment alone
    (no engines), with `make smoke` (this suite's .venv, vLLM's CPU build, first on PATH), and with --sdm conda while
    envs/train.yaml's environment is not built (a stand-in conda answers Snakemake's questions). The check the
    driver job runs before its sbatch passes once Snakemake's own flag says the environment is built."""
    lines = readme_cluster_lines()[:-1] + ["snakemake --profile slurm"]
    proc = typed(lines, "--directory", str(tmp_path), site=PAPER_ON_CI)
    assert proc.returncode != 0 and "not submitted: no software route is chosen" in proc.stderr, proc.stderr[-2000:]
    assert "cannot import torch, vllm" in proc.stderr and "--sdm conda apptainer" in proc.stderr
    assert "Building DAG of jobs" not in proc.stdout + proc.stderr  # refused before Snakemake built the DAG
    proc = make("smoke", f"SUBMIT_ARGS=--directory {tmp_path}", site={**PAPER_ON_CI, "BRORL_SITE_CHECK": "1"})
    assert proc.returncode != 0 and "the `python` on PATH has vLLM's CPU build" in proc.stderr, proc.stderr[-2000:]
    assert "Building DAG of jobs" not in proc.stdout + proc.stderr
    conda = tmp_path / "bin" / "conda"
    conda.parent.mkdir()
    conda.write_text(STAND_IN_CONDA)
    conda.chmod(0o755)
    lines = [f"export PATH={conda.parent}:$PATH", *lines]
    proc = typed(lines, "--sdm", "conda", "--directory", str(tmp_path / "run"), site=PAPER_ON_CI)
    assert proc.returncode != 0 and "envs/train.yaml's conda environment" in proc.stderr, proc.stderr[-2000:]
    assert "Building DAG of jobs" not in proc.stdout + proc.stderr
    location = proc.stderr.split("environment (", 1)[1].split(")", 1)[0]
    (tmp_path / "run" / location).with_suffix(".env_setup_done").touch()  # what Snakemake writes when it is built
    env = {**os.environ, "PATH": f"{conda.parent}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    check = [str(ROOT / ".venv/bin/python"), "-m", "brorl.ops.run.software_route", "--check", "--snakemake"]
    check += [str(DRIVER), "--", "--profile", "slurm", "--sdm", "conda", "--directory", str(tmp_path / "run")]
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
def test_the_typed_dry_run_refuses_a_wrong_partition_and_a_bad_arm_before_anything(tmp_path):
    """Against the local Slurm's real sinfo, `snakemake --profile slurm -n` as typed: a GPU partition it does not
    have, then an arm OpenRLHF would refuse (N = 16 x 150 prompts: mini-batches of 300 samples for 64 GPUs), each
    stop before the DAG is built."""
    lines = readme_cluster_lines()
    proc = typed(lines, "--directory", str(tmp_path), site={**PAPER_ON_CI, "BRORL_SLURM_GPU_PARTITION": "h200"})
    text = proc.stdout + proc.stderr  # under -n Snakemake prints its errors to stdout
    assert proc.returncode != 0 and "partition 'h200'" in text and "sinfo lists: h100, cpu" in text, text[-2000:]
    assert "Building DAG of jobs" not in text
    bad = tmp_path / "bad_arm.yaml"
    bad.write_text(
        "arms:\n  - {name: prorl_n16, n: 16, prompts_per_step: 150, continued_steps: 10}\n"
        "  - {name: brorl_n512, n: 512, prompts_per_step: 128, continued_steps: 191}\n"
        "analysis: {n_sweep: {arms: [], controls: []}}\n"
    )
    proc = typed(lines, "--configfile", str(bad), "--directory", str(tmp_path), site=PAPER_ON_CI)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "prorl_n16's mini-batch of 300 samples" in text, text[-2000:]


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
