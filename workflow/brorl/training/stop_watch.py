"""`python -m brorl.training.stop_watch <pid>`: the watcher step of a training job (brorl.training.stop).

Runs as a one-task Slurm job step, which Slurm signals (the batch step, where the runner is, it does not): each
SIGUSR1 it gets is passed on to the runner `pid`. It ends when the runner ends, or on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from .lease import pid_alive


def main(argv: list[str] | None = None) -> None:
    pid = int((argv or sys.argv[1:])[0])

    def forward(signum, frame) -> None:
        print(f"stop_watch: SIGUSR1 -> runner {pid}", flush=True)
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGUSR1, forward)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"stop_watch: watching runner {pid} on {os.uname().nodename}", flush=True)
    while pid_alive(pid):
        time.sleep(2)


if __name__ == "__main__":
    main()
