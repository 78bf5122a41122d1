"""STEM verifier (the SCP-116K family): the last \\boxed{} answer after </think>, graded like math.

A mathematical answer (a number, an expression, a quantity with units) is correct when the DeepScaleR grader or
math-verify accepts it (brorl.scoring.math). Science answers are often words ("exothermic", "\\text{NaCl}"): such a
gold is compared as text after ``normalize_text`` (wrappers such as \\text{} and \\mathrm{} removed, case, spaces and
a final full stop ignored), so a word answer is right only when it is the same words. ProRL judged STEM answers
with GPT-4o; no model judge is used here. Binary, like ProRL's STEM reward.
"""

from __future__ import annotations

import re

from .math import extract_final_answer, normalize_gold, score_math
from .result import Score

_WRAPPER = re.compile(r"\\(?:text|mathrm|textbf|mathbf|textit|operatorname)\s*\{([^{}]*)\}")
_SPACES = re.compile(r"(?:\\[,;: !]|~|\s)+")


def normalize_text(answer: str) -> str:
    """A word answer for comparison: LaTeX text wrappers and $ removed, lower case, single spaces, no final '.'."""
    text = answer
    while True:
        unwrapped = _WRAPPER.sub(r"\1", text)
        if unwrapped == text:
            break
        text = unwrapped
    text = _SPACES.sub(" ", text.replace("$", "")).strip().lower()
    return text.rstrip(".").strip()


def is_textual(gold: str) -> bool:
    """True for a gold made of words rather than mathematics (two letters in a row once LaTeX commands are gone)."""
    plain = re.sub(r"\\[A-Za-z]+", " ", normalize_text(gold))
    return re.search(r"[a-z]{2,}", plain) is not None


def score_stem(item: dict, response: str) -> Score:
    """1.0 when the final boxed answer equals a gold (math graders; text equality for word golds), else 0.0."""
    result = score_math(item, response)
    if result.correct or result.error:
        return result
    pred = extract_final_answer(response)
    words = [normalize_text(g) for g in normalize_gold(item["answer"]) if is_textual(g)]
    if pred is not None and normalize_text(pred) in words:
        return Score(1.0, True)
    return result
