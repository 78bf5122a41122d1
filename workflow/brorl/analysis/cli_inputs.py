"""What every analysis command reads: its --spec, the units, the training clocks (brorl.analysis.cli)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def spec_of(a: argparse.Namespace) -> dict:
    spec = json.loads(a.spec)
    missing = [k for k in ("engine", "base_arm", "start_step", "arms", "analysis", "evaluation") if k not in spec]
    if missing:
        raise ValueError(f"--spec lacks key(s) {missing}")
    return spec


def read_units(path: Path):
    import pandas as pd

    return pd.read_parquet(path)


def hours_of(a: argparse.Namespace, spec: dict):
    from .load import hours_table, load_hours

    hours = load_hours(a.metrics or [])
    return hours, hours_table(hours, spec["base_arm"], spec["start_step"])


def evaluated_steps(units, arms) -> dict:
    """arm -> its evaluated steps (sorted), what brorl.analysis.checkpoints.select_checkpoints chooses from."""
    return {arm: sorted(set(units.loc[units["arm"] == arm, "step"])) for arm in arms}
