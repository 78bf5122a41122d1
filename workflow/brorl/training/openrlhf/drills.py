"""Fault drills: the segment runner kills its own OpenRLHF launch on purpose, once, inside a step or inside a save,
or brings its Slurm job's time limit near, so that the rerun's resume is proven on the real layout (the GPU smoke
preset) and in the CPU rehearsal alike.

training.cluster.drills names the continued steps: `kill_in_step: k` fires while step k is being generated (step
k-1 fully saved, the reward log moving again, k not saved); `kill_in_save: k` fires while the full state of step k
is being written (its `global_step` folder exists, `latest` still names the step before). The job hook holds that
save open for `save_hold_s` (drill_hook.py), so the kill lands inside it on any file system. `time_limit_in_step: k`
fires while step k is being generated (the trainer finished step k-1): the runner lowers its own job's time limit
(`scontrol update TimeLimit=`, which Slurm lets a user do) to about one step, one save and half the stop margin
from now, and nothing else: its own time check (brorl.training.stop) then has to see the limit, ask the trainer for
a save at the end of step k and stop the job there (exit status 75), and the retry has to resume from that save.

A drill kills every process of the launch on every node with SIGKILL (what a node failure or the OOM killer does:
no teardown, no flush), then the runner itself: the job fails, and Snakemake's retry (or the user's rerun) resumes.
Each drill fires once per arm: `run/openrlhf/drills.json` records it, with what the runner saw when it fired,
before anything is killed.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..run_folder import atomic_json
from ..stop import LAUNCH_ENV, MARGIN_S, StopRequests, slurm_job, squeue_time

HOLD_ENV = "BRORL_DRILL_SAVE_HOLD"  # "<global step>:<seconds>": the job hook holds that step's save open
KILLS = ("kill_in_step", "kill_in_save")
KINDS = (*KILLS, "time_limit_in_step")


@dataclass(frozen=True)
class Drill:
    """One planned kill: `kind` (KINDS) at continued step `step`, which is global step `global_step` of the run."""

    kind: str
    step: int
    global_step: int


def pending_drills(
    drills: Mapping[str, Any], segment_steps: range, offset: int, fired: Sequence[Mapping[str, Any]]
) -> list[Drill]:
    """The drills of training.cluster.drills that fall in this segment and have not fired yet."""
    done = {(entry["kind"], entry["step"]) for entry in fired}
    return [
        Drill(kind, drills[kind], drills[kind] - offset)
        for kind in KINDS
        if drills.get(kind) is not None and drills[kind] in segment_steps and (kind, drills[kind]) not in done
    ]


def drill_problems(
    drills: Mapping[str, Any], continued_steps: int, resume_every: int, segment_ends: Collection[int] = ()
) -> list[str]:
    """Why training.cluster.drills cannot fire as asked for an arm of `continued_steps` steps whose segments end at
    `segment_ends` (empty: it can)."""
    problems = []
    for kind in KINDS:
        step = drills.get(kind)
        if step is None:
            continue
        if not 1 <= step <= continued_steps:
            problems.append(f"training.cluster.drills.{kind} = {step} is not a step of the arm (1..{continued_steps})")
        elif kind == "kill_in_step" and step < 2:
            problems.append("training.cluster.drills.kill_in_step must be >= 2: the kill lands after a saved step")
        elif kind == "time_limit_in_step" and step in segment_ends:
            problems.append(
                f"training.cluster.drills.time_limit_in_step = {step} ends a segment: a stop there is the segment's "
                "normal end; name a step that another step of its segment follows"
            )
    if any(drills.get(kind) is not None for kind in KILLS) and resume_every != 1:
        problems.append(
            "training.cluster.drills need training.cluster.resume_every: 1 (a full-state save every step), so the "
            "step before each drill is a state to resume from"
        )
    return problems


def due(drill: Drill, latest: int | None, reward_grew_since_latest: bool, saving: bool) -> bool:
    """Whether `drill` fires now. `latest`: the checkpoint's `latest` global step (for time_limit_in_step: the last
    step the trainer finished); `reward_grew_since_latest`: the reward log grew since `latest` took its value (the
    next step's generation is under way); `saving`: the full-state folder of the drill's step exists."""
    if latest != drill.global_step - 1:
        return False
    if drill.kind == "time_limit_in_step":
        return reward_grew_since_latest
    if drill.kind == "kill_in_step":
        return reward_grew_since_latest and not saving
    return saving


def read_fired(path: Path) -> list[dict]:
    return json.loads(path.read_text()) if path.is_file() else []


def record_fired(path: Path, drill: Drill, segment: int, launch: str, observed: Mapping[str, Any]) -> None:
    """Append the drill to drills.json (atomically) before anything is killed: it must not fire again."""
    entry = {**asdict(drill), "segment": segment, "launch": launch, "fired_at": time.time(), "observed": observed}
    atomic_json(path, [*read_fired(path), entry])


def kill_marked(launch_id: str, spare: int | None = None) -> int:
    """SIGKILL every process on this host whose environment carries LAUNCH_ENV=launch_id; returns how many."""
    mark = f"{LAUNCH_ENV}={launch_id}".encode()
    killed = 0
    for _ in range(3):  # children forked meanwhile
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) in (os.getpid(), spare):
                continue
            try:
                if mark in (proc / "environ").read_bytes().split(b"\0"):
                    os.kill(int(proc.name), signal.SIGKILL)
                    killed += 1
            except (OSError, ProcessLookupError):
                continue
        time.sleep(0.2)
    return killed


def kill_launch(launch_id: str, nodes: int, python: str = sys.executable) -> None:
    """Kill the launch on every node of the Slurm job (one srun task per node), or on this host outside Slurm."""
    if os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID"):
        subprocess.run(
            [
                "srun",
                "--overlap",
                f"--nodes={nodes}",
                "--ntasks-per-node=1",
                "--cpu-bind=none",
                "--job-name=brorl_drill",
                python,
                "-m",
                "brorl.training.openrlhf.drills",
                launch_id,
            ],
            timeout=300,
            check=False,
        )
    kill_marked(launch_id)  # this host in any case (the launcher and the driver run here)


def limit_minutes(elapsed_s: float, target_left_s: float) -> int:
    """The time limit (whole minutes: Slurm rounds seconds up) that leaves at least target_left_s, and less than a
    minute more, after elapsed_s of the job (pure)."""
    return math.ceil((elapsed_s + target_left_s) / 60)


def bring_time_limit_near(stop: StopRequests) -> dict[str, Any]:
    """Lower this Slurm job's time limit to leave one step, one save and half the stop margin (what
    time_limit_in_step does); returns what was done, for drills.json."""
    job, start = slurm_job(), squeue_time("%S")
    if job is None or start is None:
        return {"time_limit": None, "why": "not in a Slurm job: no time limit to bring near"}
    step_s, save_s = stop.longest
    minutes = limit_minutes(time.time() - start, step_s + save_s + MARGIN_S / 2)
    proc = subprocess.run(
        ["scontrol", "update", f"JobId={job}", f"TimeLimit={minutes}"], capture_output=True, text=True, timeout=60
    )
    return {"time_limit": minutes, "scontrol": proc.returncode, "error": proc.stderr.strip() or None, "job": job}


class DrillWatch:
    """The launch watcher's side of the drills: looked at on every poll, fires a due drill."""

    def __init__(
        self,
        pending: Sequence[Drill],
        ckpt: Path,
        record: Path,
        segment: int,
        launch: str,
        launch_id: str,
        nodes: int,
        stop: StopRequests | None = None,
    ) -> None:
        self.pending, self.ckpt, self.record, self.segment = list(pending), ckpt, record, segment
        self.launch, self.launch_id, self.nodes, self.stop = launch, launch_id, nodes, stop
        self._seen: dict[str, tuple[int | None, int]] = {}  # per progress mark: (its value, reward-log size then)

    def _grew(self, mark: str, value: int | None, reward_size: int) -> bool:
        """Whether the reward log grew since `mark` (latest, or the trainer's last finished step) took its value."""
        if mark not in self._seen or self._seen[mark][0] != value:
            self._seen[mark] = (value, reward_size)
        return reward_size > self._seen[mark][1]

    def check(self, reward_size: int, latest: int | None, done: int | None = None) -> None:
        """`done`: the last global step the trainer finished in this launch (StopWatch.done)."""
        grew = {"latest": self._grew("latest", latest, reward_size), "done": self._grew("done", done, reward_size)}
        for drill in list(self.pending):
            saving = (self.ckpt / "_actor" / f"global_step{drill.global_step}").is_dir()
            timed = drill.kind == "time_limit_in_step"
            mark = done if timed else latest
            if due(drill, mark, grew["done" if timed else "latest"], saving):
                observed = {"latest_global_step": latest, "saving": saving, "reward_log_bytes": reward_size}
                if timed:
                    self.pending.remove(drill)
                    observed["trainer_done_global_step"] = done
                    self.limit(drill, observed)
                else:
                    self.fire(drill, observed)

    def limit(self, drill: Drill, observed: dict[str, Any]) -> None:
        """Bring the job's time limit near and record it; the runner's own time check does the rest."""
        if self.stop is None:
            raise ValueError("a time_limit_in_step drill needs the runner's StopRequests")
        observed.update(bring_time_limit_near(self.stop))
        record_fired(self.record, drill, self.segment, self.launch, observed)
        print(f"drill: {drill.kind} at step {drill.step}: {observed}", flush=True)

    def fire(self, drill: Drill, observed: Mapping[str, Any]) -> None:
        """Record the drill, SIGKILL the launch on every node, then this process: the job fails as on a crash."""
        record_fired(self.record, drill, self.segment, self.launch, observed)
        print(f"drill: {drill.kind} at step {drill.step}: killing every process of the launch ({observed})", flush=True)
        kill_launch(self.launch_id, self.nodes)
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":  # the per-node task of kill_launch
    print(f"drill: killed {kill_marked(sys.argv[1])} processes of launch {sys.argv[1]} on {os.uname().nodename}")
