"""Which of the paper's Figure 3 claims hold in a set of simulation runs (pure pandas / numpy).

Input: the long table of ``io.read_runs`` (one row per run and step, with run columns label, n, seed, optimizer,
lr, eps, weight_decay, vocab, correct, path). Figure 3 plots whole trajectories, so claims 2-4 are judged on each
run's worst drop over every step (its minimum over the run), and the same claims read at the final step T stay in a
column of their own ("holds at T"); Q_pos and the share of improved tokens are read at T. Every number is averaged
over seeds; whether a claim holds is decided on those seed means, and the note says how many single seeds agree.
A claim whose N values are missing from the runs is reported as "not run", never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

PAPER_QPOS_512 = 0.64  # the top tick of Figure 3's Q_pos axis (0.60-0.64); the text states no value
PAPER_N = (4, 8, 16, 512, 51200)
SMALL_N = (4, 8)
# Figure 3's worst-drop axis as printed runs from 0 down to -1.0e-4 (read from the PDF; the text gives no numbers;
# whether a seed's curves draw the panels is brorl.simulation.figure_axes). Our reading of it for the "figure units"
# columns:
FIGURE_ZERO = 5.0e-6  # |worst drop| below 1/20 of that axis (about a line width on the panel) reads as zero
NEAR_ZERO_N = 512
STRICT_N = 51200
YES, NO, NOT_RUN, INFO = "yes", "no", "not run", "info"
TABLE_COLUMNS = [
    "claim",
    "statement",
    "paper",
    "N",
    "measured",
    "holds",
    "holds at T",
    "seeds holding",
    "holds (figure units)",
    "note",
]

CLAIMS = {
    1: "Larger N grows Q_pos faster",
    2: "Small N (4, 8): some correct tokens lose probability",
    3: "N = 512: worst drop essentially zero",
    4: "N = 51200: worst drop zero or positive, ~100% of correct tokens improved",
}
PAPER_TEXT = {
    1: "Q_pos rises faster with more rollouts per step (final Q_pos ordered in N)",
    2: "knowledge shrinkage at N = 4 and 8: worst drop < 0, not all correct tokens improve",
    3: "worst drop ~ 0 at N = 512 (read from Figure 3; the text states no value)",
    4: "worst drop strictly 0 and ~100% of correct tokens improved at N = 51200",
}

REQUIRED = ("label", "n", "seed", "step", "q_pos", "pct_improved", "worst_drop", "correct")


def _fmt(x: float, digits: int = 4) -> str:
    """Readable number: scientific below 1e-3 in magnitude."""
    if x is None or not np.isfinite(x):
        return "nan"
    if x != 0 and abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}".replace("e-0", "e-")
    return f"{x:.{digits}g}"


def check_columns(runs: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED if c not in runs.columns]
    if missing:
        raise ValueError(f"runs table lacks columns {missing}; expected the output of io.read_runs")
    if runs.empty:
        raise ValueError("runs table is empty")


def final_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run (label, n, seed, path): its final step, with worst_drop the run's lowest (over every step)
    and drop_at_T the final step's, plus p0 = a correct token's p at step 0."""
    check_columns(runs)
    key = ["label", "n", "seed"] + (["path"] if "path" in runs.columns else [])
    ordered = runs.sort_values(key + ["step"])
    first = ordered.groupby(key, sort=False).head(1).set_index(key)
    last = ordered.groupby(key, sort=False).tail(1).set_index(key).copy()
    if (first["step"] != 0).any():
        raise ValueError("every run must start at step 0 (p_i(0) is taken from it)")
    last["p0"] = first["q_pos"] / first["correct"]
    last["q_pos0"] = first["q_pos"]
    last["drop_at_T"] = last["worst_drop"]
    last["worst_drop"] = ordered.groupby(key, sort=False)["worst_drop"].min()  # over the whole run
    return last.reset_index()


@dataclass
class _Family:
    """Final-step numbers of one run family: per-N seed means and the per-seed rows."""

    finals: pd.DataFrame  # one row per run
    means: pd.DataFrame  # index n, mean over seeds

    @classmethod
    def of(cls, runs: pd.DataFrame) -> _Family:
        finals = final_rows(runs)
        columns = ["step", "q_pos", "pct_improved", "worst_drop", "drop_at_T", "p0", "q_pos0"]
        means = finals.groupby("n")[columns].mean()
        return cls(finals, means.sort_index())

    @property
    def ns(self) -> list[int]:
        return [int(n) for n in self.means.index]

    def seeds(self, n: int) -> pd.DataFrame:
        return self.finals[self.finals["n"] == n]


def _agree(per_seed: pd.Series, holds: bool) -> str:
    """How many single seeds give the same verdict as the seed mean."""
    same = int((per_seed == holds).sum())
    return f"{same}/{len(per_seed)} seeds agree"


