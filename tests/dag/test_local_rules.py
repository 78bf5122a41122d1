"""Which rules run on the machine of the Snakemake driver (local rules): at paper scale the bookkeeping rules that
add up to CPU-hours (693 summarize_evaluation jobs, 32 export_checkpoint hashes) are Slurm CPU jobs, so nothing
heavy runs on a login node; at tiny scale they stay local, so the CI's Slurm tests and the demo do not grow."""

from __future__ import annotations

import pytest
from helpers import CONFIG, TINY, workflow_query


def local_rules(tmp_path, *configfiles) -> set[str]:
    """The local rules of the workflow parsed with these config files (Snakemake's own API)."""
    return set(workflow_query(tmp_path, "sorted(wf._localrules)", *configfiles))


@pytest.mark.workflow
def test_heavy_bookkeeping_is_a_slurm_job_at_paper_scale_and_local_at_tiny_scale(tmp_path):
    heavy = {"summarize_evaluation", "export_checkpoint"}
    paper = local_rules(tmp_path / "paper", CONFIG)
    assert not heavy & paper and {"collect_evaluation", "download_base_model", "all"} <= paper
    assert heavy <= local_rules(tmp_path / "tiny", CONFIG, TINY)
