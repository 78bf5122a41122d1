"""Which rules run on the machine of the Snakemake driver (local rules) and which share a submission (groups), as
Snakemake itself reads them from the workflow: the lists in brorl.ops.run.submission, which the plan's count of sbatch calls
uses too. At paper scale the bookkeeping that adds up to CPU-hours (32 export_checkpoint hashes) is a Slurm CPU job,
so nothing heavy runs on a login node; at tiny scale it stays local, so the CI's Slurm tests and the demo do not
grow. A benchmark's summary rides in its scoring job at every scale."""

from __future__ import annotations

import pytest
import yaml
from brorl.ops.run.submission import GROUPS, Submissions, driver_rules, group_requests, submissions
from helpers import CONFIG, ROOT, TINY, workflow_query


def local_and_grouped(tmp_path, *configfiles) -> tuple[set[str], dict[str, str], set[str]]:
    """(local rules, rule -> group, every rule) of the workflow parsed with these config files (Snakemake's own
    API; `_group` because Snakemake hides groups outside a cluster or dry run)."""
    local, groups, rules = workflow_query(
        tmp_path,
        "[sorted(wf._localrules), {r.name: r._group for r in wf.rules if r._group}, sorted(r.name for r in wf.rules)]",
        *configfiles,
    )
    return set(local), groups, set(rules)


@pytest.mark.workflow
def test_snakemake_reads_the_local_rules_and_groups_of_brorl_submission(tmp_path):
    paper, paper_groups, rules = local_and_grouped(tmp_path / "paper", CONFIG)
    tiny, tiny_groups, _ = local_and_grouped(tmp_path / "tiny", CONFIG, TINY)
    assert paper == set(driver_rules("cluster")) and tiny == set(driver_rules("embedded"))
    assert paper_groups == tiny_groups == GROUPS
    assert paper | tiny | set(GROUPS) <= rules  # no name in the lists that the workflow lacks
    assert "export_checkpoint" in tiny - paper and {"collect_evaluation", "download_base_model", "all"} <= paper
    # a grouped rule is never local (snakemake/workflow.py, Workflow.is_local): the summary cannot be on both lists
    assert not set(GROUPS) & (paper | tiny)


def test_sbatch_calls_count_a_group_once_per_chain_and_local_rules_never():
    jobs = {"all": 1, "collect_evaluation": 1, "export_checkpoint": 4, "score_samples": 21, "summarize_evaluation": 21}
    assert submissions(jobs, "cluster") == Submissions(jobs=48, on_driver=2, in_groups=21, calls=25)
    assert submissions(jobs, "embedded") == Submissions(jobs=48, on_driver=6, in_groups=21, calls=21)
    assert submissions({"score_samples": 3}, "cluster").calls == 3  # a group with one member present


def test_a_group_job_asks_the_sum_of_its_runtimes_and_the_largest_of_the_rest():
    asked = {
        "score_samples": {"slurm_partition": "cpu", "runtime": 170, "mem_mb": 32000},
        "summarize_evaluation": {"slurm_partition": "cpu", "runtime": 10, "mem_mb": 2048},
        "generate_samples": {"runtime": 360},
    }
    assert group_requests(asked) == {"scoring": {"slurm_partition": "cpu", "runtime": 180.0, "mem_mb": 32000}}


def test_the_profile_submits_no_job_arrays():
    # snakemake-executor-plugin-slurm 2.8.0 leaves selected jobs of an array rule unsubmitted while more of the rule
    # are ready (docs/gpu-assumptions.md, S-array): groups instead (brorl.ops.run.submission)
    for name in ("slurm", "ci"):
        profile = yaml.safe_load((ROOT / "profiles" / name / "config.yaml").read_text())
        assert not {"slurm-array-jobs", "slurm-array-limit"} & set(profile), name
