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

math_verify and sympy are imported lazily, on the first call that needs them.
"""

from __future__ import annotations

import cmath
import functools
import math
import re
import threading
from typing import Any

from ..result import Score, failed

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
# extraction

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")


def _balanced(text: str, start: int) -> tuple[str | None, int]:
    """Content of the brace group opening at text[start] == '{' and the index after it; (None, start) if open."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":  # \{ and \} are literal braces, \\ is a line break: skip the escaped character
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
        i += 1
    return None, start


def last_boxed(text: str) -> str | None:
    """Content of the last top-level \\boxed{...} / \\fbox{...} / \\boxed x in text, or None."""
    pos, last = 0, None
    while True:
        m = _BOX_RE.search(text, pos)
        if m is None:
            return last
        k = m.end()
        while k < len(text) and text[k] in " \t":
            k += 1
        if k < len(text) and text[k] == "{":
            content, end = _balanced(text, k)
            if content is None:  # never closed: not an answer
                pos = m.end()
                continue
            last, pos = content, end
        elif k > m.end() and k < len(text):  # "\boxed 5$": up to the closing $ or the end of the line
            content = re.split(r"[$\n]", text[k:], maxsplit=1)[0].strip()
            if content:
                last = content
            pos = k + max(1, len(content))
        else:
            pos = m.end()


def _is_truncated(response: str) -> bool:
    return "<think>" in response and "</think>" not in response


def extract_final_answer(response: str) -> str | None:
    """The last boxed answer after the last </think> (whole response if no tags); None if truncated or unboxed."""
    if not isinstance(response, str):
        return None
    if "</think>" in response:
        response = response.rsplit("</think>", 1)[1]
    elif "<think>" in response:
        return None
    answer = last_boxed(response)
    if answer is None:
        return None
    answer = answer.strip()
    return answer or None


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
    s = str(s).strip().replace("\n", " ")
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
    s = re.sub(r"\s+(?:" + _UNIT_WORDS + r")\s*(?:\^\s*\{?-?\d+\}?)?\s*$", "", s).strip() if re.search(r"\d\s+[a-z]", s) else s
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


# ---------------------------------------------------------------------------------------------------------------
# DeepScaleR-style grader: a bounded numeric evaluator of LaTeX arithmetic


class _NotNumeric(Exception):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*|\.\d+)|(\\[a-zA-Z]+|\\[{}|])|([a-zA-Z])|(.))")
_MAX_LEN = 400
_MAX_EXP_LOG = 600.0  # |log|result|| allowed from one power (e^600 ~ 1e260, inside float range)
_FUNCS = {
    "\\sin": cmath.sin, "\\cos": cmath.cos, "\\tan": cmath.tan, "\\ln": cmath.log, "\\log": cmath.log,
    "\\exp": cmath.exp, "\\arcsin": cmath.asin, "\\arccos": cmath.acos, "\\arctan": cmath.atan,
    "\\sinh": cmath.sinh, "\\cosh": cmath.cosh, "\\tanh": cmath.tanh,
    "\\sec": lambda z: 1 / cmath.cos(z), "\\csc": lambda z: 1 / cmath.sin(z), "\\cot": lambda z: 1 / cmath.tan(z),
}
_CONSTS = {"\\pi": math.pi}
_MUL = {"*", "\\times", "\\cdot", "\\ast"}
_DIV = {"/", "\\div"}
_IGNORED = {"\\,", "\\!", "\\mathrm", "\\mathbf", "\\mathit"}


