"""The cross-node all-reduce of the preflight (brorl.ops.preflight.cross_node): its parsing and arithmetic, and the real
thing on the local Slurm's two emulated nodes, one rank per node over srun, with gloo in place of NCCL (the
rendezvous at the first node's address, the ranks from Slurm, the result file are what a GPU site runs)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from brorl.ops.preflight.cross_node import (
    bus_bandwidth_gbs,
    listen_ports,
    nccl_transport,
    node_address,
    node_names,
    ray_port_problems,
    reach,
)
from helpers import ROOT, slurm_up


def test_the_first_node_and_its_address():
    assert node_names("gpu[01-02]", lambda text: ["gpu01", "gpu02"]) == ["gpu01", "gpu02"]
    assert node_names(" ", lambda text: ["x"]) == []
    line = "NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 NodeAddr=10.0.0.7 NodeHostName=gpu01 Version=22.05.8"
    assert node_address(line) == "10.0.0.7" and node_address("NodeName=gpu01") is None


def test_bus_bandwidth_is_nccl_tests_definition():
    # 1 GB in 0.1 s over 16 ranks: algorithm bandwidth 10 GB/s, bus bandwidth x 2 x 15 / 16
    assert bus_bandwidth_gbs(10**9, 0.1, 16) == pytest.approx(18.75)
    assert bus_bandwidth_gbs(10**9, 0.1, 1) == 0.0


def test_the_transport_nccl_chose():
    """NCCL's INIT line at NCCL_DEBUG=INFO (src/init.cc: INFO(NCCL_INIT, "Using network %s", ...))."""
    log = "gpu01:12:12 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\ngpu01:12:12 [0] NCCL INFO Using network IB\n"
    assert nccl_transport(log) == "IB"
    assert nccl_transport("gpu01:9:9 [0] NCCL INFO Using network Socket") == "Socket"
    assert nccl_transport("NCCL version 2.27.7+cuda13.0") is None


def test_a_closed_ray_port_is_named():
    """A listening port is reached; one nobody listens on is reported with the failing node pair and port."""
    sockets, ports = listen_ports(False, (29600, 29610), 0)
    try:
        assert set(ports) == {"Ray worker range 29600-29610", "ephemeral (Ray's node and object managers)"}
        assert set(reach("127.0.0.1", ports).values()) == {"ok"}
        closed = ports["ephemeral (Ray's node and object managers)"]
    finally:
        for sock in sockets:
            sock.close()
    results = reach("127.0.0.1", {"ephemeral": closed, "taken": -1}, timeout=2)
    problems = ray_port_problems([{"from": "gpu02", "to": "gpu01", "results": results}])
    assert len(problems) == 2 and problems[0].startswith(f"gpu02 -> gpu01 ephemeral: port {closed}"), problems
    assert problems[1] == "gpu02 -> gpu01 taken: in use on that node"


@pytest.mark.slurm
@pytest.mark.skipif(slurm_up() is not None, reason=str(slurm_up()))
def test_an_all_reduce_across_two_slurm_nodes(tmp_path):
    out = tmp_path / "cross_node.json"
    command = (
        f"srun --overlap --nodes=2 --ntasks-per-node=1 --cpu-bind=none env PYTHONPATH={ROOT / 'workflow'} "
        f"{sys.executable} -m brorl.ops.preflight.cross_node --backend gloo --mb 4 --port 29581 --out {out} "
        "--ray-head-port 29582 --ray-worker-ports 29583 29599"
    )
    job = subprocess.run(
        [
            "sbatch",
            "--wait",
            "-N",
            "2",
            "-p",
            "h100",
            "--ntasks-per-node=1",
            "-o",
            str(tmp_path / "job.log"),
            "--wrap",
            command,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = (tmp_path / "job.log").read_text() if (tmp_path / "job.log").exists() else ""
    assert job.returncode == 0, job.stdout + job.stderr + log
    result = json.loads(out.read_text())
    assert result["ok"] and result["nodes"] == 2 and result["ranks"] == 2 and result["backend"] == "gloo", result
    assert result["seconds"] > 0 and "\nok {" in "\n" + log, log
    # each node reached the other's Ray ports: the head's GCS, a worker-range and an ephemeral port (3 + 2)
    assert result["ray_ports"] == {"checked": 5, "problems": []} and result["nccl_transport"] is None, result
