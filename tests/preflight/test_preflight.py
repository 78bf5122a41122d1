"""The GPU node preflight (brorl.ops.preflight): on this CPU machine it runs, passes what applies to the embedded engine
and fails exactly the GPU checks, each with its reason and fix; the driver rule and the disk check on fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from brorl.ops.preflight import CHECK_NAMES, checks

ROOT = Path(__file__).resolve().parents[2]
GPU_CHECKS = {
    "NVIDIA driver",
    "GPUs seen by torch",
    "GPU compute mode",
    "vLLM platform",
    "vLLM engine with sleep mode",
    "flash-attn",
    "flash-attn varlen kernel",
    "DeepSpeed FusedAdam",
    "NCCL all-reduce (this node's GPUs)",
    "CUDA-IPC weight sync",
}
# the checks that run a GPU path say on a CPU machine that they did not run, and why
NOT_RUN = {
    "vLLM engine with sleep mode",
    "flash-attn varlen kernel",
    "NCCL all-reduce (this node's GPUs)",
    "CUDA-IPC weight sync",
}


@pytest.mark.engine
def test_preflight_on_a_cpu_machine_fails_exactly_the_gpu_checks(tmp_path):
    out = tmp_path / "preflight.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "brorl.ops.preflight",
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
    assert {r["name"] for r in rows} <= set(CHECK_NAMES)  # the names docs/gpu-assumptions.md is held to
    failed = {r["name"] for r in rows if not r["ok"]}
    assert failed == GPU_CHECKS, proc.stdout
    assert all(r["gpu"] for r in rows if not r["ok"]) and all(r["fix"] for r in rows if not r["ok"])
    assert "checks pass; failed: NVIDIA driver" in proc.stdout and "fix:" in proc.stdout
    assert any(r["name"] == "IFEval checkers" and r["ok"] for r in rows)  # installed by make setup, offline
    assert all(r["detail"].startswith("not run: torch is a CPU build") for r in rows if r["name"] in NOT_RUN)
    fused = next(r for r in rows if r["name"] == "DeepSpeed FusedAdam")
    assert "built for the 'cpu' accelerator" in fused["detail"]  # the CPU op imports, but is not the CUDA build
    assert any(r["name"] == "code sandbox isolation" and r["ok"] and r["detail"] == "bwrap" for r in rows)


# what envs/train.yaml has and envs/eval.yaml lacks: the evaluation preflight must run without any of it
TRAINING_ONLY = ("deepspeed", "openrlhf", "flash_attn", "lighteval", "nltk", "scipy", "seaborn", "matplotlib")
BLOCK_TRAINING_STACK = f"""
import importlib.abc, runpy, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {TRAINING_ONLY!r}:
            raise ImportError(f"{{name}} is not in envs/eval.yaml")
sys.meta_path.insert(0, Block())
sys.argv[0] = "brorl.ops.preflight"
runpy.run_module("brorl.ops.preflight", run_name="__main__")
"""


@pytest.mark.engine
def test_the_evaluation_preflight_runs_without_the_training_stack(tmp_path):
    """Generation waits on `--scope eval`: only driver, GPUs, vLLM, disk and token, importing nothing of training."""
    out = tmp_path / "eval.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    argv = ["--scope", "eval", "--configfile", str(ROOT / "workflow/presets/released.yaml"), "--no-slurm"]
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK_TRAINING_STACK, *argv, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    rows = {r["name"]: r for r in json.loads(out.read_text())}
    assert set(rows) <= set(CHECK_NAMES)
    assert set(rows) == {"NVIDIA driver", "GPUs seen by torch", "vLLM platform", "vLLM engine generates"} | {
        "free disk",
        "hub token",
    }
    assert {name for name, r in rows.items() if not r["ok"]} == {name for name, r in rows.items() if r["gpu"]}
    assert rows["vLLM engine generates"]["detail"].startswith("not run: torch is a CPU build")
    assert "plan: 7 GB" in rows["free disk"]["detail"]  # the released weights, staged and extended (2 x 3.56 GB)


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


def test_compute_mode_must_be_default_for_colocation_and_cuda_ipc():
    from brorl.ops.preflight.gpu_paths import compute_mode_problem

    assert compute_mode_problem("0, Default\n1, Default\n") is None
    problem = compute_mode_problem("0, Default\n1, Exclusive_Process\n")
    assert "GPU(s) [1] in compute mode 'Exclusive_Process'" in problem and "CUDA IPC" in problem
    assert compute_mode_problem("") == "nvidia-smi listed no GPU"


def test_a_cpu_build_of_fusedadam_is_not_prebuilt():
    assert checks.fused_adam_build_problem("cuda", {"fused_adam": True}) is None
    assert "'cpu' accelerator" in checks.fused_adam_build_problem("cpu", {"fused_adam": True, "cpu_adam": True})
    assert "without fused_adam" in checks.fused_adam_build_problem("cuda", {"fused_adam": False})


def _stand_in_deepspeed(folder: Path, accelerator: str, fused_adam: bool) -> Path:
    """A package tree with DeepSpeed's build record (deepspeed/git_version_info.py, as its setup.py writes it) and
    an importable op builder, plus flash_attn: what the post-deploy's check and the preflight import."""
    ds = folder / "deepspeed"
    (ds / "ops").mkdir(parents=True)
    (ds / "__init__.py").write_text("")
    (ds / "ops" / "__init__.py").write_text("")
    (ds / "ops" / "op_builder.py").write_text("class FusedAdamBuilder:\n    pass\n")
    ops = {"fused_adam": fused_adam, "cpu_adam": accelerator == "cpu"}
    (ds / "git_version_info.py").write_text(f"accelerator_name = {accelerator!r}\ninstalled_ops = {ops!r}\n")
    (folder / "flash_attn.py").write_text("")
    info = folder / "flash_attn-2.8.3.post1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.8.3.post1\n")
    return folder


