"""What both engines' run folders (`results/train/<arm>/run/`) share: atomic JSON writes and the recipe check.

Every write is atomic (temporary name, fsync, rename), so a job killed at any instant leaves nothing half-written
that a later run could mistake for finished work.

  <state folder>/recipe.json   the recipe the run was trained with (recipe.recipe_fingerprint); the state folder is
                               run/ for the embedded engine, run/openrlhf/ for the OpenRLHF one
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def fsync_dir(path: Path) -> None:
    """fsync a folder, so that a rename inside it survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_json(path: Path, payload: Any) -> None:
    """Write JSON to `path` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as handle:
        json.dump(payload, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


def check_fingerprint(run_dir: Path, fingerprint: dict) -> None:
    """Refuse to continue a run folder made with another recipe (RecipeError); record the recipe on a fresh one.
    Both engines call it before touching their state."""
    from .recipe import RecipeError

    path = Path(run_dir) / "recipe.json"
    if path.exists():
        old = json.loads(path.read_text())
        new = json.loads(json.dumps(fingerprint))  # as it would read back from the file (tuples -> lists)
        if old != new:
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise RecipeError(
                f"{run_dir} was trained with a different recipe (changed: {', '.join(changed)}); "
                f"restore the config or delete {Path(run_dir).parent} to retrain this arm"
            )
    else:
        atomic_json(path, fingerprint)
