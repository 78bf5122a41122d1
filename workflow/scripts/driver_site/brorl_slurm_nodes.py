"""A node failure excludes only the nodes Slurm reports unhealthy, not every node of the failed job.

snakemake-executor-plugin-slurm 2.8.0 (``snakemake_executor_plugin_slurm/__init__.py``, the ``NODE_FAIL`` branch of
``check_active_jobs``, lines 1512-1526: "Always track the failed node so future submissions exclude it") adds the
whole ``sacct -X -o nodelist`` of a job that ended in NODE_FAIL to ``Executor._failed_nodes``, and every later sbatch
of the run carries ``--exclude=<that list>`` (``submit_string.py`` lines 154-157). For an 8-node training job that is
8 nodes, 7 of them healthy, for the rest of the run: retries and later GPU jobs can pend forever on a small partition.
No setting turns it off (``exclude_failed_nodes`` only seeds the list).

Slurm itself keeps DOWN, DRAINED and FAILING nodes out of scheduling, so the narrowest fix keeps the plugin's
behaviour for those and drops the healthy ones: ``_failed_nodes`` becomes a set whose ``add`` expands the hostlist
(``scontrol show hostnames``) and keeps the nodes ``sinfo`` reports in an unhealthy state at that moment. Nodes the
user seeds with ``--slurm-exclude-failed-nodes`` stay as given. When ``sinfo`` or ``scontrol`` cannot answer, the
plugin's own behaviour holds (every node of the list is excluded) and a warning says so. `make slurm-env` installs
the .pth file that imports this module in the driver environment (docs/cluster.md#after-a-failure).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable

from brorl_after_import import after_import

TARGET = "snakemake_executor_plugin_slurm"
# sinfo's long states (%T, man sinfo "NODE STATE CODES") of a node Slurm does not allocate: a failed node is one of
# these; a powered-down node of a cloud partition is not
UNHEALTHY = {"down", "drain", "drained", "draining", "fail", "failing", "inval", "unknown", "not_responding"}
FLAGS = "*~#!%$@^-"  # state suffixes; "*": the node does not respond


def _lines(command: list[str]) -> list[str] | None:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.split() if proc.returncode == 0 else None


def unhealthy_nodes(hostlist: str) -> list[str] | None:
    """The nodes of ``hostlist`` (``gpu[01-08]``) that Slurm reports unhealthy now; None when Slurm cannot say."""
    names = _lines(["scontrol", "show", "hostnames", hostlist])
    states = _lines(["sinfo", "-h", "-N", "-n", hostlist, "-o", "%N %T"])
    if not names or states is None:
        return None
    state_of = dict(zip(states[0::2], states[1::2]))  # a node in two partitions is listed twice, same state
    return [n for n in names if is_unhealthy(state_of.get(n, "unknown"))]


def is_unhealthy(state: str) -> bool:
    """Whether a sinfo long state (``idle``, ``down*``, ``drained``, ``mixed+drain``) keeps a node out of scheduling."""
    state = state.lower()
    return state.endswith("*") or any(part.rstrip(FLAGS) in UNHEALTHY for part in state.split("+"))


class UnhealthyOnly(set):
    """The plugin's ``_failed_nodes``: ``add`` keeps only the unhealthy nodes of the hostlist it is given."""

    def add(self, hostlist: str) -> None:
        nodes = unhealthy_nodes(hostlist)
        if nodes is None:
            print(
                f"warning: Slurm could not say which of {hostlist} failed: all of them are excluded from later jobs "
                "of this run (the plugin's behaviour)",
                file=sys.stderr,
            )
            nodes = [hostlist]
        self.update(nodes)

    def seed(self, nodes: Iterable[str]) -> UnhealthyOnly:
        self.update(nodes)  # what the user excluded, as given
        return self


def _patch(module) -> None:
    released = module.Executor.__post_init__

    def __post_init__(self, *args, **kwargs):
        released(self, *args, **kwargs)
        self._failed_nodes = UnhealthyOnly().seed(self._failed_nodes)

    module.Executor.__post_init__ = __post_init__


after_import(TARGET, _patch)