def _tokenize(s: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(s):
        tok = m.group(1) or m.group(2) or m.group(3) or m.group(4)
        if tok and not tok.isspace():
            out.append(tok)
    return out


class _Evaluator:
    """Recursive descent over + - * / ^ ! \\frac \\sqrt functions, implicit products; variables from `env`."""

    def __init__(self, tokens: list[str], env: dict[str, complex]):
        self.t, self.i, self.env, self.depth = tokens, 0, env, 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise _NotNumeric(f"expected {expected}")
        self.i += 1
        return tok

    def run(self) -> complex:
        value = self.expr()
        if self.peek() is not None:
            raise _NotNumeric("trailing tokens")
        return value

    def expr(self) -> complex:
        self.depth += 1
        if self.depth > 60:
            raise _NotNumeric("too deep")
        value = self.term()
        while self.peek() in ("+", "-", "\\pm"):
            op = self.take()
            if op == "\\pm":
                raise _NotNumeric("pm")
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        self.depth -= 1
        return value

    def term(self) -> complex:
        value = self.unary()
        while True:
            tok = self.peek()
            if tok in _MUL:
                self.take()
                value = value * self.unary()
            elif tok in _DIV:
                self.take()
                d = self.unary()
                if d == 0:
                    raise _NotNumeric("division by zero")
                value = value / d
            elif tok is not None and self.starts_primary(tok):
                value = value * self.postfix()
            else:
                return value

    def starts_primary(self, tok: str) -> bool:
        if tok in ("(", "{", "\\{") or tok[0].isdigit() or tok[0] == "." or (len(tok) == 1 and tok.isalpha()):
            return True
        return tok.startswith("\\") and tok not in _MUL and tok not in _DIV and tok not in ("\\pm", "\\}")

    def unary(self) -> complex:
        tok = self.peek()
        if tok == "-":
            self.take()
            return -self.unary()
        if tok == "+":
            self.take()
            return self.unary()
        return self.postfix()

    def postfix(self) -> complex:
        value = self.primary()
        while True:
            tok = self.peek()
            if tok == "^":
                self.take()
                value = self.power(value, self.exponent())
            elif tok == "!":
                self.take()
                value = self.factorial(value)
            elif tok == "'":
                raise _NotNumeric("derivative")
            else:
                return value

    def exponent(self) -> complex:
        tok = self.peek()
        if tok == "{":
            return self.group("{", "}")
        if tok == "-":
            self.take()
            return -self.exponent()
        return self.primary()

    @staticmethod
    def power(base: complex, exp: complex) -> complex:
        if base == 0:
            if exp.real <= 0:
                raise _NotNumeric("0 to a non-positive power")
            return 0j
        size = abs(exp) * (abs(cmath.log(base)) + 1.0)
        if size > _MAX_EXP_LOG:
            raise _NotNumeric("power too large")
        if exp.imag == 0 and exp.real.is_integer() and base.imag == 0:
            return complex(base.real ** int(exp.real))
        if base.imag == 0 and base.real > 0 and exp.imag == 0:
            return complex(base.real**exp.real)
        return base**exp

    @staticmethod
    def factorial(value: complex) -> complex:
        if value.imag != 0 or not value.real.is_integer() or not 0 <= value.real <= 170:
            raise _NotNumeric("factorial out of range")
        return complex(math.factorial(int(value.real)))

    def group(self, open_: str, close: str) -> complex:
        self.take(open_)
        value = self.expr()
        self.take(close)
        return value

    def argument(self) -> complex:
        """A command's argument: a braced group, a parenthesised group, or one token."""
        tok = self.peek()
        if tok == "{":
            return self.group("{", "}")
        if tok == "(":
            return self.group("(", ")")
        return self.postfix()

    def primary(self) -> complex:
        tok = self.peek()
        if tok is None:
            raise _NotNumeric("unexpected end")
        if tok[0].isdigit() or tok[0] == ".":
            self.take()
            if len(tok) > 300:
                raise _NotNumeric("number too long")
            return complex(float(tok))
        if tok == "(":
            return self.group("(", ")")
        if tok == "{":
            self.take()
            if self.peek() == "}":  # {} : an empty group
                self.take()
                return 1 + 0j
            value = self.expr()
            self.take("}")
            return value
        if tok == "\\frac":
            self.take()
            num = self.argument()
            den = self.argument()
            if den == 0:
                raise _NotNumeric("division by zero")
            return num / den
        if tok == "\\sqrt":
            self.take()
            if self.peek() == "[":
                self.take()
                n = self.expr()
                self.take("]")
                if n == 0:
                    raise _NotNumeric("0th root")
                return self.power(self.argument(), 1 / n)
            return cmath.sqrt(self.argument())
        if tok in _FUNCS:
            self.take()
            power = None
            if self.peek() == "^":  # \sin^2 x
                self.take()
                power = self.exponent()
            try:
                value = _FUNCS[tok](self.argument())
            except (ValueError, ZeroDivisionError, OverflowError) as err:
                raise _NotNumeric(str(err)) from None
            return self.power(value, power) if power is not None else value
        if tok in _CONSTS:
            self.take()
            return complex(_CONSTS[tok])
        if tok == "\\infty" or tok == "\\pm":
            raise _NotNumeric("not a finite number")
        if tok in _IGNORED:
            self.take()
            return self.primary()
        if tok == "e":
            self.take()
            return complex(math.e)
        if tok == "i":
            self.take()
            return 1j
        if (len(tok) == 1 and tok.isalpha()) or (tok.startswith("\\") and tok[1:].isalpha()):
            self.take()
            name = tok
            if self.peek() == "_":  # subscripted name: x_1, x_{ab}
                self.take()
                sub = self.take()
                if sub == "{":
                    parts = []
                    while self.peek() not in ("}", None):
                        parts.append(self.take())
                    self.take("}")
                    sub = "".join(parts)
                name += "_" + sub
            if name not in self.env:
                raise _NotNumeric(f"unknown symbol {name}")
            return self.env[name]
        raise _NotNumeric(f"unexpected {tok}")


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
    return tuple(mv["parse"]("\\boxed{" + gold + "}", mv["config"], parsing_timeout=parsing_timeout))


@functools.lru_cache(maxsize=8192)
def _parse_pred(pred: str, parsing_timeout: int | None) -> tuple:
    mv = _mv()
    return tuple(mv["parse"]("\\boxed{" + pred + "}", mv["config"], parsing_timeout=parsing_timeout))


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


# ---------------------------------------------------------------------------------------------------------------


def score_math(item: dict, response: str) -> Score:
    """1.0 if the final boxed answer matches any gold (DeepScaleR grader OR math-verify), else 0.0."""
    if not isinstance(response, str):
        return failed("no_final_answer")
    if _is_truncated(response):
        return failed("truncated")
    pred = extract_final_answer(response)
    if pred is None:
        return failed("no_final_answer")
    golds = normalize_gold(item["answer"])
    if not golds:
        return failed("no_gold")
    if _plain_integer(pred) and all(_plain_integer(g) for g in golds):
        # both sides are plain integers: equality is exact, and the graders below cost ~10 ms a call
        return Score(1.0, True) if any(int(pred) == int(g) for g in golds) else Score(0.0, False)
    if any(deepscaler_equal(pred, g) for g in golds):
        return Score(1.0, True)
    if math_verify_equal(pred, golds):
        return Score(1.0, True)
    return Score(0.0, False)


_INTEGER = re.compile(r"^\s*-?\d{1,30}\s*$")


def _plain_integer(text: str) -> bool:
    """A bare integer such as '17' or '-3' (no sign tricks, units, commas or LaTeX)."""
    return bool(_INTEGER.match(text))
