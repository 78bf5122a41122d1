"""An all-reduce across the nodes of one Slurm job: one rank per srun task (a GPU each with NCCL), rendezvous at
the first node's address. The 64-GPU training job's DeepSpeed and vLLM weight sync cross nodes the same way; a
site whose NCCL cannot (no InfiniBand transport, a firewall, a wrong interface) fails here in a minute instead of
at the first step of a 64-GPU job. Run by the preflight_cross_node rule:

    srun --nodes=2 --ntasks-per-node=<GPUs> python -m brorl.ops.preflight.cross_node --out results/preflight/cross_node.json

It also reports what a plain all-reduce cannot show: the transport NCCL chose between the nodes (its `Using network
IB|Socket` line at NCCL_DEBUG=INFO: sockets carry a 64-GPU run's syncs at a fraction of InfiniBand's speed), and
whether each node reaches the other's ports that Ray uses (the head's GCS port, a port in `ray start`'s worker range,
and an ephemeral port like those of its node and object managers): a closed range surfaces only at the first
cross-node Ray task, which NCCL's own sockets never touch.

--backend gloo (CPU tensors) runs the same rendezvous without GPUs; the tests use it on the local Slurm.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY_HEAD_PORT = (
    6379  # ray start --head's default GCS port (ray/_private/ray_constants.py DEFAULT_PORT), as the launcher uses
)
RAY_WORKER_PORTS = (10002, 19999)  # ray start's --min-worker-port / --max-worker-port defaults (ray/scripts/scripts.py)


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


def nccl_transport(debug_text: str) -> str | None:
    """The network NCCL chose ("IB", "Socket", a plugin's name) from its NCCL_DEBUG=INFO output, or None."""
    found = re.findall(r"NCCL INFO Using network (\S+)", debug_text)
    return found[-1] if found else None


def listen_ports(head: bool, worker_range: tuple[int, int], head_port: int) -> tuple[list, dict[str, int]]:
    """Listening sockets on the ports Ray's processes use between nodes: the GCS port (head only), the first free
    port of the worker range, an ephemeral one. The kernel completes a peer's connect from the backlog, so nothing
    needs to accept. Returns the sockets (kept open by the caller) and {what: port}; a port already taken is
    recorded as -1 (Ray could not bind it either)."""
    sockets, ports = [], {}

    def bind(port: int) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            sock.close()
            return -1
        sock.listen(16)
        sockets.append(sock)
        return sock.getsockname()[1]

    if head:
        ports["Ray GCS (head)"] = bind(head_port)
    low, high = worker_range
    ports[f"Ray worker range {low}-{high}"] = next((p for p in map(bind, range(low, high + 1)) if p > 0), -1)
    ports["ephemeral (Ray's node and object managers)"] = bind(0)
    return sockets, ports


def reach(address: str, ports: dict[str, int], timeout: float = 5.0) -> dict[str, str]:
    """Each port of `ports` at `address`: "ok", or why a TCP connection failed."""
    out = {}
    for what, port in ports.items():
        if port < 0:
            out[what] = "in use on that node"
            continue
        try:
            with socket.create_connection((address, port), timeout=timeout):
                out[what] = "ok"
        except OSError as error:
            out[what] = f"port {port}: {error.strerror or error}"
    return out


def own_address() -> str:
    """This node's address as Slurm knows it (NodeAddr), else its host name."""
    name = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    try:
        return node_address(_run(["scontrol", "show", "node", name, "-o"])) or name
    except (OSError, subprocess.SubprocessError):
        return name


def ray_port_problems(reached: list[dict]) -> list[str]:
    """Every (from node, to node, port) that failed, from each node's reach results."""
    return [
        f"{entry['from']} -> {entry['to']} {what}: {result}"
        for entry in reached
        for what, result in entry["results"].items()
        if result != "ok"
    ]


def _run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout


def master_address() -> str:
    """The first node's address (the jobstep plugin strips SLURM_JOB_NODELIST from rule environments)."""
    job = os.environ["SLURM_JOB_ID"]
    listed = os.environ.get("SLURM_JOB_NODELIST") or _run(["squeue", "-h", "-j", job, "-o", "%N"])
    names = node_names(listed, lambda text: _run(["scontrol", "show", "hostnames", text]).split())
    return node_address(_run(["scontrol", "show", "node", names[0], "-o"])) or names[0]


def _parser() -> argparse.ArgumentParser:
    """The command line of `python -m brorl.ops.preflight.cross_node`."""
    parser = argparse.ArgumentParser(
        prog="python -m brorl.ops.preflight.cross_node", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    parser.add_argument("--port", type=int, default=29571)
    parser.add_argument("--mb", type=int, default=256, help="size of the all-reduced tensor (MiB)")
    parser.add_argument("--out", type=Path, default=None, help="rank 0 writes the result here")
    parser.add_argument("--ray-head-port", type=int, default=RAY_HEAD_PORT)
    parser.add_argument("--ray-worker-ports", type=int, nargs=2, default=RAY_WORKER_PORTS, metavar=("MIN", "MAX"))
    return parser


def _nccl_debug_file(backend: str) -> Path | None:
    """The file NCCL will write its INFO lines to (set in its environment), or None with gloo."""
    if backend != "nccl":
        return None
    # NCCL reads these when it initialises, i.e. at the first collective
    debug_file = Path(tempfile.gettempdir()) / f"brorl_nccl_{os.getpid()}.log"
    os.environ.setdefault("NCCL_DEBUG", "INFO")
    os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
    os.environ.setdefault("NCCL_DEBUG_FILE", str(debug_file))
    return debug_file


def _timed_all_reduce(backend: str, mb: int, world: int) -> tuple[int, float, bool]:
    """The bytes all-reduced, the seconds of one all-reduce after a warm-up, and whether it summed every rank's ones."""
    import torch
    import torch.distributed as dist

    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("SLURM_LOCALID", 0)))
        device = "cuda"
    x = torch.ones(mb * 2**20 // 4, dtype=torch.float32, device=device)
    dist.all_reduce(x)  # warm-up: the communicators are built here
    x.fill_(1.0)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    dist.all_reduce(x)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return x.numel() * 4, seconds, bool((x == world).all())


def _ray_reach(rank: int, world: int, worker_ports: tuple[int, int], head_port: int) -> list[list[dict] | None]:
    """Every rank's reach results (from each node's first rank to every other node's Ray ports; [] elsewhere)."""
    import torch.distributed as dist

    # Ray's ports: the first rank of each node listens, every node's first rank connects to every other node's
    local_first = int(os.environ.get("SLURM_LOCALID", 0)) == 0
    sockets, ports = listen_ports(rank == 0, worker_ports, head_port) if local_first else ([], {})
    listening = [None] * world
    dist.all_gather_object(listening, {"address": own_address(), "ports": ports} if local_first else None)
    reached = []
    if local_first:
        me = own_address()
        for index, peer in enumerate(listening):
            if peer is not None and index != rank:
                reached.append({"from": me, "to": peer["address"], "results": reach(peer["address"], peer["ports"])})
    gathered = [None] * world
    dist.all_gather_object(gathered, reached)
    for sock in sockets:
        sock.close()
    return gathered


def _report(result: dict, out: Path | None) -> None:
    """Nothing: prints rank 0's result (and a warning where NCCL crosses the nodes over sockets), writes it to `out`."""
    print(("ok " if result["ok"] else "FAILED ") + json.dumps(result), flush=True)
    if result["nccl_transport"] == "Socket" and result["nodes"] > 1:
        print(
            "warning: NCCL crosses the nodes over sockets, not InfiniBand: check NCCL_IB_HCA / NCCL_SOCKET_IFNAME "
            "and the host's libibverbs (docs/cluster.md#prerequisites)",
            flush=True,
        )
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    debug_file = _nccl_debug_file(a.backend)
    import torch.distributed as dist

    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    nodes = int(os.environ.get("SLURM_STEP_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)
    address = master_address()
    dist.init_process_group(a.backend, init_method=f"tcp://{address}:{a.port}", rank=rank, world_size=world)
    nbytes, seconds, summed = _timed_all_reduce(a.backend, a.mb, world)
    transport = None
    if debug_file is not None and debug_file.is_file():
        transport = nccl_transport(debug_file.read_text(errors="replace"))
    gathered = _ray_reach(rank, world, tuple(a.ray_worker_ports), a.ray_head_port)
    dist.destroy_process_group()
    problems = ray_port_problems([entry for part in gathered for entry in part or []])
    ok = summed and not problems
    if rank == 0:
        result = {
            "ok": ok,
            "all_reduce_ok": summed,
            "nccl_transport": transport,  # null with gloo, or where NCCL wrote no INFO line
            "ray_ports": {
                "checked": sum(len(e["results"]) for part in gathered for e in part or []),
                "problems": problems,
            },
            "backend": a.backend,
            "nodes": nodes,
            "ranks": world,
            "master": address,
            "mib": a.mb,
            "seconds": seconds,
            "bus_bandwidth_gbs": bus_bandwidth_gbs(nbytes, seconds, world),
        }
        _report(result, a.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