def _strictly_ordered(values: pd.Series | pd.DataFrame, increasing: bool) -> bool | pd.Series:
    """Whether values indexed (or, per row, columned) by N strictly rise (or fall) with N: of a Series one verdict,
    of a DataFrame one per row (seed)."""
    if isinstance(values, pd.DataFrame):
        return pd.Series([_strictly_ordered(row, increasing) for _, row in values.iterrows()], dtype=bool)
    steps = np.diff(values.to_numpy())
    return bool(np.all(steps > 0 if increasing else steps < 0))


def _holding(per_seed: pd.Series) -> str:
    """In how many seeds the claim holds on its own, e.g. "3/5" (a claim decided on seed means can fail in some)."""
    return f"{int(per_seed.sum())}/{len(per_seed)}" if len(per_seed) else "-"


def _claim1(f: _Family) -> dict:
    ns = f.ns
    if len(ns) < 2:
        return {
            "N": ", ".join(map(str, ns)) or "-",
            "measured": "-",
            "holds": NOT_RUN,
            "note": "needs runs at two or more N",
        }
    q = f.means["q_pos"]
    holds = _strictly_ordered(q, increasing=True)
    measured = "Q_pos(T): " + ", ".join(f"N={n}: {q[n]:.4f}" for n in ns)
    measured += f" (Q_pos(0) = {f.means['q_pos0'].iloc[0]:.4f})"
    # Per seed: is the ordering strict for each seed index present at every N?
    pivot = f.finals.pivot_table(index="seed", columns="n", values="q_pos").dropna()
    per_seed = _strictly_ordered(pivot, increasing=True)
    note = "final Q_pos strictly increasing in N" if holds else "final Q_pos not strictly increasing in N"
    missing = [n for n in PAPER_N if n not in ns]
    if len(per_seed):
        note += f"; {_agree(per_seed, holds)}"
    if missing:
        note += f"; paper N not run: {', '.join(map(str, missing))}"
    falls = [n for n in ns if f.means.loc[n, "q_pos"] < f.means.loc[n, "q_pos0"]]
    if falls:
        note += f"; Q_pos falls below Q_pos(0) at N = {', '.join(map(str, falls))}"
    return {
        "N": ", ".join(map(str, ns)),
        "measured": measured,
        "holds": YES if holds else NO,
        "seeds holding": _holding(per_seed),
        "note": note,
    }


def _claim2(f: _Family) -> dict:
    present = [n for n in SMALL_N if n in f.ns]
    if not present:
        return {"N": "4, 8", "measured": "-", "holds": NOT_RUN, "note": "no runs at N = 4 or 8"}
    parts, verdicts, agree = [], [], []
    for n in present:
        m = f.means.loc[n]
        verdicts.append(bool(m["worst_drop"] < 0 and m["pct_improved"] < 100))
        s = f.seeds(n)
        agree.append(((s["worst_drop"] < 0) & (s["pct_improved"] < 100)) == verdicts[-1])
        parts.append(
            f"N={n}: worst drop over the run {_fmt(m['worst_drop'])} ({_fmt(100 * m['worst_drop'] / m['p0'], 3)}% of "
            f"p_i(0); at T {_fmt(m['drop_at_T'])}), {m['pct_improved']:.1f}% improved at T"
        )
    holds = all(verdicts)
    at_t = all(bool(f.means.loc[n, "drop_at_T"] < 0 and f.means.loc[n, "pct_improved"] < 100) for n in present)
    small = f.finals[f.finals["n"].isin(present)]
    per_seed = ((small["worst_drop"] < 0) & (small["pct_improved"] < 100)).groupby(small["seed"]).all()
    agree_all = pd.concat(agree)
    note = f"worst drop over the run < 0 and % improved at T < 100 at {'each' if len(present) > 1 else 'this'} N; " + (
        f"{int(agree_all.sum())}/{len(agree_all)} single runs agree"
    )
    missing = [n for n in SMALL_N if n not in present]
    if missing:
        note += f"; N = {', '.join(map(str, missing))} not run"
    return {
        "N": ", ".join(map(str, present)),
        "measured": "; ".join(parts),
        "holds": YES if holds else NO,
        "holds at T": YES if at_t else NO,
        "seeds holding": _holding(per_seed),
        "note": note,
    }


def figure_units(f: _Family, cid: int) -> str:
    """Whether claim ``cid`` holds when drops are read at Figure 3's scale (|drop| < FIGURE_ZERO looks like 0)."""
    m = f.means
    if cid == 1:
        return INFO
    if cid == 2:
        present = [n for n in SMALL_N if n in f.ns]
        return NOT_RUN if not present else YES if all(m.loc[n, "worst_drop"] < -FIGURE_ZERO for n in present) else NO
    n = NEAR_ZERO_N if cid == 3 else STRICT_N
    if n not in f.ns:
        return NOT_RUN
    return YES if m.loc[n, "worst_drop"] >= -FIGURE_ZERO else NO


