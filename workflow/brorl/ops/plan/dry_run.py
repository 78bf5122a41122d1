"""The end of a dry run of the slurm profile: Snakemake prints some 30,000 lines for the paper, with the run's
actionable warnings (unpinned hub sources, no smoke verdict) among the first ten. After them come one line per rule
(its jobs and the sbatch resources they ask for), the software route, and the warnings again. Pure: the jobs come
from Snakemake's log events (brorl.ops.run.driver), the warnings from the workflow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

# the requests sbatch gets, in this order (the rest of Snakemake's resources are its own bookkeeping)
SBATCH_KEYS = ("slurm_partition", "nodes", "tasks", "gres", "gpu", "cpus_per_task", "cpus_per_gpu", "mem_mb", "runtime")


def request(resources: Mapping[str, Any]) -> str:
    """One job's sbatch requests as "k=v, ..." ("(none)" for a job that asks for none)."""
    return ", ".join(f"{k}={resources[k]}" for k in SBATCH_KEYS if k in resources) or "(none)"


def rule_requests(jobs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Counter]:
    """rule -> Counter of its jobs' requests, in the order the rules first appear."""
    out: dict[str, Counter] = {}
    for rule, resources in jobs:
        out.setdefault(rule, Counter())[request(resources)] += 1
    return out


def summary(
    jobs: Iterable[tuple[str, Mapping[str, Any]]], groups: Mapping[str, int], warnings: list[str], software: str
) -> list[str]:
    """The lines printed after the dry run's own output."""
    out = ["", "per rule: jobs, and the sbatch resources they ask for"]
    for rule, sizes in rule_requests(jobs).items():
        requests = "; ".join(f"{text}" + (f" ({n} jobs)" if len(sizes) > 1 else "") for text, n in sizes.items())
        out.append(f"  {rule}: {sum(sizes.values())} job(s): {requests}")
    for group, n in groups.items():  # their members' requests merge: runtimes add up (brorl.ops.run.submission)
        out.append(f"  group {group}: {n} group job(s), one sbatch each for the member jobs above")
    out += ["", software]
    if warnings:
        out += ["", "warnings (repeated from the top of the output):", *(f"warning: {w}" for w in warnings)]
    return out
