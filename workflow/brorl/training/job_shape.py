"""A training job's shape (Slurm nodes, tasks, GPUs per node) from one source: training.cluster. The rule train_ppo
asks for these nodes and tasks itself; a profile that sets its own for train_ppo must agree, or the workflow and
`make plan` refuse before anything is submitted (the launcher would refuse each job after its queue wait). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .recipe import training_engine


def train_job_nodes(config: Mapping[str, Any]) -> int:
    """Nodes of one train_ppo job: training.cluster.nodes for OpenRLHF (one Ray node per Slurm node), one for the
    embedded engine (one process)."""
    return int(config["training"]["cluster"]["nodes"]) if training_engine(dict(config)) == "cluster" else 1


def train_job_resources(config: Mapping[str, Any]) -> dict[str, int]:
    """What train_ppo asks Slurm for itself: its nodes, and one task per node (the launcher's srun starts one Ray
    node in each)."""
    nodes = train_job_nodes(config)
    return {"nodes": nodes, "tasks": nodes}


def train_job_layout(config: Mapping[str, Any]) -> dict[str, str]:
    """The Slurm plugin's `mpi` resource of train_ppo: set for a multi-node job, so that the jobstep plugin runs the
    rule in the batch step and the launcher's own srun starts one Ray node per Slurm node. A one-node job goes
    without: snakemake-executor-plugin-slurm 2.8.0 refuses an MPI job of one task at submission (`submit_string.py`:
    "For MPI jobs, 'tasks' must be greater than 1"), so its rule runs in the jobstep plugin's `srun -n1` step and
    the launcher's srun opens a step beside it (--overlap)."""
    return {"mpi": "srun"} if train_job_resources(config)["tasks"] > 1 else {}


def gres_gpus(gres: Any) -> int | None:
    """The GPU count of a per-node gres request (gpu:h100:8 -> 8), None when there is none."""
    match = re.fullmatch(r"gpu(?::[\w.]+)?:(\d+)", str(gres or ""))
    return int(match[1]) if match else None


def profile_shape_problem(profiled: Mapping[str, Any] | None, config: Mapping[str, Any], where: str) -> str:
    """Why the profile's own train_ppo settings (`profiled`: its set-resources entry) contradict training.cluster,
    naming both values; "" when they agree or the profile leaves them to the rule. `where` names the profile."""
    profiled = profiled or {}
    own = train_job_resources(config)
    cluster = config["training"]["cluster"]
    for key in ("nodes", "tasks"):
        if key in profiled and str(profiled[key]) != str(own[key]):
            return (
                f"{where} sets train_ppo's {key} to {profiled[key]}, but training.cluster.nodes makes it {own[key]}: "
                f"remove {key} from the profile's train_ppo settings (the rule asks for training.cluster.nodes), or "
                "set training.cluster.nodes in the config"
            )
    if "mpi" in profiled:
        return (
            f"{where} sets train_ppo's mpi; the rule sets it itself, for multi-node jobs only (the Slurm plugin "
            "refuses an MPI job of one task): remove mpi from the profile's train_ppo settings"
        )
    gpus = gres_gpus(profiled.get("gres"))
    # on GPUs only: the CPU rehearsal's "GPUs" are Ray's logical ones, not the Slurm node's gres
    on_gpus = training_engine(dict(config)) == "cluster" and cluster["device"] == "gpu"
    if on_gpus and gpus is not None and gpus != cluster["gpus_per_node"]:
        return (
            f"{where} asks {gpus} GPUs per training node (train_ppo's gres {profiled['gres']}), but "
            f"training.cluster.gpus_per_node is {cluster['gpus_per_node']}: set gpus_per_node in the profile's "
            "settings to the config's, or the config's to the nodes'"
        )
    return ""
