"""The batch scorer: hard timeouts from outside, crashes recorded, every input answered in order."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest
from brorl import scoring
from brorl.scoring import Score, score_batch

FAKES = """
import os, time
from brorl.scoring.result import Score

def echo(item, response):
    return Score(float(response == item["answer"]), response == item["answer"])

def behave(item, response):
    if response == "hang":
        time.sleep(600)
    if response == "die":
        os._exit(3)
    if response == "raise":
        raise RuntimeError("verifier bug")
    return Score(1.0, True)
"""


@pytest.fixture()
def fake_scorers(tmp_path, monkeypatch):
    (tmp_path / "fake_scorers.py").write_text(textwrap.dedent(FAKES))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(scoring.SCORERS, "echo", ("fake_scorers", "echo", 10.0))
    monkeypatch.setitem(scoring.SCORERS, "behave", ("fake_scorers", "behave", 10.0))
    yield
    sys.modules.pop("fake_scorers", None)


def test_every_input_is_answered_in_order(fake_scorers) -> None:
    pairs = [({"id": str(i), "scorer": "echo", "answer": str(i % 7)}, str(i % 5)) for i in range(400)]
    out = score_batch(pairs, workers=2)
    assert len(out) == len(pairs)
    assert [s.correct for s in out] == [str(i % 7) == str(i % 5) for i in range(400)]


def test_hang_crash_and_exception_are_recorded_not_fatal(fake_scorers) -> None:
    responses = ["ok", "hang", "ok", "die", "raise", "ok", "hang", "ok"]
    pairs = [({"id": str(i), "scorer": "behave"}, r) for i, r in enumerate(responses)]
    t0 = time.monotonic()
    out = score_batch(pairs, workers=2, timeout_s=1.0)
    assert time.monotonic() - t0 < 30.0  # the hangs were cut (two 1 s timeouts, restarts, slack for a loaded machine)
    assert [s.correct for s in out] == [r == "ok" for r in responses]
    assert out[1].error == "timeout after 1 s" and out[6].error == "timeout after 1 s"
    assert out[3].error == "worker died"
    assert out[4].error.startswith("crash: RuntimeError: verifier bug")
    assert all(s.score == 0.0 for s, r in zip(out, responses) if r != "ok")


def test_unknown_scorer_fails_before_any_work() -> None:
    with pytest.raises(ValueError, match="item 'x7': unknown scorer 'nope'"):
        score_batch([({"id": "x7", "scorer": "nope"}, "")])


def test_score_rejects_out_of_range_values() -> None:
    with pytest.raises(ValueError, match=r"score must lie in \[0, 1\]"):
        Score(1.5, True)


def test_empty_batch() -> None:
    assert score_batch([]) == []


def test_a_hang_inside_a_chunk_costs_only_that_call(fake_scorers) -> None:
    """Calls travel in chunks; the calls queued behind a hung or dying one are scored, not lost."""
    responses = ["ok"] * 300
    responses[40], responses[41], responses[170] = "hang", "die", "raise"
    pairs = [({"id": str(i), "scorer": "behave"}, r) for i, r in enumerate(responses)]
    out = score_batch(pairs, workers=2, timeout_s=1.0)
    assert [s.correct for s in out] == [r == "ok" for r in responses]
    assert (out[40].error, out[41].error) == ("timeout after 1 s", "worker died")
    assert out[170].error.startswith("crash: RuntimeError")


def test_a_pool_keeps_its_workers_across_calls_and_replaces_a_broken_one(fake_scorers) -> None:
    """A trainer scores every step with one pool: the same worker processes answer every call (no fork per call),
    a hung or dead worker is replaced inside the pool and the next call still gets every answer; close() ends them."""
    from brorl.scoring import ScoringPool

    echo = [({"id": str(i), "scorer": "echo", "answer": "a"}, "a" if i % 2 else "b") for i in range(40)]
    with ScoringPool(workers=2) as pool:
        pids = [s.proc.pid for s in pool.slots]
        for _ in range(3):
            assert [s.correct for s in score_batch(echo, pool=pool)] == [bool(i % 2) for i in range(40)]
        assert [s.proc.pid for s in pool.slots] == pids and all(s.proc.is_alive() for s in pool.slots)
        broken = [({"id": "h", "scorer": "behave"}, "hang"), ({"id": "d", "scorer": "behave"}, "die")]
        out = score_batch(broken + [({"id": "k", "scorer": "behave"}, "ok")], timeout_s=1.0, pool=pool)
        assert [s.error for s in out] == ["timeout after 1 s", "worker died", None]
        assert len(pool.slots) == 2 and all(s.proc.is_alive() for s in pool.slots)
        assert [s.correct for s in score_batch(echo, pool=pool)] == [bool(i % 2) for i in range(40)]
        workers = [s.proc for s in pool.slots]
    assert not any(p.is_alive() for p in workers) and pool.slots == []


def test_the_pool_benchmark_writes_both_times_and_their_ratio(tmp_path) -> None:
    """`make bench-scoring`'s reward-call comparison at a tiny size: both times and their ratio written."""
    import json

    from brorl.ops.speed.scoring_pool import main

    out = tmp_path / "pool.json"
    assert main(["--calls", "2", "--samples", "9", "--ballast-gb", "0.01", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["calls"] == 2 and report["samples_per_call"] == 9
    assert report["fresh_workers_s"] > 0 and report["kept_pool_s"] > 0
    assert report["ratio"] == report["fresh_workers_s"] / report["kept_pool_s"]
