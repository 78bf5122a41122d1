"""Ending a sandbox and everything it started: its process group (under bwrap, the pid namespace's init first) and,
when it ran as a private user id, every process of that user (brorl.scoring.sandbox)."""

from __future__ import annotations

import os
import signal
import subprocess


def children(pid: int) -> list[int]:
    """The pids of the child processes of `pid` (of all its threads), from /proc; [] once it is gone."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except (OSError, ValueError):
        pass
    return kids


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the sandbox. Under bwrap, first the pid namespace's init (the child of the outer bwrap), which takes the
    whole namespace with it and is reaped by the outer bwrap; killing the outer bwrap first would orphan it, and it
    would stay a zombie where the container's pid 1 does not reap."""
    if proc.poll() is not None:
        return
    for kid in children(proc.pid):
        try:
            os.kill(kid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(0.5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_uid(uid: int) -> None:
    """kill(-1, SIGKILL) as `uid`: every process of that (private) user."""
    try:
        subprocess.run(["kill", "-9", "-1"], user=uid, group=uid, extra_groups=[], capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        pass
