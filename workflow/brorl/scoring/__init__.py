"""Verifiers shared by evaluation and the training reward: ``score(item, response) -> Score``.

``item`` is a normalized benchmark record (brorl.benchmarks.records); its ``scorer`` field picks the verifier.
``score_batch`` scores many responses in worker processes with a hard timeout per call, enforced from outside
the worker, and returns one Score per input, in order: nothing is dropped, a crash or timeout is a Score with
its reason.
"""

from __future__ import annotations

from .. import lazy_exports

# loaded on first use: a module that needs one verifier's helpers (brorl.scoring.reasoning_gym's audit of the frozen
# Reasoning Gym sets) runs neither the dispatch table nor the pool, nor reruns when they change
# (docs/cluster.md#rerun-policy)
_HOMES = {
    "SCORERS": "dispatch",
    "Score": "result",
    "ScoringPool": "pool",
    "failed": "result",
    "score": "dispatch",
    "score_batch": "pool",
    "scorer_of": "dispatch",
}
__all__, __getattr__ = lazy_exports(__name__, _HOMES)
