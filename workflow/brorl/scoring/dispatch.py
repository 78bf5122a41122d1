"""Which verifier scores an item: the scorer table (name -> module, function, hard timeout) and ``score``, one
call in this process. The worker pool (pool.py) calls ``score`` in its workers.
"""

from __future__ import annotations

from importlib import import_module

from .result import Score, failed

# scorer name -> (module, function, default hard timeout in seconds for one call)
SCORERS: dict[str, tuple[str, str, float]] = {
    "math": ("brorl.scoring.math", "score_math", 15.0),
    "code": ("brorl.scoring.code", "score_code", 20.0),  # the program itself is capped at 5 s inside the sandbox
    "reasoning_gym": ("brorl.scoring.reasoning_gym", "score_reasoning_gym", 15.0),
    "stem": ("brorl.scoring.stem", "score_stem", 15.0),
    "instruction_following": ("brorl.scoring.instructions", "score_instructions", 15.0),
}


def scorer_of(item: dict) -> str:
    """The item's scorer name; a clear error naming the item when it is missing or unknown."""
    name = item.get("scorer")
    if name not in SCORERS:
        raise ValueError(f"item {item.get('id', '?')!r}: unknown scorer {name!r} (known: {', '.join(sorted(SCORERS))})")
    return name


def score(item: dict, response: str) -> Score:
    """Score one response in this process (no timeout: use score_batch for untrusted or slow cases).

    An item may carry ``scorer_options`` (keyword arguments of its verifier, e.g. the training reward's
    ``{"reward": "fraction", "time_limit_s": 5.0}`` for code).
    """
    module, function, _ = SCORERS[scorer_of(item)]
    try:
        return getattr(import_module(module), function)(item, response, **item.get("scorer_options", {}))
    except Exception as err:  # a verifier bug must not take the pipeline down: record it on the sample
        return failed(f"crash: {type(err).__name__}: {str(err)[:120]}")
