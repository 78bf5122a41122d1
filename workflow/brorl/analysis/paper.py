"""The paper's published numbers (paper_results.yaml beside this file), loaded and checked.

Cells the paper does not give are ``None`` here and are shown as ``NOT_GIVEN`` in tables; checkpoints and benchmarks
this workflow did not evaluate are shown as ``NOT_RUN``. Both markers are plain strings so that tables keep them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

# libyaml's parser where the wheel has it: the same safe loading, about ten times faster (every job parses the
# Snakefile, which reads these files)
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PAPER_RESULTS = Path(__file__).with_name("paper_results.yaml")
NOT_GIVEN = "not given"  # the paper has no value for this cell
NOT_RUN = "not run"  # this configuration did not evaluate this checkpoint or benchmark
NOT_APPLICABLE = "n/a"  # the cell has no meaning for this row (e.g. the start checkpoint's training time)
TINY_SCALE = "n/a (tiny scale)"  # a difference to the paper that would compare a tiny CPU run with the paper's
# a model whose training steps are not known (continued_steps null, e.g. released weights) against a paper row: its
# level is not that row's step, so only its gain over the start is compared (SUMMARY.md, brorl.analysis.model_summary)
BY_GAIN = "n/a (steps not known: compared by gain, SUMMARY.md)"
ROLES = ("base", "control", "treatment")
FAMILIES = ("math", "code", "reasoning_gym")
FAMILY_LABELS = {"math": "Math", "code": "Code", "reasoning_gym": "Reasoning Gym"}


class PaperDataError(ValueError):
    """paper_results.yaml does not have the expected shape (names the key)."""


def is_tiny_scale(engine: str) -> bool:
    """Whether the run is the tiny CPU preset (engine embedded), whose numbers are never diffed against the paper."""
    return engine == "embedded"


def partial_text(present: int, total: int) -> str:
    """The difference cell of a family average over only part of the paper's benchmarks: never diffed silently."""
    return f"n/a (partial: {present} of {total} benchmarks)"


def checkpoint_key(role: str, step: int) -> str:
    """The key of one checkpoint in the per-benchmark cells: ``"treatment@134"``."""
    return f"{role}@{int(step)}"


def parse_checkpoint_key(key: str) -> tuple[str, int]:
    role, _, step = key.partition("@")
    if role not in ROLES or not step.isdigit():
        raise PaperDataError(f"checkpoint key {key!r} is not '<base|control|treatment>@<step>'")
    return role, int(step)


def _check(data: Any) -> dict:
    if not isinstance(data, dict):
        raise PaperDataError("paper results must be a mapping")
    for key in ("table1", "benchmark_tables", "statistics", "figure4_patterns"):
        if key not in data:
            raise PaperDataError(f"paper results lack key {key!r}")
    need = ("method", "role", "n", "prompts_per_step", "continued_steps", "samples_k", "time_h", *FAMILIES)
    seen = set()
    for i, row in enumerate(data["table1"]):
        missing = [k for k in need if k not in row]
        if missing:
            raise PaperDataError(f"table1[{i}] lacks {missing}")
        if row["role"] not in ROLES:
            raise PaperDataError(f"table1[{i}].role {row['role']!r} is not one of {ROLES}")
        key = checkpoint_key(row["role"], row["continued_steps"])
        if key in seen:
            raise PaperDataError(f"table1[{i}]: checkpoint {key} appears twice")
        seen.add(key)
    for family, table in data["benchmark_tables"].items():
        if family not in FAMILIES:
            raise PaperDataError(f"benchmark_tables.{family}: not a family {FAMILIES}")
        for bench, cells in [("printed_avg", table.get("printed_avg")), *table["benchmarks"].items()]:
            for key, value in (cells or {}).items():
                parse_checkpoint_key(key)
                if key not in seen:
                    raise PaperDataError(f"benchmark_tables.{family}.{bench}: {key} is no Table 1 checkpoint")
                if not isinstance(value, (int, float)):
                    raise PaperDataError(f"benchmark_tables.{family}.{bench}.{key}: {value!r} is not a number")
    return data


def load_paper(path: Path | str = PAPER_RESULTS) -> dict:
    """The paper's numbers as a dict (see paper_results.yaml for the layout)."""
    with open(path) as handle:
        return _check(yaml.load(handle, Loader=FAST_LOADER))


def column_mean(paper: dict, family: str, key: str) -> float | None:
    """The unweighted mean of a family table's benchmark columns at checkpoint ``key`` (None if a cell is missing)."""
    values = [cells.get(key) for cells in paper["benchmark_tables"][family]["benchmarks"].values()]
    return None if not values or any(v is None for v in values) else sum(values) / len(values)


def paper_checkpoints(paper: dict) -> list[tuple[str, int]]:
    """(role, continued step) of every Table 1 row, in the paper's order."""
    return [(row["role"], int(row["continued_steps"])) for row in paper["table1"]]