@pytest.mark.parametrize("accelerator, fused_adam", [("cuda", True), ("cuda", False), ("cpu", True)])
def test_preflight_and_post_deploy_judge_fusedadam_by_one_rule(tmp_path, monkeypatch, accelerator, fused_adam):
    """The post-deploy's own check (the heredoc of envs/train.post-deploy.sh, run as it stands) and the preflight
    agree on every build state: only a CUDA build with fused_adam passes; a JIT-buildable op fails both (the
    preflight once passed it, whatever the post-deploy said)."""
    script = (ROOT / "envs" / "train.post-deploy.sh").read_text()
    check = script.split("python - <<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    site = _stand_in_deepspeed(tmp_path / f"{accelerator}-{fused_adam}", accelerator, fused_adam)
    env = {**os.environ, "PYTHONPATH": str(site)}
    post_deploy = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=60)
    monkeypatch.setenv("PYTHONPATH", str(site))
    # where a JIT build would work: torch's CUDA and an nvcc of the same version on PATH
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir(exist_ok=True)
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{nvcc.parent}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(checks, "torch_cuda", lambda: "13.0")
    preflight = checks.fused_adam_check()
    expected = checks.fused_adam_build_problem(accelerator, {"fused_adam": fused_adam}) is None
    assert (post_deploy.returncode == 0) == preflight.ok == expected, (post_deploy.stderr, preflight)
    if not expected:
        assert "post-deploy" in preflight.fix and preflight.detail == checks.fused_adam_build_problem(
            accelerator, {"fused_adam": fused_adam}
        )


def test_partition_limits_against_the_training_jobs_request():
    from brorl.ops.preflight.gpu_paths import partition_limit_problems

    request = {"runtime": 1680, "mem_mb": 1_800_000, "cpus_per_task": 96, "gres": "gpu:h100:8"}
    # recorded sinfo -h -p P -o "%l|%m|%c|%G" lines: a partition that grants it, and one that grants nothing
    fits = "2-00:00:00|2000000|112|gpu:h100:8(S:0-1)\n2-00:00:00|2000000|112|gpu:h100:8(S:0-1)\n"
    assert partition_limit_problems(fits, request) == []
    small = "1-00:00:00|1000000+|64|gpu:nvidia_h100_80gb_hbm3:8\n"
    problems = partition_limit_problems(small, request)
    assert len(problems) == 4, problems
    assert "MaxTime 1-00:00:00 is below the 1680 minutes" in problems[0]
    assert "nodes have 1,000,000 MB" in problems[1] and "64 CPUs" in problems[2]
    assert "no node offers gpu:h100:8 (GRES on the partition: gpu:nvidia_h100_80gb_hbm3:8)" in problems[3]
    assert partition_limit_problems("", request) == ["sinfo printed no partition line ('')"]


def test_the_site_checks_carry_their_documented_names():
    """The two Slurm rows (the runs above pass --no-slurm): names docs/gpu-assumptions.md is held to."""
    from brorl.ops.plan.profile import read_profile
    from brorl.ops.preflight.__main__ import site_checks

    rows = site_checks(read_profile(ROOT / "profiles" / "slurm"), "train_ppo")
    assert [r.name for r in rows] == ["Slurm partition", "partition limits"]
    assert set(CHECK_NAMES) >= {r.name for r in rows}
