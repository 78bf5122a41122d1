"""Numeric equivalence of two LaTeX expressions, the DeepScaleR-style grader's last comparison: both evaluated by
latex_eval (at a few sample points when they hold symbols) and equal within a relative tolerance of 1e-6;
integers are compared exactly.
"""

from __future__ import annotations

import cmath

from .latex_eval import _CONSTS, _FUNCS, _IGNORED, _Evaluator, _NotNumeric, _tokenize
from .normalize import _INT

_MAX_LEN = 400


def _symbols(tokens: list[str]) -> list[str]:
    names = set()
    for k, tok in enumerate(tokens):
        if tok in ("e", "i") or tok in _FUNCS or tok in _CONSTS or tok in _IGNORED:
            continue
        if (len(tok) == 1 and tok.isalpha()) or (tok.startswith("\\") and tok[1:].isalpha()):
            if tok in ("\\frac", "\\sqrt", "\\times", "\\cdot", "\\div", "\\infty", "\\pm", "\\ast"):
                continue
            name = tok
            if k + 2 < len(tokens) and tokens[k + 1] == "_":
                if tokens[k + 2] == "{":
                    j = k + 3
                    parts = []
                    while j < len(tokens) and tokens[j] != "}":
                        parts.append(tokens[j])
                        j += 1
                    name += "_" + "".join(parts)
                else:
                    name += "_" + tokens[k + 2]
            names.add(name)
    return sorted(names)


_SAMPLE_POINTS = (0.7316, 1.2891, 0.9137)


def _values(s: str, names: list[str]) -> list[complex] | None:
    """The expression's value at each sample point (one point if it has no symbols), or None if not numeric."""
    if len(s) > _MAX_LEN:
        return None
    tokens = _tokenize(s)
    out = []
    points = range(len(_SAMPLE_POINTS)) if names else range(1)
    for p in points:
        env = {n: complex(_SAMPLE_POINTS[(p + k) % len(_SAMPLE_POINTS)] + 0.1 * k) for k, n in enumerate(names)}
        try:
            v = _Evaluator(tokens, env).run()
        except (_NotNumeric, ValueError, ZeroDivisionError, OverflowError, RecursionError):
            return None
        if not (cmath.isfinite(v)):
            return None
        out.append(v)
    return out


def _close(a: complex, b: complex, rel: float = 1e-6) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b)) or abs(a - b) <= 1e-12


def _numeric_equal(pred: str, gold: str) -> bool:
    if _INT.match(pred) and _INT.match(gold):
        return pred.lstrip("+") == gold.lstrip("+")  # exact for integers (no tolerance on large ones)
    tp, tg = _tokenize(pred), _tokenize(gold)
    if len(pred) > _MAX_LEN or len(gold) > _MAX_LEN:
        return False
    names = _symbols(tg)
    if sorted(set(_symbols(tp))) != names or len(names) > 4:
        return False
    vp, vg = _values(pred, names), _values(gold, names)
    if vp is None or vg is None:
        return False
    return all(_close(a, b) for a, b in zip(vp, vg))
