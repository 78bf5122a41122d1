"""The site checked before the first sbatch (brorl.ops.plan.site): partitions that exist, requests that fit, from what
`sinfo` and `scontrol` print (recorded here as a site of 4 GPU nodes with 2 TB and 112 CPUs each)."""

from __future__ import annotations

from brorl.ops.plan.profile import read_profile
from brorl.ops.plan.site import max_nodes, site_problems
from brorl.ops.run.run_profile import option_values
from helpers import ROOT

PROFILE = ROOT / "profiles" / "slurm"


def site(partitions: str = "gpu*\ncpu", nodes: str = "4", max_nodes_line: str = "MaxNodes=UNLIMITED"):
    def sinfo(args: list[str]) -> str | None:
        if args == ["-h", "-o", "%P"]:
            return partitions
        if args[-1] == "%D":
            return nodes if args[2] == "gpu" else "10"
        if args[2] == "gpu":
            return "2-00:00:00|2000000|112|gpu:h100:8(S:0-1)"
        return "2-00:00:00|500000|64|(null)"

    return sinfo, lambda args: f"PartitionName={args[2]} {max_nodes_line} Nodes=x"


def test_a_fitting_site_passes_and_each_shortfall_is_named(monkeypatch):
    monkeypatch.setenv("BRORL_SLURM_GPU_PARTITION", "gpu")
    profile = read_profile(PROFILE)
    sinfo, scontrol = site(nodes="8")
    assert site_problems(profile, {"train_ppo": {"nodes": 8, "tasks": 8}}, sinfo, scontrol) == []
    sinfo, scontrol = site(nodes="4")  # a partition of 4 nodes for 8-node training jobs
    problems = site_problems(profile, {"train_ppo": {"nodes": 8, "tasks": 8}}, sinfo, scontrol)
    assert problems == ["train_ppo on gpu: the job asks 8 nodes, the partition has 4"]
    sinfo, scontrol = site(nodes="16", max_nodes_line="MaxNodes=2")  # MaxNodes below the job
    problems = site_problems(profile, {"train_ppo": {"nodes": 8, "tasks": 8}}, sinfo, scontrol)
    assert "train_ppo on gpu: the job asks 8 nodes, MaxNodes is 2" in problems
    assert "preflight_cross_node on gpu" not in " ".join(problems)  # 2 nodes fit


def test_a_missing_partition_names_what_sinfo_lists(monkeypatch):
    monkeypatch.setenv("BRORL_SLURM_GPU_PARTITION", "h200")
    sinfo, scontrol = site()
    (problem,) = site_problems(read_profile(PROFILE), {"train_ppo": {"nodes": 8}}, sinfo, scontrol)
    assert problem.startswith("partition 'h200' (") and "sinfo lists: gpu, cpu" in problem


def test_no_sinfo_checks_nothing_and_configfiles_come_from_snakemakes_arguments():
    assert site_problems(read_profile(PROFILE), {}, lambda args: None) is None
    assert max_nodes("PartitionName=a MaxNodes=UNLIMITED") is None and max_nodes("MaxNodes=4 X=1") == 4
    args = ["--configfile", "a.yaml", "b.yaml", "--directory", "w", "-n"]
    assert option_values(args, ("--configfile", "--configfiles")) == ["a.yaml", "b.yaml"]


def test_the_scoring_group_is_checked_with_its_summed_runtime_and_the_profile_keeps_it_within_the_limit(monkeypatch):
    monkeypatch.setenv("BRORL_SLURM_GPU_PARTITION", "gpu")

    def short_cpu(limit: str):
        sinfo, scontrol = site()

        def shorter(args: list[str]) -> str | None:
            return f"{limit}|500000|64|(null)" if args[2:3] == ["cpu"] and args[-1] != "%D" else sinfo(args)

        return shorter, scontrol

    # a site whose CPU partition allows 3 h: score_samples (180 min) alone fits, score + summary (190) does not
    profile = read_profile(PROFILE)
    problems = site_problems(profile, {}, *short_cpu("3:00:00"))
    assert problems == ["group scoring on cpu: MaxTime 3:00:00 is below the 190.0 minutes asked for a first attempt"]
    # told that limit (max_runtime_min), the profile caps the scoring job so the group fits
    monkeypatch.setenv("BRORL_SLURM_MAX_RUNTIME_MIN", "180")
    assert site_problems(read_profile(PROFILE), {}, *short_cpu("3:00:00")) == []