def fits_figure_axes(runs: pd.DataFrame) -> tuple[str, str, str]:
    """(yes when every seed fits / no, in how many seeds, per-seed text) for one family: do a seed's curves draw
    Figure 3's panels as printed under matplotlib's autoscaling (brorl.simulation.figure_axes)?"""
    from .figure_axes import fits_per_seed

    seeds = fits_per_seed(runs)
    fitting = sum(bool(s["fits"]) for s in seeds.values())
    text = "; ".join(
        f"seed {seed}: Q_pos {s['q_low']:.4f}..{s['q_high']:.4f} (ticks {s['q_ticks'][0]:.2f}..{s['q_ticks'][-1]:.2f}), "
        f"lowest worst drop {_fmt(s['drop_low'])} (lowest tick {_fmt(s['drop_lowest_tick'], 2)})"
        for seed, s in seeds.items()
    )
    return (YES if seeds and fitting == len(seeds) else NO), f"{fitting}/{len(seeds)}", text


def _row(n: int, measured: str, holds: bool, at_t: bool, per_seed: pd.Series, note: str) -> dict:
    """A claim row judged over the run, with the final step's verdict beside it."""
    return {
        "N": str(n),
        "measured": measured,
        "holds": YES if holds else NO,
        "holds at T": YES if at_t else NO,
        "seeds holding": _holding(per_seed),
        "note": note,
    }


def _claim3(f: _Family, tol: float) -> dict:
    n = NEAR_ZERO_N
    if n not in f.ns:
        return {"N": str(n), "measured": "-", "holds": NOT_RUN, "note": f"no runs at N = {n}"}
    m = f.means.loc[n]
    holds = bool(abs(m["worst_drop"]) <= tol * m["p0"])
    at_t = bool(abs(m["drop_at_T"]) <= tol * m["p0"])
    s = f.seeds(n)
    per_seed = (s["worst_drop"].abs() <= tol * s["p0"]).reset_index(drop=True)
    measured = (
        f"worst drop over the run {_fmt(m['worst_drop'])} = {_fmt(100 * m['worst_drop'] / m['p0'], 3)}% of p_i(0) = "
        f"{_fmt(m['p0'])} (at T {_fmt(m['drop_at_T'])}); {m['pct_improved']:.1f}% improved at T"
    )
    note = f"criterion |worst drop over the run| <= {tol:g} x p_i(0) = {_fmt(tol * m['p0'])}; {_agree(per_seed, holds)}"
    return _row(n, measured, holds, at_t, per_seed, note)


def _claim4(f: _Family, pct: float) -> dict:
    n = STRICT_N
    if n not in f.ns:
        return {"N": str(n), "measured": "-", "holds": NOT_RUN, "note": f"no runs at N = {n}"}
    m = f.means.loc[n]
    holds = bool(m["worst_drop"] >= 0 and m["pct_improved"] >= pct)
    at_t = bool(m["drop_at_T"] >= 0 and m["pct_improved"] >= pct)
    s = f.seeds(n)
    per_seed = ((s["worst_drop"] >= 0) & (s["pct_improved"] >= pct)).reset_index(drop=True)
    measured = (
        f"worst drop over the run {_fmt(m['worst_drop'])} (at T {_fmt(m['drop_at_T'])}); "
        f"{m['pct_improved']:.2f}% improved at T"
    )
    note = (
        f"criterion worst drop over the run >= 0 and >= {pct:g}% improved at the final step; {_agree(per_seed, holds)}"
    )
    return _row(n, measured, holds, at_t, per_seed, note)


def _reference(f: _Family) -> dict:
    n = NEAR_ZERO_N
    if n not in f.ns:
        return {"N": str(n), "measured": "-", "holds": NOT_RUN, "note": f"no runs at N = {n}"}
    m = f.means.loc[n]
    diff = m["q_pos"] - PAPER_QPOS_512
    return {
        "N": str(n),
        "measured": f"Q_pos(T = {int(m['step'])}) = {m['q_pos']:.4f}",
        "holds": INFO,
        "note": f"differs from {PAPER_QPOS_512} by {diff:+.4f} (informational, not a claim of the figure)",
    }


