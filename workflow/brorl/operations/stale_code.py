"""Arms trained by code that has changed since: no code edit reruns training (brorl.operations.rerun_policy:
EXEMPT_RULES), so each training segment's manifest records the code it ran (path -> digest) and this module names
the arms whose record differs from the code a segment would run now. The dry run, `make status` and SUMMARY.md
show it (docs/cluster.md#rerun-policy)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from .rerun_policy import changed_code

NOT_RECORDED = None  # an arm whose manifests predate code records (or cannot be read)


def recorded_code(train_dir: Path, arm: str) -> list[dict | None]:
    """The code record of each finished segment of an arm (None where a manifest has none or cannot be read)."""
    records = []
    for path in sorted((train_dir / arm).glob("segment*.json")):
        try:
            code = json.loads(path.read_text()).get("code")
        except (OSError, ValueError, AttributeError):
            code = None
        records.append(code if isinstance(code, dict) else None)
    return records


def stale_training(train_dir: Path, arms: Iterable[str], current: Mapping[str, str]) -> dict[str, list[str] | None]:
    """Arm -> the files changed since any of its segments trained (None: not recorded); arms trained by the current
    code, and arms with no finished segment, are left out."""
    stale: dict[str, list[str] | None] = {}
    for arm in arms:
        records = recorded_code(train_dir, arm)
        if any(r is None for r in records):
            stale[arm] = NOT_RECORDED
            continue
        changed = sorted({path for r in records for path in changed_code(r, current)})
        if changed:
            stale[arm] = changed
    return stale


def stale_lines(stale: Mapping[str, list[str] | None], shown: int = 6) -> list[str]:
    """One line per arm of ``stale_training``, naming the changed files (the first ``shown``)."""
    lines = []
    for arm, changed in sorted(stale.items()):
        if changed is None:
            lines.append(f"arm {arm}: the code it was trained with is not recorded (trained before code records)")
            continue
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        lines.append(
            f"arm {arm} was trained by code that has changed since: {', '.join(changed[:shown])}{more}; a code edit "
            f"never reruns training (delete results/train/{arm} to retrain it with the current code)"
        )
    return lines
