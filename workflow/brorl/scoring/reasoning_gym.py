"""Reasoning Gym verifier: the library's answer extraction and the task's own ``score_answer``.

The item is a frozen record (brorl.benchmarks.records); the library entry is rebuilt from ``metadata.entry``
(tuples and sets restored), and the dataset from (task, size, seed), so each task scores with its own config.
Partial credit is kept as the score (ProRL reports the mean continuous score); correct means score == 1.
Tasks whose scorer is unsound (gold answers below 1, wrong answers at 1) are listed in each category's manifest
(``scorer_audit.unsound``, found by ``audit`` when the category is frozen); their scores are reported as the
library gives them.
"""

from __future__ import annotations

from .reasoning import final_text
from .result import NO_ANSWER, Score, failed

WRONG_PROBE = "definitely wrong"


def score_entry(item: dict, answer: str | None) -> Score:
    """Score an already extracted answer against a frozen record with the task's ``score_answer``."""
    from ..benchmarks.rg import dataset, decode

    if answer is None:
        return failed(NO_ANSWER)
    meta = item["metadata"]
    try:
        ds = dataset(meta["task"], meta["size"], meta["seed"])
        value = float(ds.score_answer(answer=answer, entry=decode(meta["entry"])))
    except Exception as e:  # some scorers raise on malformed answers (prime_factorization: ValueError)
        return failed(f"score_answer raised {type(e).__name__}: {e}"[:200])
    value = min(1.0, max(0.0, value)) if value == value else 0.0
    return Score(value, value == 1.0)


def score_reasoning_gym(item: dict, response: str) -> Score:
    """Score one model response: the last <answer>...</answer> (library ``extract_answer``) of the text after the
    reasoning block, then score_answer; a response cut off inside its reasoning scores 0, as in every family (a tagged
    draft inside ``<think>`` is never the answer)."""
    from reasoning_gym.utils import extract_answer

    text = final_text(response) if isinstance(response, str) else None
    if text is None:
        return failed("truncated")
    return score_entry(item, extract_answer(text))


def audit(records: list[dict]) -> dict:
    """Score every gold answer (and a wrong probe) from the frozen records; find the tasks whose scorer is unsound.

    Returns {"gold": {task: {items, gold_mean, gold_below_1}}, "unsound": {task: reason}, "no_gold": [tasks]}.
    """
    gold: dict = {}
    unsound: dict = {}
    no_gold: set = set()
    for rec in records:
        task = rec["metadata"]["task"]
        g = gold.setdefault(task, {"items": 0, "gold_sum": 0.0, "gold_below_1": 0, "wrong_scores_1": 0})
        g["items"] += 1
        if rec["answer"] is None:
            no_gold.add(task)
            continue
        score = score_entry(rec, rec["answer"])
        g["gold_sum"] += score.score
        g["gold_below_1"] += not score.correct
        if rec["answer"].strip() != WRONG_PROBE and score_entry(rec, WRONG_PROBE).correct:
            g["wrong_scores_1"] += 1
    for task, g in gold.items():
        scored = g["items"] - (g["items"] if task in no_gold else 0)
        g["gold_mean"] = round(g.pop("gold_sum") / scored, 6) if scored else None
        reasons = []
        if g["gold_below_1"]:
            reasons.append(f"gold answer scores below 1 on {g['gold_below_1']}/{g['items']} items")
        if g["wrong_scores_1"]:
            reasons.append(f"the answer {WRONG_PROBE!r} scores 1 on {g['wrong_scores_1']}/{g['items']} items")
        if reasons:
            unsound[task] = "; ".join(reasons)
    return {"gold": gold, "unsound": unsound, "no_gold": sorted(no_gold)}
