"""A small, bounded pure-Python evaluator of LaTeX arithmetic (+ - * / ^ ! \\frac \\sqrt, functions, implicit
products), the DeepScaleR-style grader's numeric comparison (numeric.py). No sympy, so no unbounded symbolic work:
powers, factorials and sizes are capped.
"""

from __future__ import annotations

import cmath
import math
import re


class _NotNumeric(Exception):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*|\.\d+)|(\\[a-zA-Z]+|\\[{}|])|([a-zA-Z])|(.))")
_MAX_EXP_LOG = 600.0  # |log|result|| allowed from one power (e^600 ~ 1e260, inside float range)
_FUNCS = {
    "\\sin": cmath.sin,
    "\\cos": cmath.cos,
    "\\tan": cmath.tan,
    "\\ln": cmath.log,
    "\\log": cmath.log,
    "\\exp": cmath.exp,
    "\\arcsin": cmath.asin,
    "\\arccos": cmath.acos,
    "\\arctan": cmath.atan,
    "\\sinh": cmath.sinh,
    "\\cosh": cmath.cosh,
    "\\tanh": cmath.tanh,
    "\\sec": lambda z: 1 / cmath.cos(z),
    "\\csc": lambda z: 1 / cmath.sin(z),
    "\\cot": lambda z: 1 / cmath.tan(z),
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
            return self.frac()
        if tok == "\\sqrt":
            return self.sqrt()
        if tok in _FUNCS:
            return self.function(tok)
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
            return self.symbol(tok)
        raise _NotNumeric(f"unexpected {tok}")

    def frac(self) -> complex:
        """\\frac{num}{den}."""
        self.take()
        num = self.argument()
        den = self.argument()
        if den == 0:
            raise _NotNumeric("division by zero")
        return num / den

    def sqrt(self) -> complex:
        """\\sqrt{x} or \\sqrt[n]{x}."""
        self.take()
        if self.peek() == "[":
            self.take()
            n = self.expr()
            self.take("]")
            if n == 0:
                raise _NotNumeric("0th root")
            return self.power(self.argument(), 1 / n)
        return cmath.sqrt(self.argument())

    def function(self, tok: str) -> complex:
        """A named function of _FUNCS applied to its argument, with an optional power (\\sin^2 x)."""
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

    def symbol(self, tok: str) -> complex:
        """A variable (x, \\alpha, subscripted x_1 or x_{ab}), looked up in ``env``."""
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
