"""The end of a dry run of the slurm profile (brorl.ops.plan.dry_run): one line per rule with its jobs' sbatch
requests, the software route, and the warnings again."""

from __future__ import annotations

from collections import Counter

from brorl.ops.plan.dry_run import summary

JOBS = [
    ("generate_samples", {"tmpdir": "/tmp", "mem_mb": 16384, "slurm_partition": "h100", "runtime": 360, "gpu": 1}),
    ("generate_samples", {"tmpdir": "/tmp", "mem_mb": 16384, "slurm_partition": "h100", "runtime": 360, "gpu": 8}),
    ("collect_units", {"tmpdir": "/tmp", "_cores": 1}),
    ("score_samples", {"tmpdir": "/tmp", "mem_mb": 32000, "slurm_partition": "cpu", "runtime": 180}),
]
WARNING = "1 hub source(s) of this run are not pinned:\n  - EricLu/SCP-116K@main (train_data.sources[stem].revision)"


def test_one_line_per_rule_with_each_size_counted_then_the_route_and_the_warnings():
    lines = summary(JOBS, Counter(scoring=1), [WARNING], "software: --sdm conda")
    assert (
        "  generate_samples: 2 job(s): slurm_partition=h100, gpu=1, mem_mb=16384, runtime=360 (1 jobs); "
        "slurm_partition=h100, gpu=8, mem_mb=16384, runtime=360 (1 jobs)"
    ) in lines
    assert "  collect_units: 1 job(s): (none)" in lines  # Snakemake's own bookkeeping is not a request
    assert "  score_samples: 1 job(s): slurm_partition=cpu, mem_mb=32000, runtime=180" in lines
    assert "  group scoring: 1 group job(s), one sbatch each for the member jobs above" in lines
    assert "software: --sdm conda" in lines
    assert lines[-1] == f"warning: {WARNING}"


def test_without_warnings_the_summary_ends_with_the_route():
    assert summary(JOBS[:1], Counter(), [], "software: none")[-1] == "software: none"
