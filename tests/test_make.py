"""The README's cluster commands as printed: `make plan PLAN_ARGS=...` and `make dry-run` from the repository root
(the driver environment .venv-slurm runs Snakemake with the slurm executor plugin; the engines of .venv on PATH)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / ".venv-slurm" / "bin" / "snakemake"


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")}
    return subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.workflow
@pytest.mark.skipif(not DRIVER.exists(), reason="no .venv-slurm (make slurm-env)")
def test_make_dry_run_lists_the_papers_jobs_through_the_slurm_profile(tmp_path):
    proc = make("dry-run", f"SUBMIT_ARGS=--directory {tmp_path}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "train_ppo" in proc.stdout and "This was a dry-run" in proc.stdout
    assert "warning: 1 hub source(s) of this run are not pinned" in proc.stderr


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
