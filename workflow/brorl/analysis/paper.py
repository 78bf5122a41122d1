"""The paper's published numbers (paper_results.yaml beside this file), loaded and checked, and the rows of its
Tables 1 and 3-5 that this run's checkpoints fill.

Cells the paper does not give are ``None`` here and are shown as ``NOT_GIVEN`` in tables; checkpoints and benchmarks
this workflow did not evaluate are shown as ``NOT_RUN``. Both markers are plain strings so that tables keep them.

The rows of Tables 1 and 3-5 (``checkpoint_rows``): which checkpoints they list, in order (the start, the compared
arms, the other enabled arms, evaluation.models, then the paper's rows this configuration does not have), each with
the arm and step that reproduce it and the paper row it stands beside (pure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cli import load_yaml

PAPER_RESULTS = Path(__file__).with_name("paper_results.yaml")
NOT_GIVEN = "not given"  # the paper has no value for this cell
NOT_RUN = "not run"  # this configuration did not evaluate this checkpoint or benchmark
NOT_APPLICABLE = "n/a"  # the cell has no meaning for this row (e.g. the start checkpoint's training time)
TINY_SCALE = "n/a (tiny scale)"  # a difference to the paper that would compare a tiny CPU run with the paper's
# a model whose training steps are not known (continued_steps null, e.g. released weights) against a paper row: its
# level is not that row's step, so only its gain over the start is compared (SUMMARY.md, brorl.analysis.tables)
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
        return _check(load_yaml(handle))


def column_mean(paper: dict, family: str, key: str) -> float | None:
    """The unweighted mean of a family table's benchmark columns at checkpoint ``key`` (None if a cell is missing)."""
    values = [cells.get(key) for cells in paper["benchmark_tables"][family]["benchmarks"].values()]
    return None if not values or any(v is None for v in values) else sum(values) / len(values)


def paper_checkpoints(paper: dict) -> list[tuple[str, int]]:
    """(role, continued step) of every Table 1 row, in the paper's order."""
    return [(row["role"], int(row["continued_steps"])) for row in paper["table1"]]


@dataclass(frozen=True)
class Checkpoint:
    """One table row: which arm and step reproduce it (arm None: not in this config) and which paper row it is."""

    method: str
    arm: str | None
    step: int | None  # the arm's step (base: base_model.start_step); None when not in this config
    continued: int  # continued RL steps after the start checkpoint
    n: object
    prompts: object
    paper_key: str | None  # "<role>@<step>" of the paper's Table 1 row, None when the paper has no such row
    evaluated: bool
    model: bool = False  # a checkpoint of evaluation.models: not trained here (no samples, hours or N of ours)


def checkpoint_rows(
    paper: Mapping,
    arms: Sequence[Mapping],
    roles: Mapping[str, str],
    start_step: int,
    evaluated: set[tuple[str, int]],
    base_arm: str = "base",
    models: Sequence[Mapping] = (),
) -> list[Checkpoint]:
    """The rows of Tables 1 and 3-5, in order: base, control arm, treatment arm, other enabled arms (by step), the
    checkpoints of evaluation.models (``models``: name, label, step, continued_steps, paper_row), then the paper's
    rows this configuration does not have."""
    paper_rows = {checkpoint_key(r["role"], r["continued_steps"]): r for r in paper["table1"]}
    role_of = {name: role for role, name in roles.items()}
    enabled = {a["name"]: a for a in arms}
    rows = [_start_row(paper, base_arm, start_step, evaluated)]
    order = [roles["control"], roles["treatment"], *[a["name"] for a in arms if a["name"] not in roles.values()]]
    for name in order:
        rows += _arm_rows(name, role_of.get(name), enabled.get(name), paper, paper_rows, evaluated)
    rows += [_model_row(m, evaluated) for m in models]
    used = {row.paper_key for row in rows if row.paper_key}
    for key, p in paper_rows.items():  # a role whose arm is not named in the config at all
        if key not in used:
            rows.append(
                Checkpoint(p["method"], None, None, p["continued_steps"], p["n"], p["prompts_per_step"], key, False)
            )
    return rows


def _start_row(paper: Mapping, base_arm: str, start_step: int, evaluated: set[tuple[str, int]]) -> Checkpoint:
    """The start checkpoint's row, beside the paper's Baseline row."""
    base_row = next(r for r in paper["table1"] if r["role"] == "base")
    return Checkpoint(
        base_row["method"] + " (start)",
        base_arm,
        start_step,
        0,
        NOT_APPLICABLE,
        NOT_APPLICABLE,
        checkpoint_key("base", base_row["continued_steps"]),
        (base_arm, start_step) in evaluated,
    )


def _arm_rows(
    name: str,
    role: str | None,
    arm: Mapping | None,
    paper: Mapping,
    paper_rows: Mapping[str, Mapping],
    evaluated: set[tuple[str, int]],
) -> list[Checkpoint]:
    """The rows of one arm (``arm`` None: not enabled here), by step: its report steps and the paper's checkpoints of
    its role (``role`` None: it plays none), each beside the paper row of the same role and step."""
    steps = set(arm["report_steps"]) if arm else set()
    paper_steps = {r["continued_steps"] for r in paper["table1"] if role and r["role"] == role}
    rows = []
    for step in sorted(steps | paper_steps):
        key = checkpoint_key(role, step) if role and step in paper_steps else None
        if arm and step in steps:
            rows.append(
                Checkpoint(
                    arm.get("label") or name,
                    name,
                    step,
                    step,
                    arm["n"],
                    arm["prompts_per_step"],
                    key,
                    (name, step) in evaluated,
                )
            )
        else:  # a paper checkpoint this configuration does not have
            p = paper_rows[key]
            rows.append(
                Checkpoint(p["method"], name if arm else None, None, step, p["n"], p["prompts_per_step"], key, False)
            )
    return rows


def _model_row(m: Mapping, evaluated: set[tuple[str, int]]) -> Checkpoint:
    """The row of one checkpoint of evaluation.models (name, label, step, continued_steps, paper_row)."""
    return Checkpoint(
        m.get("label") or m["name"],
        m["name"],
        int(m["step"]),
        m.get("continued_steps") or 0,  # not known: shown as "model"
        NOT_APPLICABLE,
        NOT_APPLICABLE,
        m.get("paper_row"),
        (m["name"], int(m["step"])) in evaluated,
        model=True,
    )
