"""The rows of Tables 1 and 3-5: which checkpoints they list, in order (the start, the compared arms, the other
enabled arms, evaluation.models, then the paper's rows this configuration does not have), each with the arm and step
that reproduce it and the paper row it stands beside (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .paper import (
    NOT_APPLICABLE,
    checkpoint_key,
)


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
    base_row = next(r for r in paper["table1"] if r["role"] == "base")
    rows = [
        Checkpoint(
            base_row["method"] + " (start)",
            base_arm,
            start_step,
            0,
            NOT_APPLICABLE,
            NOT_APPLICABLE,
            checkpoint_key("base", base_row["continued_steps"]),
            (base_arm, start_step) in evaluated,
        )
    ]
    used = {rows[0].paper_key}
    order = [roles["control"], roles["treatment"], *[a["name"] for a in arms if a["name"] not in roles.values()]]
    for name in order:
        role = role_of.get(name)
        arm = enabled.get(name)
        steps = set(arm["report_steps"]) if arm else set()
        paper_steps = {r["continued_steps"] for r in paper["table1"] if role and r["role"] == role}
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
                    Checkpoint(
                        p["method"], name if arm else None, None, step, p["n"], p["prompts_per_step"], key, False
                    )
                )
            if key:
                used.add(key)
    for m in models:
        key = m.get("paper_row")
        rows.append(
            Checkpoint(
                m.get("label") or m["name"],
                m["name"],
                int(m["step"]),
                m.get("continued_steps") or 0,  # not known: shown as "model"
                NOT_APPLICABLE,
                NOT_APPLICABLE,
                key,
                (m["name"], int(m["step"])) in evaluated,
                model=True,
            )
        )
        if key:
            used.add(key)
    for key, p in paper_rows.items():  # a role whose arm is not named in the config at all
        if key not in used:
            rows.append(
                Checkpoint(p["method"], None, None, p["continued_steps"], p["n"], p["prompts_per_step"], key, False)
            )
    return rows
