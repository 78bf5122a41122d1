"""The ending of `make dry-run` (brorl.ops.plan.dry_run): one line per rule with its jobs' sbatch requests, and the
warnings again."""

from __future__ import annotations

from brorl.ops.plan.dry_run import summary

OUTPUT = """warning: 1 hub source(s) of this run are not pinned to a 40-hex commit (...):
  - EricLu/SCP-116K@main (train_data.sources[stem].revision): ...
Pin each (...)
rule generate_samples:
    wildcards: arm=base, benchmark=aime24
    resources: tmpdir=/tmp, mem_mb=16384, disk=<TBD>, slurm_partition=h100, runtime=360, gpu=1, cpus_per_gpu=12

rule generate_samples:
    resources: tmpdir=/tmp, mem_mb=16384, slurm_partition=h100, runtime=360, gpu=8, cpus_per_gpu=12

localrule collect_units:
    resources: tmpdir=/tmp

[Fri Dec  4 20:29:21 2026] Group job scoring (jobs in lexicogr. order):

    [Fri Dec  4 20:29:21 2026]
    rule score_samples:
        wildcards: arm=base, step=3000, benchmark=rg_code
        resources: tmpdir=/tmp, mem_mb=32000, slurm_partition=cpu, runtime=180
Shell command:
        python -m brorl.evaluation score

    [Fri Dec  4 20:29:21 2026]
    rule summarize_evaluation:
        resources: tmpdir=/tmp, slurm_partition=cpu, runtime=10
This was a dry-run (flag -n)."""


def test_one_line_per_rule_with_each_size_counted_and_the_warnings_repeated():
    lines = summary(OUTPUT.splitlines())
    assert (
        "  generate_samples: 2 job(s): slurm_partition=h100, gpu=1, cpus_per_gpu=12, mem_mb=16384, runtime=360 (1 jobs); "
        "slurm_partition=h100, gpu=8, cpus_per_gpu=12, mem_mb=16384, runtime=360 (1 jobs)"
    ) in lines
    assert "  collect_units: 1 job(s): (none)" in lines
    # the members of a group job, each under its rule, and the group's submissions
    assert "  score_samples: 1 job(s): slurm_partition=cpu, mem_mb=32000, runtime=180" in lines
    assert "  summarize_evaluation: 1 job(s): slurm_partition=cpu, runtime=10" in lines
    assert "  group scoring: 1 group job(s), one sbatch each for the member jobs above" in lines
    assert lines[-2:] == OUTPUT.splitlines()[:2]  # the warning and its item, not the line after them
