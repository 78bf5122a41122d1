"""The GPU node preflight (brorl.preflight): on this CPU machine it runs, passes what applies to the embedded engine
and fails exactly the GPU checks, each with its reason and fix; the driver rule and the disk check on fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from brorl.preflight import checks

ROOT = Path(__file__).resolve().parents[2]
GPU_CHECKS = {"NVIDIA driver", "GPUs seen by torch", "vLLM platform", "flash-attn", "DeepSpeed FusedAdam"}


@pytest.mark.engine
def test_preflight_on_a_cpu_machine_fails_exactly_the_gpu_checks(tmp_path):
    out = tmp_path / "preflight.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "brorl.preflight",
            "--configfile",
            str(ROOT / "workflow/presets/tiny.yaml"),
            "--no-slurm",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a failed check stops the workflow
    rows = json.loads(out.read_text())
    failed = {r["name"] for r in rows if not r["ok"]}
    assert failed == GPU_CHECKS, proc.stdout
    assert all(r["gpu"] for r in rows if not r["ok"]) and all(r["fix"] for r in rows if not r["ok"])
    assert "checks pass; failed: NVIDIA driver" in proc.stdout and "fix:" in proc.stdout
    assert any(r["name"] == "IFEval checkers" and r["ok"] for r in rows)  # installed by make setup, offline


def _fake_nvidia_smi(tmp_path, version: str, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho {version}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_driver_must_match_the_cuda_build_of_torch(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "torch_cuda", lambda: "13.0")
    _fake_nvidia_smi(tmp_path, "575.57.08", monkeypatch)  # a CUDA 12.9 driver
    low = checks.driver_check()
    assert not low.ok and "575.57.08 < 580" in low.detail and "CUDA 12.8 build" in low.fix
    _fake_nvidia_smi(tmp_path, "580.65.06", monkeypatch)
    assert checks.driver_check().ok
    monkeypatch.setattr(checks, "torch_cuda", lambda: "12.8")
    _fake_nvidia_smi(tmp_path, "570.124.06", monkeypatch)
    assert checks.driver_check().ok  # CUDA 12 builds run on >= 525


def test_disk_check_compares_free_space_with_the_plan(tmp_path):
    assert checks.disk_check(tmp_path / "not" / "yet", 0.001).ok  # the nearest existing parent is measured
    failed = checks.disk_check(tmp_path, 1e9)
    assert not failed.ok and "the plan needs" in failed.detail
