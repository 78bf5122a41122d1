"""Small formatters of SUMMARY.md's numbers (brorl.analysis.summary and its sections)."""

from __future__ import annotations

from .paper import NOT_RUN
from .paper_tables import as_number


def fixed(x: object, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or the not-run marker."""
    v = as_number(x)
    return NOT_RUN if v is None else f"{v:.{digits}f}"


def p_value(p: object) -> str:
    """A p-value, or n/a where the test is undefined (no variance: every score equal)."""
    v = as_number(p)
    return "n/a" if v is None else f"{v:.3g}"


def points(x: object) -> str:
    """A 0-1 difference as signed points."""
    v = as_number(x)
    return "n/a" if v is None else f"{100 * v:+.2f}"


def cell(x: object, digits: int = 2, sign: str = "") -> str:
    """A table cell: numbers rounded (signed for differences), markers as they are."""
    v = as_number(x)
    return str(x) if v is None else f"{round(v, digits) + 0.0:{sign}.{digits}f}"
