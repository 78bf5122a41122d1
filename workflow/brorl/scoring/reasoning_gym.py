"""Reasoning Gym verifier: the library's answer extraction and the task's own ``score_answer``.

The item is a frozen record (brorl.benchmarks.records); the library entry is rebuilt from ``metadata.entry``
(tuples and sets restored), and the dataset from (task, size, seed), so each task scores with its own config.
Partial credit is kept as the score (ProRL reports the mean continuous score); correct means score == 1.
Tasks whose scorer is unsound (gold answers below 1, wrong answers at 1) are listed in each category's manifest
(``scorer_audit.unsound``); their scores are reported as the library gives them.
"""

from __future__ import annotations

from .result import Score, failed


def score_entry(item: dict, answer: str | None) -> Score:
    """Score an already extracted answer against a frozen record with the task's ``score_answer``."""
    from ..benchmarks.rg import dataset, decode

    if answer is None:
        return failed("no <answer>...</answer> in the response")
    meta = item["metadata"]
    try:
        ds = dataset(meta["task"], meta["size"], meta["seed"])
        value = float(ds.score_answer(answer=answer, entry=decode(meta["entry"])))
    except Exception as e:  # some scorers raise on malformed answers (prime_factorization: ValueError)
        return failed(f"score_answer raised {type(e).__name__}: {e}"[:200])
    value = min(1.0, max(0.0, value)) if value == value else 0.0
    return Score(value, value == 1.0)


def score_reasoning_gym(item: dict, response: str) -> Score:
    """Score one model response: the last <answer>...</answer> (library ``extract_answer``), then score_answer."""
    from reasoning_gym.utils import extract_answer

    return score_entry(item, extract_answer(response or ""))
