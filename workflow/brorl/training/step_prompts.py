"""Which prompts each RL step drew, and how many of their rollouts were correct: ``<run>/step_prompts.jsonl``.

One JSON line per step, written by both engines (the embedded trainer as it commits a step; the cluster engine from
the reward log at the end of a segment): ``{"step": k, "prompts": [{"id", "samples", "correct"}, ...]}``, the prompts
in the order the step drew them. The in-batch probe (brorl.probe.in_batch) samples a step's own prompts before and
after its update from these ids. A prompt whose rollouts were all right or all wrong carries a zero advantage under
every estimator here (each subtracts its group's mean), so the step did not update it directly; ``mixed`` tells the
updated ones apart without knowing which groups dynamic sampling dropped.

A step run twice (a relaunch after a kill before its save) appends a second line; the last one is the step that
counted, as the resumed run's metrics are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

FILE = "step_prompts.jsonl"


class StepPromptsError(ValueError):
    """A step prompts file that cannot be read, or a step it does not hold."""


def prompt_counts(ids: Sequence[str | None], correct: Sequence[float]) -> list[dict[str, Any]]:
    """Per prompt id, in first-drawn order: its samples and how many were correct (a score of 1). Samples without an
    id (an unreadable label) are left out: they were scored 0 and updated nothing of a known prompt."""
    if len(ids) != len(correct):
        raise StepPromptsError(f"{len(ids)} sample ids but {len(correct)} scores")
    counts: dict[str, dict[str, Any]] = {}
    for prompt_id, score in zip(ids, correct):
        if prompt_id is None:
            continue
        entry = counts.setdefault(str(prompt_id), {"id": str(prompt_id), "samples": 0, "correct": 0})
        entry["samples"] += 1
        entry["correct"] += int(float(score) >= 1.0)
    return list(counts.values())


def mixed(prompt: Mapping[str, Any]) -> bool:
    """Whether a prompt's rollouts in its step were neither all right nor all wrong (the step updated it)."""
    return 0 < int(prompt["correct"]) < int(prompt["samples"])


def append_step(path: str | Path, step: int, prompts: Sequence[Mapping[str, Any]]) -> None:
    """Append one step's line, flushed to disk (a killed job loses at most the step under way)."""
    line = json.dumps({"step": int(step), "prompts": [dict(p) for p in prompts]}, sort_keys=True) + "\n"
    with Path(path).open("a") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def read_steps(path: str | Path) -> dict[int, list[dict[str, Any]]]:
    """Step -> its prompts (the last line of a step that ran twice); StepPromptsError on a torn or malformed line."""
    path = Path(path)
    steps: dict[int, list[dict[str, Any]]] = {}
    if not path.exists():
        return steps
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            try:
                entry = json.loads(line)
                prompts = [
                    {"id": str(p["id"]), "samples": int(p["samples"]), "correct": int(p["correct"])}
                    for p in entry["prompts"]
                ]
                steps[int(entry["step"])] = prompts
            except (ValueError, KeyError, TypeError) as error:
                raise StepPromptsError(f"{path}:{number}: not a step prompts line ({error!r})") from None
    return steps


def truncate_after(path: str | Path, step: int) -> None:
    """Keep the lines of steps <= `step` (a resumed run restarts after its last saved state)."""
    path = Path(path)
    if not path.exists():
        return
    kept = [line for line in path.read_text().splitlines(keepends=True) if json.loads(line)["step"] <= step]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(kept))
    os.replace(tmp, path)


def write_steps(path: str | Path, steps: Iterable[tuple[int, Sequence[Mapping[str, Any]]]]) -> None:
    """Append the lines of several steps in order (the cluster engine, after a segment)."""
    for step, prompts in steps:
        append_step(path, step, prompts)
