"""Math verifier (ProRL / BroRL protocol): the last ``\\boxed{}`` after ``</think>``, judged correct when a
DeepScaleR-style grader OR math-verify accepts it against any of the item's gold answers.

* Extraction: the text after the last ``</think>``; a response that opened ``<think>`` but never closed it was
  truncated and scores 0 (error "truncated"); a response with neither tag is read whole. The answer is the content
  of the last ``\\boxed{...}`` (balanced braces), ``\\boxed x`` or ``\\fbox{...}``; none -> "no_final_answer".
* Golds: a list gold (Minerva, OlympiadBench) accepts any element; numbers become strings; e-notation golds
  (``4.5e33``) are rewritten ``4.5 \\times 10^{33}`` because math-verify reads ``e`` as Euler's number.
* ``deepscaler_equal``: our own normalised string comparison in the spirit of rllm's ``grade_answer_mathd`` /
  ``grade_answer_sympy`` plus a numeric comparison (relative tolerance 1e-6) by a small, bounded pure-Python
  evaluator of LaTeX arithmetic (no sympy, so no unbounded symbolic work: powers, factorials and sizes are capped).
* math-verify: gold parsed as ``\\boxed{gold}`` (cached per gold string), prediction parsed from ``\\boxed{pred}``
  with ``LatexExtractionConfig`` only, so unboxed text is never accepted. Its timeouts are signal.alarm based and
  work in a process's main thread (as in brorl.scoring's worker pool); elsewhere, or when ``set_timeouts(None,
  None)`` was called, they are off and the caller must enforce a hard timeout from outside.
* Two verdicts: ``correct`` is the ProRL grader's (DeepScaleR OR math-verify); ``Score.math_verify`` (the scores'
  ``correct_math_verify``) is math-verify's alone on the same answer, as lighteval / open-r1 judge, on our
  extraction. math-verify runs once per judged response, and the DeepScaleR comparison only where it rejects;
  plain integers on both sides are compared exactly for the ProRL verdict.

math_verify and sympy are imported lazily, on the first call that needs them. The parts: extract.py (the answer),
normalize.py (golds and the canonical string), latex_eval.py (the numeric evaluator), grade.py (the two graders
and math-verify's timeouts); this module holds ``score_math`` and re-exports the public names.
"""

from __future__ import annotations

import re

from ..reasoning import final_text
from ..result import Score
from .extract import extract_final_answer, last_boxed
from .grade import deepscaler_equal, math_verify_equal, set_timeouts
from .normalize import fix_e_notation, normalize_gold

__all__ = [
    "deepscaler_equal",
    "extract_final_answer",
    "fix_e_notation",
    "last_boxed",
    "math_verify_equal",
    "normalize_gold",
    "score_math",
    "set_timeouts",
]


def score_math(item: dict, response: str) -> Score:
    """1.0 if the final boxed answer matches any gold (DeepScaleR grader OR math-verify), else 0.0; ``math_verify``
    holds math-verify's verdict alone on the same answer (one math-verify call per judged response: the ProRL
    verdict reuses it when the DeepScaleR comparison rejects)."""
    if not isinstance(response, str):
        return _unjudged("no_final_answer")
    if final_text(response) is None:  # opened <think> and never closed it
        return _unjudged("truncated")
    pred = extract_final_answer(response)
    if pred is None:
        return _unjudged("no_final_answer")
    golds = normalize_gold(item["answer"])
    if not golds:
        return _unjudged("no_gold")
    math_verify = math_verify_equal(pred, golds)
    if _plain_integer(pred) and all(_plain_integer(g) for g in golds):
        # both sides are plain integers: equality is exact, and the DeepScaleR grader costs ~10 ms a call
        prorl = any(int(pred) == int(g) for g in golds)
    else:
        prorl = math_verify or any(deepscaler_equal(pred, g) for g in golds)
    return Score(float(prorl), prorl, None, math_verify)


def _unjudged(reason: str) -> Score:
    """A response neither grader could judge: 0 under both."""
    return Score(0.0, False, reason, False)


_INTEGER = re.compile(r"^\s*-?\d{1,30}\s*$")


def _plain_integer(text: str) -> bool:
    """A bare integer such as '17' or '-3' (no sign tricks, units, commas or LaTeX)."""
    return bool(_INTEGER.match(text))
