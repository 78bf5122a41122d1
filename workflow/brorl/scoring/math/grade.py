"""The two graders: ``deepscaler_equal`` (normalised strings, tuples/intervals/sets element-wise, then numbers)
and ``math_verify_equal`` (math-verify on ``\\boxed{}`` with ``LatexExtractionConfig`` only, gold parses cached),
with math-verify's timeouts (signal.alarm based: on only in a process's main thread).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from .normalize import _normalize, bare_constants, fix_e_notation
from .numeric import _numeric_equal

# ---------------------------------------------------------------------------------------------------------------
# math-verify timeouts (seconds; None = off). Defaults are math-verify's own.
PARSING_TIMEOUT: int | None = 5
VERIFY_TIMEOUT: int | None = 5


def set_timeouts(parsing_timeout: int | None = 5, verify_timeout: int | None = 5) -> None:
    """Set math-verify's signal.alarm timeouts for this process; None turns one off (use an external timeout)."""
    global PARSING_TIMEOUT, VERIFY_TIMEOUT
    PARSING_TIMEOUT, VERIFY_TIMEOUT = parsing_timeout, verify_timeout


def _timeouts() -> tuple[int | None, int | None]:
    # signal.alarm only works in the main thread; math-verify raises elsewhere unless both are None
    if threading.current_thread() is not threading.main_thread():
        return None, None
    return PARSING_TIMEOUT, VERIFY_TIMEOUT


# ---------------------------------------------------------------------------------------------------------------
# DeepScaleR-style grader: tuples, intervals, sets

_BRACKETS = {"(": ")", "[": "]", "\\{": "\\}", "{": "}"}


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            cur.append(s[i : i + 2])
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _outer(s: str) -> tuple[str, str, str]:
    """(opening bracket, inner text, closing bracket) when s is one bracketed sequence, else ('', s, '')."""
    for open_, close in (("\\{", "\\}"), ("(", ")"), ("[", "]"), ("(", "]"), ("[", ")")):
        if s.startswith(open_) and s.endswith(close) and len(s) >= len(open_) + len(close):
            inner = s[len(open_) : len(s) - len(close)]
            if _bracket_balance(inner):
                return open_, inner, close
    return "", s, ""


def _bracket_balance(s: str) -> bool:
    depth = 0
    for c in s.replace("\\{", "(").replace("\\}", ")"):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _scalar_equal(pred: str, gold: str) -> bool:
    if pred == gold:
        return True
    return _numeric_equal(pred, gold)


def deepscaler_equal(pred: str, gold: str) -> bool:
    """DeepScaleR/Hendrycks-style equivalence: normalised strings, then tuples element-wise, then numbers."""
    try:
        if pred is None or gold is None:
            return False
        p, g = _normalize(fix_e_notation(str(pred))), _normalize(fix_e_notation(str(gold)))
        if not p or not g:
            return False
        if p == g:
            return True
        po, pi, pc = _outer(p)
        go, gi, gc = _outer(g)
        pparts, gparts = _split_top(pi), _split_top(gi)
        if len(gparts) > 1 or len(pparts) > 1:
            if (po, pc) != (go, gc) or len(pparts) != len(gparts):
                return False
            return all(_scalar_equal(a, b) for a, b in zip(pparts, gparts))
        if (po, pc) != (go, gc) and (po or go) and (po, pc) != ("(", ")") and (go, gc) != ("(", ")"):
            return False
        return _scalar_equal(p, g)
    except Exception:  # a grader bug must never crash scoring: treat as not equal
        return False


# ---------------------------------------------------------------------------------------------------------------
# math-verify

_MV: dict[str, Any] = {}


def _mv() -> dict[str, Any]:
    if not _MV:
        from math_verify import LatexExtractionConfig, parse, verify

        _MV.update(parse=parse, verify=verify, config=[LatexExtractionConfig()])
    return _MV


@functools.lru_cache(maxsize=65536)
def _parse_gold(gold: str, parsing_timeout: int | None) -> tuple:
    mv = _mv()
    latex = "\\boxed{" + bare_constants(gold) + "}"
    return tuple(mv["parse"](latex, mv["config"], parsing_timeout=parsing_timeout))


@functools.lru_cache(maxsize=8192)
def _parse_pred(pred: str, parsing_timeout: int | None) -> tuple:
    mv = _mv()
    latex = "\\boxed{" + bare_constants(pred) + "}"
    return tuple(mv["parse"](latex, mv["config"], parsing_timeout=parsing_timeout))


def math_verify_equal(pred: str, golds: list[str]) -> bool:
    """math-verify's verdict for a boxed prediction against any gold (LatexExtractionConfig only)."""
    parsing_timeout, verify_timeout = _timeouts()
    parsed_pred = _parse_pred(pred, parsing_timeout)
    if not parsed_pred:
        return False
    verify = _mv()["verify"]
    for gold in golds:
        parsed_gold = _parse_gold(gold, parsing_timeout)
        if parsed_gold and verify(list(parsed_gold), list(parsed_pred), timeout_seconds=verify_timeout):
            return True
    return False
