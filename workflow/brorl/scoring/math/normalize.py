"""Normalisation: gold answers into the list of acceptable gold strings, and any answer into the canonical
string the DeepScaleR-style grader compares (Hendrycks/DeepScaleR style: units, text, spacing, fractions).
"""

from __future__ import annotations

import re
from typing import Any

# ---------------------------------------------------------------------------------------------------------------
# golds

_E_NOTATION = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))[eE]([+-]?\d{1,4})$")


def fix_e_notation(s: str) -> str:
    """'4.5e33' -> '4.5 \\times 10^{33}', '6.4e-5' -> '6.4 \\times 10^{-5}'; anything else unchanged."""
    m = _E_NOTATION.match(s.strip())
    if m is None:
        return s
    return f"{m.group(1)} \\times 10^{{{int(m.group(2))}}}"


def _gold_str(x: Any) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return repr(x)
    return str(x)


def normalize_gold(answer: Any) -> list[str]:
    """Every acceptable gold string: list elements, numbers as strings, e-notation rewritten, '$' stripped."""
    if isinstance(answer, (list, tuple)):
        raw = list(answer)
    elif isinstance(answer, str) and answer.strip().startswith("[") and answer.strip().endswith("]"):
        raw = [answer]
        try:  # a string repr of a list of strings (never an interval like "[1, 2]": those hold numbers)
            import ast

            value = ast.literal_eval(answer.strip())
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                raw = value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    else:
        raw = [answer]
    out: list[str] = []
    for x in raw:
        if x is None:
            continue
        s = _gold_str(x).replace("$", "").strip()
        s = fix_e_notation(s)
        if s and s not in out:
            out.append(s)
    return out


# Euler's number and the imaginary unit in a font (`\\mathrm{e}`, `\\text{i}`) are no units: both graders dropped them.
# math-verify 0.9.0 reads a font-wrapped e or i after a number as a unit and drops it (`\\boxed{2\\mathrm{e}}` parses
# as 2, so it matched gold 2 and missed gold 2e), and stops parsing at `\\frac{1}{\\mathrm{e}}` (`1 - \\frac{1}{`):
# the DeepScaleR normalisation below strips it as a trailing unit too. The constants are written bare before either
# grader reads them, with a space in front (`2 e`, `\\frac{1}{ e}`, read as 2E and
# 1/E; a bare `{e}` would be read as a set).
_FONT_CONSTANT = re.compile(r"\\(?:mathrm|textrm|text|mathit|mathbf|operatorname)\s*\{\s*([ei])\s*\}")


def bare_constants(latex: str) -> str:
    """`latex` with `\\mathrm{e}`, `\\text{i}` and the like written as bare e and i (math-verify reads those)."""
    return _FONT_CONSTANT.sub(r" \1", latex)


# ---------------------------------------------------------------------------------------------------------------
# DeepScaleR-style grader: normalisation

_UNIT_WORDS = (
    "degree|degrees|cm|centimeter|centimeters|meter|meters|m|km|kg|g|mm|inch|inches|foot|feet|ft|yard|yards|"
    "mile|miles|second|seconds|sec|s|minute|minutes|min|hour|hours|hr|day|days|week|weeks|year|years|dollar|"
    "dollars|cent|cents|unit|units|sq|square|cubic|percent|points|point|ways|way|people|students|"
)
_TEXT_CMD = r"\\(?:text|textbf|textit|textrm|mbox|mathrm|mathbf|mathit|operatorname)"
_TRAILING_UNIT = re.compile(_TEXT_CMD + r"\s*\{[^{}]*\}\s*(?:\^\s*\{?\s*-?\d+\s*\}?)?\s*$")
_TEXT_GROUP = re.compile(_TEXT_CMD + r"\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_LHS = re.compile(r"^\s*(?:[a-zA-Z](?:_\{?\w+\}?)?|\\[a-zA-Z]+)\s*(?:\([a-z]\))?\s*=\s*")
_INT = re.compile(r"^[+-]?\d+$")


def _fix_fracs(s: str) -> str:
    # \frac12 -> \frac{1}{2}, \frac1{2} -> \frac{1}{2}, \frac{1}2 -> \frac{1}{2}
    s = re.sub(r"\\frac\s*(\d)\s*(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\s*(\d)\s*\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\frac\s*(\{[^{}]*\})\s*(\d)", r"\\frac\1{\2}", s)
    return s


def _normalize(s: str) -> str:
    """A canonical string for comparison (Hendrycks/DeepScaleR style); spaces removed except after commands."""
    s = bare_constants(str(s)).strip().replace("\n", " ")
    s = s.replace("$", "")
    s = re.sub(r"\\[!,;:]|\\ |~|\\quad|\\qquad", " ", s)
    s = s.replace("\\\\", " ")
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = re.sub(r"\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\big(?![a-zA-Z])|\\Big(?![a-zA-Z])", "", s)
    s = s.replace("\\displaystyle", "")
    s = re.sub(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\circ|\\degree", "", s)
    s = re.sub(r"\\%|%|\\\$|\\percent", "", s)
    # units and other text: strip trailing \text{unit} groups, unwrap the rest
    for _ in range(3):
        t = _TRAILING_UNIT.sub("", s).strip()
        if not t or t == s:
            break
        s = t
    s = _TEXT_GROUP.sub(r"\1", s)
    s = (
        re.sub(r"\s+(?:" + _UNIT_WORDS + r")\s*(?:\^\s*\{?-?\d+\}?)?\s*$", "", s).strip()
        if re.search(r"\d\s+[a-z]", s)
        else s
    )
    s = s.strip().rstrip(".").strip()
    m = _LHS.match(s)
    if m and s.count("=") == 1:
        s = s[m.end() :]
    s = re.sub(r"^\(([A-Za-z])\)$", r"\1", s.strip())  # (C) -> C
    if _THOUSANDS.match(s.replace(" ", "")):
        s = s.replace(",", "")
    s = re.sub(r"\\sqrt\s*(\d)", r"\\sqrt{\1}", s)
    s = re.sub(r"\\sqrt\s*([a-zA-Z])(?![a-zA-Z])", r"\\sqrt{\1}", s)
    s = _fix_fracs(s)
    # spaces: keep one only where removing it would glue a command to a following letter
    s = re.sub(r"(\\[a-zA-Z]+)\s+(?=[a-zA-Z])", lambda m: m.group(1) + "\x00", s)
    s = re.sub(r"\s+", "", s).replace("\x00", " ")
    m = re.match(r"^([+-]?\d+)/(\d+)$", s)
    if m:
        s = f"\\frac{{{m.group(1)}}}{{{m.group(2)}}}"
    s = re.sub(r"(^|[^\d.])\.(\d)", r"\g<1>0.\2", s)  # .5 -> 0.5
    if _INT.match(s):
        s = str(int(s)) if len(s) < 4000 else s.lstrip("+0") or "0"
    elif re.match(r"^[+-]?\d+\.\d+$", s) and len(s) < 400:
        s = s.rstrip("0").rstrip(".") if "." in s else s  # 142.0 -> 142, 0.50 -> 0.5
        s = re.sub(r"^([+-]?)0+(\d)", r"\1\2", s)
    return s
