"""Score many (item, response) pairs in worker processes, each call under a hard timeout from outside.

math-verify's own timeout is a SIGALRM, which cannot stop C-level work, and a program or parser can hang or
crash its process. So the parent gives each worker one call at a time, waits for it until its deadline, and
kills and replaces a worker that overruns or dies. Every input gets exactly one Score back, in input order.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import deque
from multiprocessing.connection import Connection, wait

from tqdm import tqdm

from .result import Score, failed


def _worker(conn: Connection) -> None:
    """Worker loop: receive (index, item, response), send back (index, score fields)."""
    from . import score

    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        i, item, response = task
        s = score(item, response)
        conn.send((i, s.score, s.correct, s.error))


class _Slot:
    """One worker process, the call it is running and that call's deadline."""

    def __init__(self, ctx: mp.context.BaseContext) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.task: int | None = None
        self.deadline = float("inf")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()


def _context() -> mp.context.BaseContext:
    # fork starts a replacement worker in milliseconds; elsewhere spawn is the only safe choice
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


def score_batch(
    pairs: list[tuple[dict, str]], workers: int = 2, timeout_s: float | None = None, progress: bool = False
) -> list[Score]:
    """Score every (item, response) pair; ``timeout_s`` overrides each scorer's default hard timeout."""
    from . import SCORERS, scorer_of

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    limits = [timeout_s or SCORERS[scorer_of(item)][2] for item, _ in pairs]  # bad items fail before any work
    results: list[Score | None] = [None] * len(pairs)
    todo = deque(range(len(pairs)))
    ctx = _context()
    slots = [_Slot(ctx) for _ in range(min(workers, max(1, len(pairs))))]
    bar = tqdm(total=len(pairs), desc="scoring", unit="sample", disable=not progress)
    try:
        while todo or any(s.task is not None for s in slots):
            for s in slots:
                if s.task is None and todo:
                    i = todo.popleft()
                    s.task, s.deadline = i, time.monotonic() + limits[i]
                    s.conn.send((i, *pairs[i]))
            busy = [s for s in slots if s.task is not None]
            ready = wait([s.conn for s in busy], timeout=max(0.0, min(s.deadline for s in busy) - time.monotonic()))
            for k, s in enumerate(slots):
                if s.task is None:
                    continue
                outcome = _collect(s, ready)
                if outcome is None and time.monotonic() < s.deadline:
                    continue
                results[s.task] = outcome or failed(f"timeout after {limits[s.task]:g} s")
                bar.update(1)
                if outcome is None or outcome.error == "worker died":
                    s.kill()
                    slots[k] = _Slot(ctx)
                else:
                    s.task = None
    finally:
        bar.close()
        for s in slots:
            if s.proc.is_alive():
                try:
                    s.conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
            s.kill()
    return [r if r is not None else failed("not scored") for r in results]


def _collect(s: _Slot, ready: list) -> Score | None:
    """The finished call's Score, a 'worker died' Score, or None while the call is still running."""
    if s.conn not in ready:
        return None if s.proc.is_alive() else failed("worker died")
    try:
        i, value, correct, error = s.conn.recv()
    except (EOFError, OSError):
        return failed("worker died")
    assert i == s.task, "worker answered a call it was not given"
    return Score(value, correct, error)
