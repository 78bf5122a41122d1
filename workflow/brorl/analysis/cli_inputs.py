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


def clocks_of(a: argparse.Namespace) -> dict:
    """The training clocks of the --metrics files (brorl.analysis.load.load_clocks: hours, samples, startup)."""
    from .load import load_clocks

    return load_clocks(a.metrics or [])


def hours_of(a: argparse.Namespace, spec: dict, clocks: dict | None = None):
    """(arm -> {step: training hours}, the long table of them with the start at 0 h), from ``clocks`` when read."""
    from .load import hours_table

    hours = (clocks or clocks_of(a))["hours"]
    return hours, hours_table(hours, spec["base_arm"], spec["start_step"])


def evaluated_steps(units, arms) -> dict:
    """arm -> its evaluated steps (sorted), what brorl.analysis.checkpoints.select_checkpoints chooses from."""
    return {arm: sorted(set(units.loc[units["arm"] == arm, "step"])) for arm in arms}
