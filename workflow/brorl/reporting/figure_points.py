"""How many of a run's data points a matplotlib figure draws, so that a figure with none is reported, never shipped
silently as an empty plot (every figure-writing CLI counts them)."""

from __future__ import annotations

import sys

from matplotlib.collections import PathCollection

PAPER_LABEL = "paper:"  # the label prefix of the paper's published points: never counted as this run's data


def plotted_points(fig) -> int:
    """Points of data lines (plot, error bars, markers) and scatter collections on every axis of ``fig``. Reference
    lines placed in axis coordinates (axhline, axvline) and the paper's published points are not data."""
    total = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            in_data = all(line.get_transform().contains_branch_seperately(ax.transData))
            if in_data and not str(line.get_label()).startswith(PAPER_LABEL):
                total += len(line.get_xdata())
        for collection in ax.collections:  # scatter points; bands (PolyCollection) and error bars are not points
            if isinstance(collection, PathCollection) and not str(collection.get_label()).startswith(PAPER_LABEL):
                total += len(collection.get_offsets())
    return total


def report_points(name: str, points: int, path) -> int:
    """Say what a figure drew; a figure without data gets a warning on stderr naming it. Returns ``points``."""
    if points:
        print(f"{name}: {points} data points -> {path}")
    else:
        print(f"warning: {name} drew no data points ({path} is an empty plot)", file=sys.stderr)
    return points
