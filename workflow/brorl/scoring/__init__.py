"""Verifiers shared by evaluation and the training reward: ``score(item, response) -> Score``.

``item`` is a normalized benchmark record (brorl.benchmarks.records); its ``scorer`` field picks the verifier.
``score_batch`` scores many responses in worker processes with a hard timeout per call, enforced from outside
the worker, and returns one Score per input, in order: nothing is dropped, a crash or timeout is a Score with
its reason.
"""

from __future__ import annotations

from .dispatch import SCORERS, score, scorer_of
from .pool import ScoringPool, score_batch
from .result import Score, failed

__all__ = ["SCORERS", "Score", "ScoringPool", "failed", "score", "score_batch", "scorer_of"]
