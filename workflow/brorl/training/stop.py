"""Stopping a training job at a step boundary before Slurm ends it: the time limit ahead, and preemption.

  the time limit  the runner reads its job's end time from Slurm (squeue %e, so a limit changed with `scontrol
                  update` counts). The embedded engine asks after each saved step and stops when what is left is less
                  than the longest step and the longest save seen in this job plus MARGIN_S: the step it would start
                  could not be saved. OpenRLHF's trainer cannot be asked between steps, so its runner asks while a
                  step is under way (during_step) and, when the step after it could not be saved, has the trainer
                  save at the end of the step under way (brorl.training.openrlhf.stop_hook) and stops there
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

# every process of one launch carries it: the stop hook answers requests naming it, a fault drill kills by it
LAUNCH_ENV = "BRORL_LAUNCH_ID"

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


def last_step_under_way(
    left_s: float, in_step_s: float, longest_step_s: float, longest_save_s: float, margin_s: float = MARGIN_S
) -> bool:
    """Whether the step under way (running for in_step_s) must be the job's last: the step after it could not be
    saved before the limit (pure). Before any step finished both longest times are 0: only the margin counts."""
    rest_of_this = max(longest_step_s - in_step_s, 0.0)
    return too_close(left_s - rest_of_this, longest_step_s, longest_save_s, margin_s)


def slurm_job(env: Mapping[str, str] = os.environ) -> str | None:
    return env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")


def squeue_time(field: str, env: Mapping[str, str] = os.environ) -> float | None:
    """A time field of this job from squeue (%e end, %S start) as epoch seconds; None outside Slurm or unset."""
    job, squeue = slurm_job(env), shutil.which("squeue")
    if not job or squeue is None:
        return None
    proc = subprocess.run([squeue, "-h", "-j", job, "-o", field], capture_output=True, text=True, timeout=60)
    return parse_end_time(proc.stdout) if proc.returncode == 0 else None


def slurm_end_time(env: Mapping[str, str] = os.environ) -> float | None:
    """This job's end time from Slurm (None outside Slurm, or without a limit)."""
    return squeue_time("%e", env)


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

    @property
    def longest(self) -> tuple[float, float]:
        """The longest step and the longest save seen in this job (seconds)."""
        return self._longest_step, self._longest_save

    def observe(self, step_s: float, save_s: float) -> None:
        """A finished step and its save (0 when not saved)."""
        self._longest_step = max(self._longest_step, step_s)
        self._longest_save = max(self._longest_save, save_s)

    def _left(self) -> float | None:
        now = time.time()
        if now - self._queried >= QUERY_EVERY_S:
            self._queried, self._end = now, self._end_time()
        return None if self._end is None else self._end - now

    def _time_limit(self, left: float) -> str:
        return (
            f"the time limit ({left:.0f} s left; the longest step took {self._longest_step:.0f} s and the "
            f"longest save {self._longest_save:.0f} s)"
        )

    def after_step(self, step_s: float, save_s: float) -> str | None:
        """At a saved step boundary: why not to start another step (None: go on)."""
        self.observe(step_s, save_s)
        left = self._left() if self.reason is None else None
        if left is not None and too_close(left, self._longest_step, self._longest_save, self._margin):
            self.reason = self._time_limit(left)
        return self.reason

    def during_step(self, in_step_s: float) -> str | None:
        """While a step runs (for in_step_s): why it must be the last of this job (None: go on)."""
        left = self._left() if self.reason is None else None
        if left is not None and last_step_under_way(
            left, in_step_s, self._longest_step, self._longest_save, self._margin
        ):
            self.reason = self._time_limit(left)
        return self.reason

    def __enter__(self) -> StopRequests:
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGTERM, self._previous)
