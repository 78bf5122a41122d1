"""Writing result tables: markdown (for the report), CSV (full precision, for machines), optional LaTeX (booktabs).

No optional dependencies: markdown and LaTeX are written by hand (pandas' to_markdown needs tabulate and its
to_latex needs jinja2).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from numbers import Integral, Real
from pathlib import Path

import pandas as pd

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def format_value(x: object) -> str:
    """A cell as text: integers as is, floats with 4 significant digits, scientific below 1e-3 or from 1e6."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, Integral):
        return str(int(x))
    if isinstance(x, Real):
        v = float(x)
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if abs(v) < 1e-3 or abs(v) >= 1e6:
            mantissa, exponent = f"{v:.3e}".split("e")
            return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
        return f"{v:.4g}"
    return str(x)


def plus_minus(value: object, se: object, scale: float = 1.0, digits: int = 2, sign: str = "") -> str:
    """A score cell ``62.10 ± 0.80`` (value and standard error times `scale`; ``sign="+"`` signs the value, for a
    difference); ``± n/a`` where the error is undefined (one problem); empty for a missing value; a text marker
    (``not run``) as it is."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if not isinstance(value, Real) or isinstance(value, bool):
        return str(value)
    has_se = isinstance(se, Real) and not isinstance(se, bool) and not math.isnan(float(se))
    err = f"{round(scale * float(se), digits) + 0.0:.{digits}f}" if has_se else "n/a"
    return f"{round(scale * float(value), digits) + 0.0:{sign}.{digits}f} ± {err}"


def _collapse_lists(args: list[str], keep: int = 2) -> list[str]:
    """Shorten long runs of positional values (file lists): the first ``keep``, then "... (k more)"."""
    out: list[str] = []
    run: list[str] = []
    for arg in [*args, "--"]:
        if arg.startswith("-") and not _is_number(arg):
            out += run if len(run) <= keep + 1 else [*run[:keep], f"... ({len(run) - keep} more)"]
            run = []
            out.append(arg)
        else:
            run.append(arg)
    return out[:-1]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _short(arg: str, limit: int = 60) -> str:
    """An argument as the table's line shows it: a long one (a JSON spec) as its size and hash."""
    if len(arg) <= limit:
        return arg
    return f"<{len(arg)} characters, sha256 {hashlib.sha256(arg.encode()).hexdigest()[:12]}>"


def _program() -> str:
    """``python -m pkg`` when run with -m, else the script's name."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        return "python -m " + spec.name.removesuffix(".__main__")
    return Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"


def _how_produced() -> str:
    """One short line: the command (long values as their hash; the full one is in the CSV's sidecar), commit and
    UTC time."""
    command = " ".join([_program(), *(_short(a) for a in _collapse_lists(sys.argv[1:]))])
    try:
        from .provenance import git_state

        git = git_state()
    except Exception:  # provenance must never stop a table from being written
        git = {"commit": None, "dirty": None}
    commit = (
        "no git checkout"
        if not git.get("commit")
        else (f"commit {git['commit'][:12]}{' (uncommitted changes)' if git.get('dirty') else ''}")
    )
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"Produced by `{command}` ({commit}, {when}); full-precision values are in the CSV."


def _markdown(df: pd.DataFrame, title: str | None) -> str:
    def cell(x: object) -> str:
        return format_value(x).replace("|", r"\|").replace("\n", " ")

    lines = []
    if title:
        lines += [f"# {title}", ""]
    lines += [_how_produced(), ""]
    lines.append("| " + " | ".join(cell(c) for c in df.columns) + " |")
    lines.append("|" + "|".join("---" for _ in df.columns) + "|")
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex(df: pd.DataFrame, title: str | None) -> str:
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [r"% requires \usepackage{booktabs}"]
    if title:
        lines.append(f"% {title}")
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule"]
    lines.append(" & ".join(_latex_escape(str(c)) for c in df.columns) + r" \\")
    lines.append(r"\midrule")
    for row in df.itertuples(index=False):
        lines.append(" & ".join(_latex_escape(format_value(v)) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


MAX_PRINTED_COLUMNS = 12  # a markdown table wider than this scrolls sideways in a viewer: join columns instead


def joined(df: pd.DataFrame, groups: Mapping[str, Sequence[str]], sep: str = " / ") -> pd.DataFrame:
    """A narrower view of ``df`` for reading: each group of columns becomes one text column named by its key, at
    its first column's place, the cells formatted as the tables format them and joined by ``sep``. Columns a group
    names that ``df`` lacks are skipped."""
    out = df.copy()
    for name, columns in groups.items():
        present = [c for c in columns if c in out.columns]
        if not present:
            continue
        at = out.columns.get_loc(present[0])
        text = [sep.join(format_value(v) for v in row) for row in out[present].itertuples(index=False)]
        out = out.drop(columns=present)
        out.insert(at, name, text)
    return out


def write_table(
    df: pd.DataFrame,
    md_path: str | Path,
    csv_path: str | Path,
    tex_path: str | Path | None = None,
    title: str | None = None,
    csv_frame: pd.DataFrame | None = None,
    printed_groups: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Write ``df`` as markdown (title heading, a short line saying how it was produced, readable numbers), as CSV
    (raw values, with ``<csv>.json`` holding the full command) and, when ``tex_path`` is given, as a LaTeX booktabs
    tabular. ``csv_frame``: what the CSV holds when it differs from the printed table (full-precision numbers, a
    wider layout). ``printed_groups``: columns the markdown and LaTeX join into one (``joined``), so a wide table
    prints within MAX_PRINTED_COLUMNS while its CSV keeps every column. Parent folders are created."""
    printed = joined(df, printed_groups) if printed_groups else df
    outputs = [(Path(md_path), _markdown(printed, title))]
    if tex_path is not None:
        outputs.append((Path(tex_path), _latex(printed, title)))
    for path, text in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    data = df if csv_frame is None else csv_frame
    data.to_csv(csv_path, index=False)
    # the full command (the tables' line shortens long values): <table>.csv.json
    sidecar = {"command": [_program(), *sys.argv[1:]], "columns": [str(c) for c in data.columns], "rows": len(data)}
    Path(f"{csv_path}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
