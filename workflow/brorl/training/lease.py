"""One trainer per run folder: the lease `results/train/<arm>/run/lease.json`.

A training job takes the lease before any engine starts (before Ray, before vLLM) and keeps a heartbeat in it.
Who may train, decided by `decide` (pure):

  no lease, or our own Slurm job id      train (a requeued job, same id, keeps its lease: Slurm restarts it)
  a holder that is no longer alive       take it over, and say so in the job's log
  a live holder (another job)            refuse: exit before anything starts, naming the holder

Alive means: for a Slurm job, listed by squeue as pending, running, requeued or suspended (any state but completing),
since a requeued job keeps its id and comes back; outside Slurm, the holder's process exists on this host, or, from another
host, its heartbeat is younger than STALE_S.

A refused job is recorded in the lease (`contenders`). Snakemake removes the outputs of a failed job when it sees the
failure (a status check, up to a few minutes later): the holder therefore writes its segment manifest only once the
last contender's failure is CONTENDER_GRACE_S old (`manifest_wait_s`), so the cleanup of the refused job cannot
delete it. The driver refuses earlier still, before any sbatch (`live_holders`, hooks.smk).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .run_folder import atomic_json

LEASE_NAME = "lease.json"
HEARTBEAT_S = 60.0  # how often a holder rewrites its heartbeat
STALE_S = 600.0  # a holder outside Slurm, seen from another host, is dead once its heartbeat is this old
# the Slurm plugin's status checks back off to 180 s (profiles/slurm: slurm-status-command): a refused job's failure
# is seen, and its outputs cleaned up, within that, plus sacct's own delay
CONTENDER_GRACE_S = 300.0


class LeaseHeld(RuntimeError):
    """Another live job holds the run folder's lease: this job must not train."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or asks for) a run folder's lease."""

    job_id: str | None  # SLURM_JOB_ID; None outside Slurm
    host: str
    pid: int
    segment: int
    started: float
    heartbeat: float
    contenders: tuple[dict, ...] = field(default_factory=tuple)  # jobs refused while this one held the lease

    def who(self) -> str:
        """`Slurm job <id> on <host>`, or `process <pid> on <host>` outside Slurm."""
        return f"{f'Slurm job {self.job_id}' if self.job_id else f'process {self.pid}'} on {self.host}"

    def describe(self, now: float) -> str:
        return f"{self.who()} (segment {self.segment}, heartbeat {max(0.0, now - self.heartbeat):.0f} s ago)"


def me(segment: int, env: Mapping[str, str] = os.environ, now: float | None = None) -> Holder:
    """This process as a lease holder."""
    now = time.time() if now is None else now
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or None
    return Holder(job, socket.gethostname(), os.getpid(), segment, now, now)


def decide(current: Holder | None, mine: Holder, alive: bool) -> str:
    """What `mine` does with the lease `current` (pure): "free", "requeued" (our own job id: keep it), "taken_over"
    (the holder is dead) or "held" (another live holder: refuse)."""
    if current is None:
        return "free"
    if current.job_id is not None and current.job_id == mine.job_id:
        return "requeued"
    if current.job_id is None and mine.job_id is None and (current.host, current.pid) == (mine.host, mine.pid):
        return "requeued"
    return "held" if alive else "taken_over"


def manifest_wait_s(contenders: Sequence[Mapping[str, Any]], now: float, grace: float = CONTENDER_GRACE_S) -> float:
    """Seconds the holder waits before writing its manifest: until the last refused job's failure is `grace` old
    (module docstring); 0 without contenders."""
    if not contenders:
        return 0.0
    return max(0.0, max(float(c["refused_at"]) for c in contenders) + grace - now)


# ------------------------------------------------------------------------------------------------------- I/O
def lease_path(run_dir: Path) -> Path:
    return Path(run_dir) / LEASE_NAME


def read_lease(run_dir: Path) -> Holder | None:
    """The lease of a run folder (None: free). A lease that cannot be read is an error naming the file."""
    path = lease_path(run_dir)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        data["contenders"] = tuple(data.get("contenders") or ())
        return Holder(**data)
    except (ValueError, TypeError) as error:
        raise LeaseHeld(f"{path}: unreadable lease ({error}); delete it once no job trains this arm") from None


def write_lease(run_dir: Path, holder: Holder) -> None:
    atomic_json(lease_path(run_dir), {**asdict(holder), "contenders": list(holder.contenders)})


def slurm_state(job_id: str, squeue: str | None = None) -> str | None:
    """The job's state as squeue lists it (any state: the job is alive), or None when squeue no longer lists it.
    An squeue that fails for another reason raises (a lease is never taken over on a guess)."""
    squeue = squeue or shutil.which("squeue")
    if squeue is None:
        raise FileNotFoundError("squeue is not on PATH: cannot tell whether the lease holder still runs")
    proc = subprocess.run([squeue, "-h", "-j", str(job_id), "-o", "%T"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:  # purged from slurmctld's memory: long finished
            return None
        raise RuntimeError(f"squeue -j {job_id} failed: {proc.stderr.strip()}")
    return proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


State = Callable[[str], "str | None"]  # a Slurm job id -> its squeue state, None when no longer listed


def holder_alive(holder: Holder, now: float | None = None, state: State | None = None) -> bool:
    """Whether the lease's holder may still be training (module docstring). `state`: how to ask Slurm (default:
    squeue, when it is on PATH)."""
    now = time.time() if now is None else now
    if state is None and shutil.which("squeue"):
        state = slurm_state
    if holder.job_id is not None and state is not None:
        # COMPLETING: the job's processes have ended, Slurm is cleaning up its nodes
        return state(holder.job_id) not in (None, "COMPLETING")
    if holder.host == socket.gethostname():
        return pid_alive(holder.pid)
    return now - holder.heartbeat < STALE_S


class Lease:
    """The job side: `with Lease(run_dir, segment, log):` takes the lease (LeaseHeld if another live job holds
    it), keeps its heartbeat while the block runs, and gives it back when the block ends normally unless `keep()` was
    called. A job that stopped early (keep) or was killed (time limit, preemption, node failure) leaves it: a requeue
    of the same job keeps it, any other job takes it over once the holder is gone."""

    def __init__(self, run_dir: Path, segment: int, log: Callable[[str], None] = print) -> None:
        self.run_dir, self.segment, self.log = Path(run_dir), segment, log
        self.holder: Holder | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.kept = False  # keep(): the job stopped before the segment's end, the lease stays with its job id

    def acquire(self) -> Holder:
        mine = me(self.segment)
        current = read_lease(self.run_dir)
        verdict = decide(current, mine, current is not None and holder_alive(current))
        if verdict == "held":
            assert current is not None
            refused = {"job_id": mine.job_id, "host": mine.host, "pid": mine.pid, "refused_at": time.time()}
            write_lease(self.run_dir, replace(current, contenders=(*current.contenders, refused)))
            raise LeaseHeld(
                f"{lease_path(self.run_dir)}: {current.describe(time.time())} trains this arm; this job exits "
                "before anything starts. Wait for it to end, or cancel it (scancel), then run again"
            )
        if verdict == "requeued":
            assert current is not None
            mine = replace(mine, started=current.started, contenders=current.contenders)
            self.log(f"lease: kept by this job after a restart ({mine.who()})")
        elif verdict == "taken_over":
            assert current is not None
            self.log(f"lease: taken over from {current.describe(time.time())}, which is no longer running")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        write_lease(self.run_dir, mine)
        self.holder = mine
        return mine

    def beat(self) -> None:
        """Rewrite the heartbeat (contenders recorded meanwhile are kept)."""
        current = read_lease(self.run_dir)
        if self.holder is None or current is None or decide(current, self.holder, True) != "requeued":
            return  # not ours any more: never overwrite another holder
        write_lease(self.run_dir, replace(current, heartbeat=time.time()))

    def wait_for_contenders(self, sleep: Callable[[float], None] = time.sleep) -> None:
        """Before the manifest: let the cleanup of any refused job pass (manifest_wait_s)."""
        current = read_lease(self.run_dir)
        wait = manifest_wait_s(current.contenders if current else (), time.time())
        if wait > 0:
            self.log(f"lease: a refused job's failure is {CONTENDER_GRACE_S - wait:.0f} s old; waiting {wait:.0f} s")
            sleep(wait)

    def keep(self) -> None:
        """Do not give the lease back at the end of the block: the job stopped early (a time limit, preemption or a
        requeue); its job id keeps the lease if Slurm requeues it, another job takes it over once it is gone."""
        self.kept = True

    def release(self) -> None:
        current = read_lease(self.run_dir)
        if self.holder is not None and current is not None and decide(current, self.holder, True) == "requeued":
            lease_path(self.run_dir).unlink(missing_ok=True)
        self.holder = None

    def _heartbeats(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self.beat()
            except OSError as error:  # a full or flaky file system must not end training
                self.log(f"lease: heartbeat not written ({error})")

    def __enter__(self) -> Lease:
        self.acquire()
        self._thread = threading.Thread(target=self._heartbeats, name="lease-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind, error, trace) -> None:
        self._stop.set()
        if kind is None and not self.kept:
            self.release()
        # on an exception the job ends abnormally: the lease stays, to be kept by a requeue or taken over


def live_holders(train_dir: Path, arms_segments: Mapping[str, Sequence[int]], state: State | None = None) -> list[str]:
    """The driver's check before any sbatch: for each arm whose segments this run would train, the live holder of
    its lease, described (empty: no other trainer)."""
    now = time.time()
    found = []
    for arm in sorted(arms_segments):
        holder = read_lease(Path(train_dir) / arm / "run")
        if holder is None:
            continue
        if holder_alive(holder, now, state):
            segments = ", ".join(map(str, sorted(arms_segments[arm])))
            found.append(f"arm {arm} (segments to run: {segments}): {holder.describe(now)}")
    return found


WAIT_ENV = "BRORL_TRAINERS"  # "wait": the driver waits for live lease holders instead of refusing (the driver job)


def driver_check(
    train_dir: Path,
    arms_segments: Mapping[str, Sequence[int]],
    env: Mapping[str, str] = os.environ,
    log: Callable[[str], None] = print,
    poll_s: float = 60.0,
    state: State | None = None,
) -> str:
    """Before any sbatch: the refusal message while another job trains an arm this run would train (empty: none).
    With BRORL_TRAINERS=wait it waits for those jobs instead, saying which, and returns empty once they ended."""
    while True:
        held = live_holders(train_dir, arms_segments, state)
        if not held:
            return ""
        if env.get(WAIT_ENV) != "wait":
            return (
                "another job trains in this working directory, and this run would train the same arm(s):\n  "
                + "\n  ".join(held)
                + "\nA driver that was killed leaves its Slurm jobs running. Wait for the job to end (squeue -j <id>),"
                " or cancel it (scancel <id>), then run again; or set BRORL_TRAINERS=wait to wait here"
            )
        log("waiting for the training job(s) of a previous driver to end:\n  " + "\n  ".join(held))
        time.sleep(poll_s)