def update_spread(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run (n, seed): the noise of the update, the standard deviation of dQ(t) - dQ(t-1) over steps divided by
    sqrt(2), with dQ(t) = Q_pos(t) - Q_pos(t-1). Differencing twice removes the slow drift of the update (its size
    changes over the run), so what is left is the step-to-step scatter that sampling N tokens causes."""
    ordered = runs.sort_values(["n", "seed", "step"])
    change = ordered.groupby(["n", "seed"])["q_pos"].diff()
    jitter = change.groupby([ordered["n"], ordered["seed"]]).diff()
    spread = jitter.groupby([ordered["n"], ordered["seed"]]).std() / np.sqrt(2.0)
    return spread.rename("spread").reset_index()


def _variance(runs: pd.DataFrame) -> dict:
    """Section 4.1's "small-N updates exhibit higher variance": the step-to-step noise of the update
    (``update_spread``) falls as N grows (seed means; strictly, across every N run)."""
    spread = update_spread(runs)
    means = spread.groupby("n")["spread"].mean().sort_index()
    if len(means) < 2:
        return {"N": "-", "measured": "-", "holds": NOT_RUN, "note": "needs runs at two or more N"}
    holds = _strictly_ordered(means, increasing=False)
    per_seed = _strictly_ordered(spread.pivot_table(index="seed", columns="n", values="spread").dropna(), False)
    return {
        "N": ", ".join(str(int(n)) for n in means.index),
        "measured": "noise of dQ_pos per step: " + ", ".join(f"N={int(n)}: {_fmt(v, 3)}" for n, v in means.items()),
        "holds": YES if holds else NO,
        "seeds holding": _holding(per_seed),
        "note": f"criterion: strictly decreasing in N; {_agree(per_seed, holds)}",
    }


def evaluate_claims(runs: pd.DataFrame, tol: float, pct: float) -> tuple[_Family, dict[int | str, dict]]:
    """One family's seed means and each claim's row (1-4) with the Q_pos reference (``"ref"``)."""
    f = _Family.of(runs)
    return f, {1: _claim1(f), 2: _claim2(f), 3: _claim3(f, tol), 4: _claim4(f, pct), "ref": _reference(f)}


def main_family(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs labelled "main", or all runs when no run has that label."""
    check_columns(runs)
    main = runs[runs["label"] == "main"]
    return main if len(main) else runs


def check_thresholds(tol: float, pct: float) -> None:
    if not tol >= 0:
        raise ValueError(f"near_zero_rel_tol must be >= 0, got {tol}")
    if not 0 <= pct <= 100:
        raise ValueError(f"full_improvement_pct must be in [0, 100], got {pct}")


def claims_table(runs: pd.DataFrame, near_zero_rel_tol: float, full_improvement_pct: float) -> pd.DataFrame:
    """One row per Figure 3 claim (plus the Q_pos ~ 0.64 reference row) for the "main" run family.

    Columns: claim (id), statement, paper, N, measured (seed means: worst drops over the run and at T, Q_pos
    and % improved at T), holds (yes / no / not run / info; claims 2-4 on the worst drop over the run), holds at T
    (the same at the final step), seeds holding (in how many seeds the claim holds on its own), note (criterion,
    seed agreement, missing N).
    """
    check_thresholds(near_zero_rel_tol, full_improvement_pct)
    fam = main_family(runs)
    f, results = evaluate_claims(fam, near_zero_rel_tol, full_improvement_pct)
    rows = []
    for cid in (1, 2, 3, 4):
        rows.append(
            {
                "claim": str(cid),
                "statement": CLAIMS[cid],
                "paper": PAPER_TEXT[cid],
                "seeds holding": "-",
                **results[cid],
                "holds (figure units)": figure_units(f, cid),
            }
        )
    rows.append(
        {
            "claim": "variance",
            "statement": "Small N: the update varies more from step to step",
            "paper": "small-N updates exhibit higher variance (Section 4.1; no number)",
            "holds (figure units)": INFO,
            **_variance(fam),
        }
    )
    rows.append(
        {
            "claim": "ref",
            "statement": "Q_pos after 1000 steps at N = 512",
            "paper": f"Figure 3's axis tops at {PAPER_QPOS_512} (no value in the text)",
            "seeds holding": "-",
            **results["ref"],
            "holds (figure units)": INFO,
        }
    )
    rows.append(_axes_row(fam))
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _axes_row(fam: pd.DataFrame) -> dict:
    """The table's "axes" row: in how many seeds the curves draw Figure 3's panels as printed (information)."""
    fits, seeds, text = fits_figure_axes(fam)
    return {
        "claim": "axes",
        "statement": "a seed's curves draw Figure 3's panels as printed",
        "N": "all",
        "paper": "Q_pos ticks 0.60-0.64; worst drop 0 to -1.0e-4 (read from the figure)",
        "measured": text,
        "holds": INFO,
        "seeds holding": seeds,
        "holds (figure units)": fits,
        "note": "per seed, matplotlib's autoscaled ticks on one of this project's Figure 3 panels: exactly "
        "0.60..0.64 for Q_pos, and a lowest worst-drop tick reading -1e-4 (brorl.simulation.figure_axes)",
    }
