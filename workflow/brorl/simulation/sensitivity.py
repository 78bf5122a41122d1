"""The sensitivity table: every run family (one optimizer or anchor variant, ``label``) with its final Q_pos per N and
whether each of Figure 3's claims holds for it, judged by brorl.simulation.claims as for the main family (pure)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .claims import (
    NEAR_ZERO_N,
    NOT_RUN,
    check_columns,
    check_thresholds,
    evaluate_claims,
    figure_units,
    fits_figure_axes,
)


def _settings(runs: pd.DataFrame) -> dict:
    """Optimizer settings of one family (joined when they differ between its runs)."""
    out = {}
    for col in ("optimizer", "lr", "eps", "weight_decay", "anchor", "anchor_frozen"):
        if col in runs.columns:
            vals = list(dict.fromkeys(runs[col].tolist()))
            out[col] = vals[0] if len(vals) == 1 else " / ".join(map(str, vals))
    return out


def sensitivity_table(runs: pd.DataFrame, near_zero_rel_tol: float, full_improvement_pct: float) -> pd.DataFrame:
    """One row per run family (``label``): optimizer and anchor settings, final Q_pos per N, % improved, worst drop
    over the run at N = 512, whether each of the four claims holds (yes / no / not run; over the run, at T, and in
    Figure 3's units), and in how many seeds the family's curves draw Figure 3's axes as printed."""
    check_thresholds(near_zero_rel_tol, full_improvement_pct)
    check_columns(runs)
    all_ns = sorted(int(n) for n in runs["n"].unique())
    rows = []
    for label in dict.fromkeys(runs["label"].tolist()):
        fam = runs[runs["label"] == label]
        f, results = evaluate_claims(fam, near_zero_rel_tol, full_improvement_pct)
        row: dict = {"label": label, **_settings(fam), "seeds": int(f.finals.groupby("n")["seed"].nunique().max())}
        for n in all_ns:
            row[f"Q_pos(T) N={n}"] = float(f.means.loc[n, "q_pos"]) if n in f.ns else np.nan
        largest = max(f.ns)
        row["largest N"] = largest
        row["% improved at largest N"] = float(f.means.loc[largest, "pct_improved"])
        has512 = NEAR_ZERO_N in f.ns
        row[f"% improved N={NEAR_ZERO_N}"] = float(f.means.loc[NEAR_ZERO_N, "pct_improved"]) if has512 else np.nan
        row[f"worst drop N={NEAR_ZERO_N}"] = float(f.means.loc[NEAR_ZERO_N, "worst_drop"]) if has512 else np.nan
        row[f"worst drop / p_i(0) N={NEAR_ZERO_N}"] = (
            float(f.means.loc[NEAR_ZERO_N, "worst_drop"] / f.means.loc[NEAR_ZERO_N, "p0"]) if has512 else np.nan
        )
        for cid in (1, 2, 3, 4):
            row[f"claim {cid}"] = results[cid]["holds"]
            row[f"claim {cid} seeds holding"] = results[cid].get("seeds holding", "-")
            if cid > 1:
                row[f"claim {cid} at T"] = results[cid].get("holds at T", NOT_RUN)
                row[f"claim {cid} (figure units)"] = figure_units(f, cid)
        row["fits Figure 3 axes"], row["fits Figure 3 axes seeds"], _ = fits_figure_axes(fam)
        row["Q_pos lowest"], row["Q_pos highest"] = float(fam["q_pos"].min()), float(fam["q_pos"].max())
        row["lowest worst drop"] = float(fam["worst_drop"].min())
        rows.append(row)
    return pd.DataFrame(rows)
