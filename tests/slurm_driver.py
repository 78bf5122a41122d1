"""`python -m snakemake` for the tests' real-Slurm runs, with the slurm executor plugin's status polling capped.

snakemake-executor-plugin-slurm 2.8.0 waits 10 s longer after every status check that finds no job finished, up to
180 s (a back-off for busy production clusters, hard-coded in the plugin). On the local Slurm of the tests, jobs of
seconds to minutes then sit finished for a minute or more before the driver looks again, and that waiting was most of
the Slurm tests' time. This wrapper caps the wait at BRORL_CI_MAX_POLL_S seconds (default 5) and runs Snakemake's own
command line unchanged: the jobs, their sbatch options, sacct and the plugin's reading of job states are the same.
`make rehearsal` and production runs use the plugin as released (docs/testing.md#the-slurm-tests).
"""

from __future__ import annotations

import os
import sys


def cap_status_polling(max_s: float) -> None:
    """Make the plugin's executor clamp every wait between status checks to at most ``max_s`` seconds."""
    from snakemake_executor_plugin_slurm import Executor

    released = Executor.next_seconds_between_status_checks  # the property of the remote-executor base class
    Executor.next_seconds_between_status_checks = property(
        released.fget, lambda self, value: released.fset(self, None if value is None else min(value, max_s))
    )


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # tests/ holds no module for Snakemake
    cap_status_polling(float(os.environ.get("BRORL_CI_MAX_POLL_S", "5")))
    from snakemake.cli import main

    sys.argv[0] = "snakemake"
    main()
