"""The segment runner's side of stopping OpenRLHF before the job's time limit (brorl.training.stop): on every poll
of a launch it reads the steps the job hook recorded (stop_hook), asks whether the step under way must be the
job's last, and if so writes the stop request the hook answers with a save at the end of that step. Once the hook
records the answered request, the launch can be stopped: its last step is fully saved."""

from __future__ import annotations

import time
from pathlib import Path

from ..run_folder import atomic_json
from ..stop import StopRequests
from .logs import read_hook_entries

STOP_STATUS = "stop request"  # how a launch stopped this way ended (launches.json)


class StopWatch:
    """One launch's stop requests. `done`: the last global step the trainer finished in this launch (at first the
    step it resumes from, 0 for a fresh run)."""

    def __init__(self, stop: StopRequests, request: Path, step_log_dir: Path, launch_id: str, resume_step: int) -> None:
        self.stop, self.request, self.step_log_dir, self.launch_id = stop, request, step_log_dir, launch_id
        self.done = resume_step
        self.since = self.boundary_t = time.time()
        self.requested_at: float | None = None
        self.answered: dict | None = None
        self._seen = 0
        request.unlink(missing_ok=True)  # a request of an earlier launch must not stop this one at its first step

    def check(self) -> dict | None:
        """The hook's record of the answered request once the trainer saved for it (stop the launch then), else
        None; writes the request when the step under way must be the last."""
        entries = read_hook_entries(self.step_log_dir, since=self.since)
        for entry in entries[self._seen :]:
            self.stop.observe(float(entry["step_s"] or 0.0), float(entry["call_s"]) if entry["saved"] else 0.0)
            self.boundary_t, self.done = float(entry["t"]), int(entry["global_step"])
            if entry["stop"] and self.answered is None:
                self.answered = entry
        self._seen = len(entries)
        if self.answered is not None:
            return self.answered
        if self.requested_at is None and self.stop.during_step(time.time() - self.boundary_t):
            self.requested_at = time.time()
            atomic_json(self.request, {"launch": self.launch_id, "reason": self.stop.reason, "t": self.requested_at})
            print(
                f"stop request: {self.stop.reason}; OpenRLHF saves at the end of the step under way (after global "
                f"step {self.done}) and the launch stops there",
                flush=True,
            )
        return None
