"""An arm's segment layout (continued steps per training job), frozen once its run folder exists.

The segment length sizes jobs to the site's walltime and is chosen before the first job; it numbers the segments
(and so the train_ppo jobs and their outputs). Changing it in the config once an arm has trained would renumber the
finished jobs, so the first job of an arm records the length it ran with in results/train/<arm>/run/layout.json,
and the workflow keeps using the recorded length for that arm (saying so when the config now differs). A new arm,
or an arm whose results were removed, takes the config's value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .recipe import RecipeError, find_arm, segment_max_steps
from .run_folder import atomic_json

LAYOUT = "layout.json"


def layout_file(out_dir: Path) -> Path:
    """results/train/<arm>/run/layout.json for the arm folder `out_dir`."""
    return Path(out_dir) / "run" / LAYOUT


def freeze_layouts(config: Mapping[str, Any], train_dir: Path) -> list[str]:
    """Set every arm that has a recorded layout under `train_dir` to its recorded segment length (in place);
    returns one note per arm whose config now asks for another length."""
    notes = []
    for arm in config["arms"]:
        path = layout_file(Path(train_dir) / arm["name"])
        if not path.is_file():
            continue
        recorded = json.loads(path.read_text())["segment_max_steps"]
        wanted = segment_max_steps(config, arm["name"])
        arm["segment_max_steps"] = recorded
        if recorded != wanted:
            notes.append(
                f"arm {arm['name']!r} keeps {recorded} steps per training job, the length its run started with "
                f"({path}); the config now asks for {wanted}. Delete results/train/{arm['name']}/ to train it "
                "again with the new length."
            )
    return notes


def record_layout(config: Mapping[str, Any], name: str, out_dir: Path) -> None:
    """Write the arm's layout on its first job; refuse a job whose segment length differs from the recorded one."""
    path = layout_file(out_dir)
    length = segment_max_steps(config, name)
    if path.is_file():
        recorded = json.loads(path.read_text())["segment_max_steps"]
        if recorded != length:
            raise RecipeError(
                f"arm {name!r}: this job splits the arm into jobs of {length} steps, but its run folder was laid "
                f"out with {recorded} ({path}); the workflow keeps the recorded length, so run the job through it"
            )
        return
    find_arm(config, name)  # a clear error for an unknown arm before anything is written
    atomic_json(path, {"segment_max_steps": length})
