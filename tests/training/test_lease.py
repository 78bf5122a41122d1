"""One trainer per run folder (brorl.training.lease) and stopping at a step boundary (brorl.training.stop), without
Slurm: the decision rules, the lease file's life, the driver's refusal and wait, the time-limit rule and SIGTERM. The same
through the real local Slurm: tests/cluster/test_slurm.py::test_a_training_job_survives_a_dead_driver_a_stop_and_a_requeue."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import pytest
from brorl.training.lease import (
    CONTENDER_GRACE_S,
    STALE_S,
    Holder,
    Lease,
    LeaseHeld,
    decide,
    driver_check,
    holder_alive,
    manifest_wait_s,
    read_lease,
    write_lease,
)
from brorl.training.stop import StopRequests, last_step_under_way, parse_end_time, too_close


def holder(job_id=None, host="node7", pid=12345, heartbeat=None, started=None, **kw) -> Holder:
    now = time.time()
    return Holder(job_id, host, pid, 0, started or now, now if heartbeat is None else heartbeat, **kw)


def test_decide_keeps_a_requeued_job_takes_over_a_dead_one_and_refuses_a_live_one():
    mine = holder("42")
    assert decide(None, mine, alive=False) == "free"
    assert decide(holder("42", host="other"), mine, alive=True) == "requeued"  # same Slurm job id, restarted
    assert decide(holder("41"), mine, alive=False) == "taken_over"
    assert decide(holder("41"), mine, alive=True) == "held"
    assert decide(holder(None), holder(None, host="x"), alive=True) == "held"  # outside Slurm: host and pid


def test_the_manifest_waits_until_the_last_refused_job_is_old_enough():
    now = 1000.0
    assert manifest_wait_s([], now) == 0.0
    assert manifest_wait_s([{"refused_at": now - 100}, {"refused_at": now - 250}], now) == CONTENDER_GRACE_S - 100
    assert manifest_wait_s([{"refused_at": now - CONTENDER_GRACE_S - 1}], now) == 0.0


def test_alive_asks_slurm_for_a_job_and_the_heartbeat_for_another_host():
    assert holder_alive(holder("7"), state=lambda job: "REQUEUED") is True  # requeued: still alive
    assert holder_alive(holder("7"), state=lambda job: None) is False
    assert holder_alive(holder("7"), state=lambda job: "COMPLETING") is False  # its processes have ended
    assert holder_alive(holder(None, heartbeat=time.time() - STALE_S - 1), state=lambda job: "RUNNING") is False
    assert holder_alive(holder(None, heartbeat=time.time()), state=lambda job: None) is True
    assert holder_alive(holder(None, host=socket.gethostname(), pid=os.getpid())) is True


def test_a_live_holder_refuses_the_job_and_records_it(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    write_lease(tmp_path, holder(None, host="elsewhere"))
    with pytest.raises(LeaseHeld, match=r"process 12345 on elsewhere \(segment 0, heartbeat \d+ s ago\) trains"):
        with Lease(tmp_path, 0):
            pytest.fail("trained beside a live holder")
    contenders = json.loads((tmp_path / "lease.json").read_text())["contenders"]
    assert [c["pid"] for c in contenders] == [os.getpid()] and read_lease(tmp_path).host == "elsewhere"


def test_a_dead_holder_is_taken_over_and_a_normal_end_gives_the_lease_back(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    write_lease(tmp_path, holder(None, host="elsewhere", heartbeat=time.time() - STALE_S - 5))
    said = []
    with Lease(tmp_path, 3, log=said.append):
        assert read_lease(tmp_path).pid == os.getpid() and read_lease(tmp_path).segment == 3
    assert "taken over from process 12345 on elsewhere" in said[0]
    assert not (tmp_path / "lease.json").exists()
    # a job that fails keeps it (a requeue of the same job keeps training; another job takes it over)
    with pytest.raises(RuntimeError), Lease(tmp_path, 3):
        raise RuntimeError("crash")
    assert read_lease(tmp_path).pid == os.getpid()
    (tmp_path / "lease.json").unlink()
    with Lease(tmp_path, 3) as lease:  # stopped before the segment's end: kept for a requeue of this job
        lease.keep()
    assert read_lease(tmp_path).pid == os.getpid()


def test_a_requeued_slurm_job_keeps_its_lease(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    first = holder("77", host="gpu03", started=123.0, contenders=({"refused_at": 5.0},))
    write_lease(tmp_path, first)
    said = []
    with Lease(tmp_path, 0, log=said.append) as lease:
        kept = read_lease(tmp_path)
        assert (kept.started, kept.contenders) == (123.0, ({"refused_at": 5.0},))
        lease.beat()
    assert said == [f"lease: kept by this job after a restart (Slurm job 77 on {socket.gethostname()})"]


def test_the_driver_refuses_names_the_job_or_waits_for_it(tmp_path):
    write_lease(tmp_path / "brorl_n8" / "run", holder("501", host="gpu01"))
    states = iter(["RUNNING", "RUNNING", None])
    message = driver_check(tmp_path, {"brorl_n8": [1]}, env={}, state=lambda job: "RUNNING")
    assert "arm brorl_n8 (segments to run: 1): Slurm job 501 on gpu01" in message and "scancel" in message
    assert driver_check(tmp_path, {"prorl_n8": [0]}, env={}, state=lambda job: "RUNNING") == ""  # another arm
    waited = []
    env = {"BRORL_TRAINERS": "wait"}
    assert driver_check(tmp_path, {"brorl_n8": [1]}, env, waited.append, 0.0, lambda job: next(states)) == ""
    assert len(waited) == 2 and "Slurm job 501" in waited[0]


def test_a_step_that_could_not_be_saved_before_the_limit_is_not_started():
    assert parse_end_time("2026-12-04T23:23:58") == time.mktime((2026, 12, 4, 23, 23, 58, 0, 0, -1))
    assert parse_end_time("N/A") is None and parse_end_time("Unknown\n") is None
    assert too_close(left_s=400, longest_step_s=60, longest_save_s=50) and not too_close(1000, 60, 50)
    end = [time.time() + 10_000]
    stop = StopRequests(end_time=lambda: end[0])
    assert stop.after_step(5.0, 1.0) is None
    end[0] = time.time() + 200  # `scontrol update TimeLimit=...`: read again at the next step
    stop._queried = -float("inf")
    assert "the time limit (" in stop.after_step(5.0, 1.0) and "longest step took 5 s" in stop.reason


def test_openrlhfs_step_under_way_is_the_last_when_the_one_after_could_not_be_saved():
    # steps of 600 s, saves of 60 s, margin 300 s: another step after this one needs 960 s once this one ends
    assert not last_step_under_way(left_s=2000, in_step_s=100, longest_step_s=600, longest_save_s=60)
    assert last_step_under_way(left_s=1400, in_step_s=100, longest_step_s=600, longest_save_s=60)  # 500 s + 960 s
    assert not last_step_under_way(left_s=1400, in_step_s=550, longest_step_s=600, longest_save_s=60)  # 50 s + 960 s
    # before any step finished in this job only the margin counts
    assert last_step_under_way(left_s=200, in_step_s=30, longest_step_s=0, longest_save_s=0)
    end = [time.time() + 10_000]
    stop = StopRequests(end_time=lambda: end[0])
    stop.observe(600.0, 60.0)
    assert stop.during_step(100.0) is None and stop.longest == (600.0, 60.0)
    end[0], stop._queried = time.time() + 1200, -float("inf")
    assert "the time limit (" in stop.during_step(100.0)


def test_sigterm_becomes_a_stop_at_the_next_step_boundary():
    before = signal.getsignal(signal.SIGTERM)
    with StopRequests(end_time=lambda: None) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        assert stop.after_step(1.0, 1.0) == "SIGTERM (preemption, a requeue or cancellation)"
    assert signal.getsignal(signal.SIGTERM) == before
