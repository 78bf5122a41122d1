"""Stopping a training job at a step boundary before Slurm ends it: the time limit ahead, and preemption.

  the time limit  after each saved step the runner reads its job's end time from Slurm (squeue %e, so a limit
                  changed with `scontrol update` counts) and stops when what is left is less than the longest step
                  and the longest save seen in this job plus MARGIN_S: the step it would start could not be saved
  SIGTERM         preemption, cancellation, a requeue, or the time limit itself: Slurm sends SIGKILL after the
                  site's GraceTime (or KillWait), so the step under way is saved only if it ends within that time;
                  otherwise the job dies and its retry resumes from the last save

The job then exits with STOP_EXIT: Snakemake's retry (the profile's `retries`) or Slurm's requeue resumes from the
saved step. Why not sbatch --signal (a warning signal before the limit): without `B:` Slurm sends it to every job
step, which holds Snakemake's own jobstep process in a one-node job (`srun -n1`) and Ray's node processes, and ends
them; with `B:` only the batch shell gets it, which it ends, failing the job (both seen on the local Slurm,
docs/cluster.md#a-run-that-lasts-weeks). Neither reaches the runner.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping

STOP_EXIT = 75  # EX_TEMPFAIL: stopped at a step boundary; a retry resumes from the saved step
MARGIN_S = 300.0  # beyond one step and one save: the manifest, the exports' hashes, Slurm's own teardown
QUERY_EVERY_S = 5.0  # read the end time at most this often (steps of the tiny runs take about a second)


class Stopped(RuntimeError):
    """The job stopped at a step boundary (exit status STOP_EXIT)."""


def parse_end_time(text: str) -> float | None:
    """squeue's %e (local time, 2026-12-04T23:23:58) as epoch seconds; None for N/A, Unknown or no limit."""
    text = text.strip()
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def too_close(left_s: float, longest_step_s: float, longest_save_s: float, margin_s: float = MARGIN_S) -> bool:
    """Whether a step started now could not be saved before the limit (pure)."""
    return left_s < longest_step_s + longest_save_s + margin_s


def slurm_end_time(env: Mapping[str, str] = os.environ) -> float | None:
    """This job's end time from Slurm (None outside Slurm, or without a limit)."""
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    squeue = shutil.which("squeue")
    if not job or squeue is None:
        return None
    proc = subprocess.run([squeue, "-h", "-j", job, "-o", "%e"], capture_output=True, text=True, timeout=60)
    return parse_end_time(proc.stdout) if proc.returncode == 0 else None


class StopRequests:
    """`with StopRequests() as stop:` turns SIGTERM into a stop at the next step boundary; after each saved step
    the engine calls `stop.after_step(step_s, save_s)`, which returns why to stop now (None: go on)."""

    def __init__(self, end_time: Callable[[], float | None] = slurm_end_time, margin_s: float = MARGIN_S) -> None:
        self.reason: str | None = None
        self._end_time, self._margin = end_time, margin_s
        self._longest_step = self._longest_save = 0.0
        self._queried, self._end = -float("inf"), None
        self._previous = None

    def _handle(self, signum, frame) -> None:
        if self.reason is None:
            self.reason = "SIGTERM (preemption, a requeue or cancellation)"
            print(f"stop request: {self.reason}; stopping once the step under way is saved", flush=True)

    def after_step(self, step_s: float, save_s: float) -> str | None:
        self._longest_step = max(self._longest_step, step_s)
        self._longest_save = max(self._longest_save, save_s)
        now = time.time()
        if self.reason is None and now - self._queried >= QUERY_EVERY_S:
            self._queried, self._end = now, self._end_time()
        if self.reason is None and self._end is not None:
            left = self._end - now
            if too_close(left, self._longest_step, self._longest_save, self._margin):
                self.reason = (
                    f"the time limit ({left:.0f} s left; the longest step took {self._longest_step:.0f} s and the "
                    f"longest save {self._longest_save:.0f} s)"
                )
        return self.reason

    def __enter__(self) -> StopRequests:
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGTERM, self._previous)
