"""Timed generation runs on an Engine (brorl.generation.engine), the part shared by both throughput commands
(``python -m brorl.generation bench`` and ``python -m brorl.throughput bench``).

Every sample runs to exactly ``max_tokens`` (``ignore_eos=True``): layouts are compared on equal work, at the price
of not seeing how real response lengths vary. Warm-up calls are untimed. Before each call the engine is reseeded,
which also clears the prefix cache: sharing inside a call (what is measured) stays, reuse across calls does not.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Counters = Callable[[], dict[str, float]]
"""Reads monotone counters (e.g. vLLM's prefix-cache queries/hits); each run records their change."""


def timed_runs(
    engine,
    prompts: list[str],
    n: int,
    max_tokens: int,
    *,
    temperature: float,
    top_p: float,
    seed: int,
    warmup: int,
    repeats: int,
    counters: Counters | None = None,
) -> list[dict]:
    """``warmup`` untimed then ``repeats`` timed calls of ``engine.generate(prompts, n, ...)``.

    Returns one record per timed call: ``wall_s``, ``output_tokens`` and ``counters`` (the change of each counter
    over the call, empty without ``counters``). RuntimeError if any sample is not exactly ``max_tokens`` long.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    kwargs = dict(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, ignore_eos=True)
    for _ in range(warmup):
        engine.generate(prompts, seed=seed, **kwargs)
    expected = len(prompts) * n * max_tokens
    runs = []
    for r in range(repeats):
        engine.reseed(seed + 1 + r)
        before = counters() if counters else {}
        t0 = time.perf_counter()
        out = engine.generate(prompts, **kwargs)
        wall = time.perf_counter() - t0
        after = counters() if counters else {}
        tokens = sum(c.n_tokens for comps in out for c in comps)
        if tokens != expected:
            raise RuntimeError(
                f"{len(prompts)}x{n}: {tokens} output tokens, expected {expected} "
                f"({max_tokens} per sample with ignore_eos)"
            )
        runs.append(
            {"wall_s": wall, "output_tokens": tokens, "counters": {k: after[k] - before.get(k, 0) for k in after}}
        )
    return runs
