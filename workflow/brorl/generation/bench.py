"""Generation throughput for prompt x sample layouts (BroRL 4.3: many samples of few prompts vs the reverse).

Every sample runs to exactly ``max_tokens`` (``ignore_eos``), so layouts are compared on equal work. Per layout:
one warm-up call, then ``repeats`` timed calls, each after clearing the prefix cache (sharing inside a call, the
thing measured, stays; reuse across repeats does not). Reported: samples/s and output tokens/s (median, min, max).
The timing loop is brorl.generation.measure, shared with the Table 2 benchmark (``python -m brorl.throughput``).
"""

from __future__ import annotations

import statistics

BUILTIN_PROMPTS = [f"Question {i}: what is {7 * i + 3} plus {11 * i + 5}? Answer with a number." for i in range(1024)]


def parse_layout(text: str) -> tuple[int, int]:
    """'32x16' -> (32 prompts, 16 samples each)."""
    try:
        p, n = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"layout must look like 32x16 (prompts x samples), got {text!r}") from None
    if p < 1 or n < 1:
        raise ValueError(f"layout {text!r}: prompts and samples must be >= 1")
    return p, n


def _stats(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bench_layouts(
    engine,
    prompts: list[str],
    layouts: list[str],
    max_tokens: int,
    repeats: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
) -> list[dict]:
    """Time each layout on ``engine`` (one warm-up, then ``repeats`` timed calls; brorl.generation.measure);
    prompts are taken from ``prompts`` in order (cycled when too few)."""
    from .measure import timed_runs

    results = []
    for layout in layouts:
        p, n = parse_layout(layout)
        batch = [prompts[i % len(prompts)] for i in range(p)]
        runs = timed_runs(
            engine, batch, n, max_tokens, temperature=temperature, top_p=top_p, seed=seed, warmup=1, repeats=repeats
        )
        walls = [r["wall_s"] for r in runs]
        samples = p * n
        prompt_tokens = sum(len(ids) for ids in engine.prompt_token_ids(batch))
        results.append(
            {
                "layout": layout,
                "prompts": p,
                "n": n,
                "samples": samples,
                "max_tokens": max_tokens,
                "prompt_tokens": prompt_tokens,
                "prompt_tokens_without_prefix_sharing": prompt_tokens * n,
                "wall_s": walls,
                "samples_per_s": _stats([samples / w for w in walls]),
                "output_tokens_per_s": _stats([r["output_tokens"] / r["wall_s"] for r in runs]),
            }
        )
    return results
