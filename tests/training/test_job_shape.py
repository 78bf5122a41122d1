"""A training job's shape from one source (brorl.training.job_shape): the rule's own nodes and tasks from
training.cluster, and what a profile may not contradict."""

from __future__ import annotations

import copy

from brorl.config import load_yaml_config
from brorl.training.job_shape import profile_shape_problem, train_job_layout, train_job_resources
from helpers import CONFIG


def test_the_job_asks_for_training_cluster_nodes_and_a_task_each():
    paper = load_yaml_config(CONFIG)
    assert train_job_resources(paper) == {"nodes": 8, "tasks": 8}
    embedded = copy.deepcopy(paper)
    embedded["training"]["engine"] = "embedded"
    assert train_job_resources(embedded) == {"nodes": 1, "tasks": 1}  # one process, whatever the cluster block says


def test_a_profile_may_restate_the_shape_but_not_contradict_it():
    paper = load_yaml_config(CONFIG)
    assert profile_shape_problem(None, paper, "p") == ""
    assert profile_shape_problem({"nodes": 8, "tasks": "8", "gres": "gpu:h100:8"}, paper, "p") == ""
    assert "sets train_ppo's tasks to 2, but training.cluster.nodes makes it 8" in profile_shape_problem(
        {"tasks": 2}, paper, "p"
    )
    assert "asks 4 GPUs per training node" in profile_shape_problem({"gres": "gpu:4"}, paper, "p")
    rehearsal = copy.deepcopy(paper)
    rehearsal["training"]["cluster"]["device"] = "cpu"  # logical Ray GPUs: the gres is not the config's to judge
    assert profile_shape_problem({"gres": "gpu:h100:1"}, rehearsal, "p") == ""


def test_only_multi_node_jobs_ask_for_mpi_and_a_profile_may_not_set_it():
    """snakemake-executor-plugin-slurm 2.8.0 refuses an MPI job of one task at submission (docs/gpu-assumptions.md
    row S-mpi-one-task): the one-node preset and the embedded engine go without."""
    paper = load_yaml_config(CONFIG)
    assert train_job_layout(paper) == {"mpi": "srun"}
    one_node = copy.deepcopy(paper)
    one_node["training"]["cluster"]["nodes"] = 1
    assert train_job_layout(one_node) == {}
    embedded = copy.deepcopy(paper)
    embedded["training"]["engine"] = "embedded"
    assert train_job_layout(embedded) == {}
    assert "remove mpi from the profile's train_ppo settings" in profile_shape_problem({"mpi": "srun"}, paper, "p")
