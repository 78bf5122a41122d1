"""Which jobs become sbatch submissions on a cluster, in one place: the Snakefile's `localrules:` and the `group:` of
the scoring rules read this module, and `make plan` counts the paper's sbatch calls with it
(docs/cluster.md#how-many-submissions).

Pure: no Snakemake, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Seconds of bookkeeping, or the internet a compute node may lack: run by the driver on the login node, never
# submitted. (Downloads retry inside, with backoff: brorl.hub.retry.)
DRIVER_RULES = (
    "all",
    "prepare_data",
    "prepare_benchmark",
    "prepare_train_data",
    "download_base_model",
    "download_eval_model",
    "finish_training",
    "collect_evaluation",
    "track_evaluation",
    "select_probes",
    "analyse_probe",
    "plot_simulation",
    "tabulate_n_grid",
    "tabulate_simulation",
    "tabulate_throughput",
    "write_summary",
)
# Seconds per job at tiny scale, but CPU-hours at paper scale (32 export_checkpoint hashes of 3.5 GB): on the driver
# with the embedded engine (the CI's Slurm tests and the demo do not grow), Slurm CPU jobs with the cluster's.
DRIVER_RULES_AT_TINY_SCALE = ("prepare_prompts", "export_checkpoint")

# Snakemake groups (one sbatch per connected component of a group's jobs): a benchmark's summary rides in its scoring
# job. The two are one chain per (checkpoint, benchmark), so each group job holds one of each; Snakemake adds their
# runtimes and takes the larger of every other request (snakemake/jobs.py, GroupJob.resources). Groups are active
# only on a cluster; a grouped rule is never a local rule (snakemake/workflow.py, Workflow.is_local).
GROUPS = {"score_samples": "scoring", "summarize_evaluation": "scoring"}


def driver_rules(engine: str) -> tuple[str, ...]:
    """The rules the driver runs itself under this config's engine ("embedded" or "cluster")."""
    return DRIVER_RULES + (DRIVER_RULES_AT_TINY_SCALE if engine == "embedded" else ())


@dataclass(frozen=True)
class Submissions:
    """How a DAG's jobs reach Slurm."""

    jobs: int  # every job of the DAG
    on_driver: int  # local rules: never submitted
    in_groups: int  # jobs that ride in another job's group submission
    calls: int  # sbatch calls, one per job otherwise (first attempts; a retry is one more)


def submissions(jobs_per_rule: Mapping[str, int], engine: str) -> Submissions:
    """sbatch calls of a DAG with these jobs per rule: a local rule's jobs submit nothing, and each group submits
    once per component, as many components as its most numerous rule has jobs (the scoring group's chains)."""
    local = set(driver_rules(engine)) - set(GROUPS)
    on_driver = sum(n for rule, n in jobs_per_rule.items() if rule in local)
    in_groups = 0
    for group in set(GROUPS.values()):
        members = [jobs_per_rule.get(rule, 0) for rule, g in GROUPS.items() if g == group]
        in_groups += sum(members) - max(members, default=0)
    total = sum(jobs_per_rule.values())
    return Submissions(jobs=total, on_driver=on_driver, in_groups=in_groups, calls=total - on_driver - in_groups)


def group_requests(requests: Mapping[str, Mapping[str, object]]) -> dict[str, dict[str, object]]:
    """The sbatch request of each group job from its members' requests, as Snakemake forms it for a chain (one job
    per layer): runtimes add up, every other number is the largest, other values are the first member's. Members
    without a request are left out; a group none of whose members is given is absent."""
    merged: dict[str, dict[str, object]] = {}
    for rule, group in GROUPS.items():
        if rule not in requests:
            continue
        into = merged.setdefault(group, {})
        for key, value in requests[rule].items():
            if key not in into:
                into[key] = value
            elif key == "runtime":
                into[key] = float(into[key]) + float(value)  # type: ignore[arg-type]
            elif isinstance(value, (int, float)) and isinstance(into[key], (int, float)):
                into[key] = max(into[key], value)  # type: ignore[type-var]
    return merged
