"""An all-reduce across the nodes of one Slurm job: one rank per srun task (a GPU each with NCCL), rendezvous at
the first node's address. The 64-GPU training job's DeepSpeed and vLLM weight sync cross nodes the same way; a
site whose NCCL cannot (no InfiniBand transport, a firewall, a wrong interface) fails here in a minute instead of
at the first step of a 64-GPU job. Run by the preflight_cross_node rule:

    srun --nodes=2 --ntasks-per-node=<GPUs> python -m brorl.preflight.cross_node --out results/preflight/cross_node.json

--backend gloo (CPU tensors) runs the same rendezvous without GPUs; the tests use it on the local Slurm.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def node_names(squeue_nodes: str, expand) -> list[str]:
    """The job's node names from squeue's %N (a host list such as gpu[01-02]), expanded by `expand`."""
    return expand(squeue_nodes.strip()) if squeue_nodes.strip() else []


def node_address(scontrol_node: str) -> str | None:
    """NodeAddr from `scontrol show node <name> -o`, or None."""
    for field in scontrol_node.split():
        if field.startswith("NodeAddr="):
            return field.split("=", 1)[1]
    return None


def bus_bandwidth_gbs(nbytes: int, seconds: float, world: int) -> float:
    """NCCL-tests' bus bandwidth of an all-reduce: the algorithm bandwidth x 2 (world - 1) / world."""
    return nbytes / seconds / 1e9 * 2 * (world - 1) / world if seconds > 0 and world > 1 else 0.0


def _run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout


def master_address() -> str:
    """The first node's address (the jobstep plugin strips SLURM_JOB_NODELIST from rule environments)."""
    job = os.environ["SLURM_JOB_ID"]
    listed = os.environ.get("SLURM_JOB_NODELIST") or _run(["squeue", "-h", "-j", job, "-o", "%N"])
    names = node_names(listed, lambda text: _run(["scontrol", "show", "hostnames", text]).split())
    return node_address(_run(["scontrol", "show", "node", names[0], "-o"])) or names[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brorl.preflight.cross_node", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    parser.add_argument("--port", type=int, default=29571)
    parser.add_argument("--mb", type=int, default=256, help="size of the all-reduced tensor (MiB)")
    parser.add_argument("--out", type=Path, default=None, help="rank 0 writes the result here")
    a = parser.parse_args(argv)
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    nodes = int(os.environ.get("SLURM_STEP_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)
    address = master_address()
    dist.init_process_group(a.backend, init_method=f"tcp://{address}:{a.port}", rank=rank, world_size=world)
    device = "cpu"
    if a.backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("SLURM_LOCALID", 0)))
        device = "cuda"
    x = torch.ones(a.mb * 2**20 // 4, dtype=torch.float32, device=device)
    dist.all_reduce(x)  # warm-up: the communicators are built here
    x.fill_(1.0)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    dist.all_reduce(x)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    ok = bool((x == world).all())
    dist.destroy_process_group()
    if rank == 0:
        result = {
            "ok": ok,
            "backend": a.backend,
            "nodes": nodes,
            "ranks": world,
            "master": address,
            "mib": a.mb,
            "seconds": seconds,
            "bus_bandwidth_gbs": bus_bandwidth_gbs(x.numel() * 4, seconds, world),
        }
        print(("ok " if ok else "FAILED ") + json.dumps(result), flush=True)
        if a.out:
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
