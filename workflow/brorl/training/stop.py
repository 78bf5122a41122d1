"""Stop requests of a training job: the walltime warning and preemption, answered at the next step boundary.

  SIGUSR1  the walltime warning (the slurm profile's `--signal=USR1@<s>` on train_ppo: one step plus one save before
           the time limit), or a user's `scancel --signal=USR1 <job>`
  SIGTERM  preemption, cancellation or the time limit itself; Slurm sends SIGKILL after the site's GraceTime (or
           KillWait), so the step boundary is reached only if it comes within that time: otherwise the job dies and
           the retry resumes from the last save

The engine finishes the step under way, saves it, and the job exits with STOP_EXIT: Snakemake's retry (the profile's
`retries`) or Slurm's requeue resumes from that save. Slurm signals a job's steps, not its batch step, and a training
job's runner is its batch step (`mpi: srun`), so inside Slurm the runner starts a one-task watcher step
(`stop_watch`, `srun --overlap`) that passes each SIGUSR1 on to it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STOP_EXIT = 75  # EX_TEMPFAIL: stopped on request at a step boundary; a retry resumes from the saved step
SIGNALS = {signal.SIGUSR1: "the walltime warning (SIGUSR1)", signal.SIGTERM: "SIGTERM (preemption or cancellation)"}


class Stopped(RuntimeError):
    """The job stopped at a step boundary on a stop request (exit status STOP_EXIT)."""


class StopRequests:
    """`with StopRequests() as stop:` makes SIGUSR1 and SIGTERM set `stop.reason` (first one wins) instead of ending
    the process; the engine reads `stop.reason` after each saved step. Inside a Slurm job it also runs the watcher
    step (module docstring), logging to `watch_log`."""

    def __init__(self, watch_log: Path | None = None, env: dict | None = None) -> None:
        self.reason: str | None = None
        self.at: float | None = None
        self._previous: dict = {}
        self._watch: subprocess.Popen | None = None
        self._watch_log = watch_log
        self._env = os.environ if env is None else env

    def _handle(self, signum, frame) -> None:
        if self.reason is None:
            self.reason, self.at = SIGNALS[signal.Signals(signum)], time.time()
            print(f"stop request: {self.reason}; stopping after the step under way is saved", flush=True)

    def __enter__(self) -> StopRequests:
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        if self._env.get("SLURM_JOB_ID") and self._watch_log is not None:
            self._watch = start_watch(os.getpid(), self._watch_log, self._env)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if self._watch is not None and self._watch.poll() is None:
            self._watch.terminate()  # the srun client: ends the watcher step
            try:
                self._watch.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._watch.kill()


def start_watch(pid: int, log: Path, env: dict) -> subprocess.Popen:
    """The watcher step on this node: one task sharing the job's resources (--overlap), forwarding SIGUSR1 to `pid`."""
    node = env.get("SLURMD_NODENAME")
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [
        "srun",
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        "--cpu-bind=none",
        *([f"--nodelist={node}"] if node else []),
        "--job-name=brorl_stop_watch",
        f"--output={log}",
        sys.executable,
        "-m",
        "brorl.training.stop_watch",
        str(pid),
    ]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL)
