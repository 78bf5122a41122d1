"""Would Figure 3's panels, drawn from one seed's curves with matplotlib's defaults, show the paper's ticks?

The paper prints Q_pos ticks 0.60-0.64 (0.01 apart) and a worst-drop axis from 0 down to -1.0e-4, and no numbers in
the text. Reading them as matplotlib's autoscaling would draw them (5% margins, the default tick locator) on a panel
of this project's Figure 3 (a third of 16 x 4.9 inches), a seed fits when its Q_pos curves over every N get exactly
those Q_pos ticks, and its worst-drop curves a lowest tick that reads -1e-4 at one significant figure (-1.5e-4 up to
-5e-5: the printed axis' tick spacing is not legible, so -1.2e-4 or -1.4e-4 count) with 0 among the ticks. The
reading is ours: the paper's panel size and margins are not published.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

PAPER_QPOS_TICKS = (0.60, 0.61, 0.62, 0.63, 0.64)
PAPER_DROP_LOWEST = -1.0e-4
PANEL = (16.0, 4.9)  # brorl.simulation.figure's Figure 3, three panels side by side


def autoscaled_ticks(low: float, high: float) -> list[float]:
    """The y ticks matplotlib shows on one Figure 3 panel whose data span low..high."""
    fig = Figure(figsize=PANEL)
    ax = fig.add_subplot(1, 3, 1)
    ax.plot([0.0, 1.0], [low, high])
    bottom, top = ax.get_ylim()
    span = top - bottom
    return [float(t) for t in ax.get_yticks() if bottom - 1e-9 * span <= t <= top + 1e-9 * span]


def _same(ticks: list[float], wanted: tuple[float, ...], scale: float) -> bool:
    return len(ticks) == len(wanted) and all(abs(a - b) <= 1e-6 * scale for a, b in zip(ticks, wanted))


def seed_fits(runs: pd.DataFrame) -> dict[str, object]:
    """One seed's curves (every N and step): their ranges, the autoscaled ticks, and whether both panels match."""
    lo, hi = float(runs["q_pos"].min()), float(runs["q_pos"].max())
    d_lo, d_hi = float(runs["worst_drop"].min()), float(runs["worst_drop"].max())
    q_ticks, d_ticks = autoscaled_ticks(lo, hi), autoscaled_ticks(d_lo, max(d_hi, 0.0))
    q_fits = _same(q_ticks, PAPER_QPOS_TICKS, 0.01)
    lowest = d_ticks[0] if d_ticks else 0.0
    d_fits = 1.5 * PAPER_DROP_LOWEST <= lowest < 0.5 * PAPER_DROP_LOWEST and any(abs(t) < 1e-12 for t in d_ticks)
    return {
        "q_low": lo,
        "q_high": hi,
        "drop_low": d_lo,
        "q_ticks": q_ticks,
        "drop_lowest_tick": d_ticks[0] if d_ticks else float("nan"),
        "fits": bool(q_fits and d_fits),
        "q_fits": q_fits,
        "drop_fits": bool(d_fits),
    }


def fits_per_seed(runs: pd.DataFrame) -> dict[int, dict[str, object]]:
    """seed -> seed_fits of that seed's runs of one family."""
    return {int(seed): seed_fits(group) for seed, group in runs.groupby("seed", sort=True)}
