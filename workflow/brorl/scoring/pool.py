"""Score many (item, response) pairs in worker processes, each call under a hard timeout from outside.

math-verify's own timeout is a SIGALRM, which cannot stop C-level work, and a program or parser can hang or
crash its process. So the parent hands each worker a small chunk of calls, the worker answers call by call, and
the parent holds a deadline for the call in progress: a worker that overruns or dies is killed and replaced,
that call is recorded with its reason and the rest of its chunk goes back in the queue. Chunks keep the
parent's round trips from dominating fast verifiers. Every input gets exactly one Score back, in input order.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, wait

from tqdm import tqdm

from .dispatch import SCORERS, score, scorer_of
from .result import Score, failed

MAX_CHUNK = 16


def _worker(conn: Connection) -> None:
    """Worker loop: receive a chunk [(index, item, response), ...], send back (index, Score fields) per call."""
    while True:
        try:
            chunk = conn.recv()
        except EOFError:
            return
        if chunk is None:
            return
        for i, item, response in chunk:
            s = score(item, response)
            conn.send((i, s.score, s.correct, s.error, s.math_verify))


class _Slot:
    """One worker process, the calls it holds (the first one running) and that call's deadline."""

    def __init__(self, ctx: mp.context.BaseContext) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.calls: deque[int] = deque()
        self.deadline = float("inf")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()


def _context() -> mp.context.BaseContext:
    # fork starts a replacement worker in milliseconds; elsewhere spawn is the only safe choice
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


class ScoringPool:
    """Worker processes kept across score_batch calls. A trainer scores every step (and every dynamic-sampling
    refill): forking fresh workers for each call cost more than the scoring itself (the tiny ProRL arm spent 49 of its
    96 step-seconds in the reward). A worker that overruns or dies is still killed and replaced; close() ends them."""

    def __init__(self, workers: int = 2) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.ctx = _context()
        self.slots = [_Slot(self.ctx) for _ in range(workers)]

    def settle(self) -> None:
        """Replace every worker still holding calls (a batch that ended by an exception): its answers are stale."""
        for k, s in enumerate(self.slots):
            if s.calls or not s.proc.is_alive():
                s.kill()
                self.slots[k] = _Slot(self.ctx)

    def close(self) -> None:
        for s in self.slots:
            if s.proc.is_alive():
                try:
                    s.conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
            s.kill()
        self.slots = []

    def __enter__(self) -> ScoringPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def score_batch(
    pairs: list[tuple[dict, str]],
    workers: int = 2,
    timeout_s: float | None = None,
    progress: bool = False,
    pool: ScoringPool | None = None,
) -> list[Score]:
    """Score every (item, response) pair; ``timeout_s`` overrides each scorer's default hard timeout. ``pool``: its
    workers (kept for the next call) instead of ``workers`` fresh ones ended at return."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    limits = [timeout_s or SCORERS[scorer_of(item)][2] for item, _ in pairs]  # bad items fail before any work
    results: list[Score | None] = [None] * len(pairs)
    todo = deque(range(len(pairs)))
    own = pool is None
    if pool is None:
        pool = ScoringPool(min(workers, max(1, len(pairs))))
    ctx, slots = pool.ctx, pool.slots  # the pool's list: a replaced worker stays replaced for the next call
    bar = tqdm(total=len(pairs), desc="scoring", unit="sample", disable=not progress)

    def finish(i: int, outcome: Score) -> None:
        results[i] = outcome
        bar.update(1)

    try:
        while todo or any(s.calls for s in slots):
            for s in slots:
                if not s.calls and todo:
                    # Small chunks near the end keep both workers busy until the last call.
                    size = max(1, min(MAX_CHUNK, len(todo) // (4 * len(slots))))
                    s.calls.extend(todo.popleft() for _ in range(size))
                    s.conn.send([(i, *pairs[i]) for i in s.calls])
                    s.deadline = time.monotonic() + limits[s.calls[0]]
            busy = [s for s in slots if s.calls]
            ready = wait([s.conn for s in busy], timeout=max(0.0, min(s.deadline for s in busy) - time.monotonic()))
            for k, s in enumerate(slots):
                if not s.calls:
                    continue
                reason = _drain(s, ready, finish, limits)
                if reason is None and time.monotonic() >= s.deadline:
                    reason = f"timeout after {limits[s.calls[0]]:g} s"
                if reason is not None:
                    finish(s.calls.popleft(), failed(reason))
                    todo.extendleft(reversed(s.calls))  # the rest of the chunk is tried again
                    s.kill()
                    slots[k] = _Slot(ctx)
    finally:
        bar.close()
        if own:
            pool.close()
        else:
            pool.settle()
    return [r if r is not None else failed("not scored") for r in results]


def _drain(s: _Slot, ready: list, finish: Callable[[int, Score], None], limits: list[float]) -> str | None:
    """Take every answer the worker has sent, moving the deadline to the next call; 'worker died' on EOF."""
    if s.conn not in ready:
        return None if s.proc.is_alive() else "worker died"
    try:
        while s.calls and s.conn.poll():
            i, value, correct, error, math_verify = s.conn.recv()
            assert i == s.calls[0], "worker answered out of order"
            finish(s.calls.popleft(), Score(value, correct, error, math_verify))
            if s.calls:
                s.deadline = time.monotonic() + limits[s.calls[0]]
    except (EOFError, OSError):
        return "worker died"
    return None
