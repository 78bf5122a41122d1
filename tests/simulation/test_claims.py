"""Claims and sensitivity tables, table writing, Figure 3 and provenance."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from brorl.reporting.provenance import provenance
from brorl.reporting.tables import write_table
from brorl.simulation.claims import claims_table
from brorl.simulation.sensitivity import sensitivity_table

Q0, C = 0.6, 10
P0 = Q0 / C  # a correct token's initial probability in the hand-made runs


def _runs(finals: dict[int, tuple[float, float, float]], label: str = "main", seeds=(0, 1), **opt) -> pd.DataFrame:
    """Hand-made runs: per N the final (q_pos, pct_improved, worst_drop), reached linearly over steps 0..2."""
    rows = []
    settings = {"optimizer": "adamw", "lr": 1e-3, "eps": 1e-8, "weight_decay": 0.0, **opt}
    for n, (q, pct, drop) in finals.items():
        for seed in seeds:
            for step in range(3):
                f = step / 2
                rows.append(
                    {
                        "step": step,
                        "q_pos": Q0 + f * (q - Q0),
                        "pct_improved": f * pct,
                        "worst_drop": f * drop,
                        "label": label,
                        "n": n,
                        "seed": seed,
                        "vocab": 100,
                        "correct": C,
                        "path": f"{label}_{n}_{seed}.parquet",
                        **settings,
                    }
                )
    return pd.DataFrame(rows)


GOOD = {
    4: (0.59, 20.0, -0.1 * P0),
    8: (0.595, 30.0, -0.1 * P0),
    16: (0.61, 40.0, -0.1 * P0),
    512: (0.64, 99.0, -0.001 * P0),
    51200: (0.65, 100.0, 0.0),
}


def _holds(table: pd.DataFrame, column: str = "holds") -> dict[str, str]:
    return {k: v for k, v in zip(table["claim"], table[column]) if k not in ("axes", "variance")}


def test_claims_read_at_the_figures_scale_and_whether_the_curves_fill_its_axes() -> None:
    """Drops below 5e-6 look like zero on Figure 3's worst-drop axis (0 to -1e-4); its panels span Q_pos 0.60-0.64."""
    like_the_demo = {
        4: (0.6087, 13.7, -2.9e-6),
        8: (0.6097, 26.2, -4.0e-6),
        16: (0.6142, 38.7, -5.1e-6),
        512: (0.6408, 82.4, -3.6e-6),
        51200: (0.6541, 100.0, 1.3e-6),
    }
    table = claims_table(_runs(like_the_demo, correct=10_000), 0.01, 99.9)
    assert _holds(table)["3"] == "no"  # strict: |drop| > 1% of a correct token's p_i(0)
    assert _holds(table, "holds (figure units)") == {"1": "info", "2": "no", "3": "yes", "4": "yes", "ref": "info"}
    axes = table.set_index("claim").loc["axes"]
    assert axes["holds (figure units)"] == "no" and axes["seeds holding"] == "0/2"
    assert "seed 0: Q_pos 0.6000..0.6541 (ticks 0.60..0.65), lowest worst drop -5.100e-6" in axes["measured"]
    # curves that matplotlib's autoscaling draws with the paper's ticks: Q_pos 0.60..0.64 and a lowest drop tick
    # of -1e-4 (brorl.simulation.figure_axes); 0.640 as the top would give ticks 0.005 apart instead
    fills = {4: (0.601, 10.0, -1.1e-4), 512: (0.63, 90.0, -1e-6), 51200: (0.6473, 100.0, 0.0)}
    fits = claims_table(_runs(fills, correct=10_000), 0.01, 99.9).set_index("claim").loc["axes"]
    assert fits["holds (figure units)"] == "yes" and fits["seeds holding"] == "2/2", fits["measured"]
    flat_top = {4: (0.601, 10.0, -1.1e-4), 51200: (0.64, 100.0, 0.0)}
    assert (
        claims_table(_runs(flat_top, correct=10_000), 0.01, 99.9).set_index("claim").loc["axes", "seeds holding"]
        == "0/2"
    )


def test_claims_2_to_4_are_judged_over_the_whole_run_and_at_the_final_step_apart() -> None:
    """A run whose worst drop dips below zero mid-run and recovers by T: claim 4 fails over the run, holds at T."""
    runs = _runs(GOOD)
    dip = (runs["n"] == 51200) & (runs["step"] == 1)
    runs.loc[dip, "worst_drop"] = -2e-7
    row = claims_table(runs, 0.01, 99.9).set_index("claim").loc["4"]
    assert (row["holds"], row["holds at T"]) == ("no", "yes")
    assert "worst drop over the run -2.000e-7 (at T 0)" in row["measured"]


def test_every_claim_holds() -> None:
    table = claims_table(_runs(GOOD), near_zero_rel_tol=0.01, full_improvement_pct=99.9)
    assert _holds(table) == {"1": "yes", "2": "yes", "3": "yes", "4": "yes", "ref": "info"}
    assert {"claim", "paper", "measured", "holds", "note"} <= set(table.columns)
    measured = table.set_index("claim").loc["1", "measured"]
    assert "N=512: 0.6400" in measured and "N=51200: 0.6500" in measured
    assert "0.64" in table.set_index("claim").loc["ref", "measured"]


def test_every_claim_fails() -> None:
    bad = {4: (0.59, 100.0, 0.0), 8: (0.58, 100.0, 0.0), 512: (0.64, 80.0, -0.06 * P0), 51200: (0.63, 99.0, -1e-9)}
    holds = _holds(claims_table(_runs(bad), 0.01, 99.9))
    assert holds == {"1": "no", "2": "no", "3": "no", "4": "no", "ref": "info"}


def test_thresholds_decide_claims_3_and_4() -> None:
    runs = _runs({512: (0.64, 99.0, -0.05 * P0), 51200: (0.65, 99.5, 0.0)})
    assert _holds(claims_table(runs, 0.01, 99.9))["3"] == "no"
    assert _holds(claims_table(runs, 0.1, 99.0)) == {"1": "yes", "2": "not run", "3": "yes", "4": "yes", "ref": "info"}


def test_claims_without_their_n_are_not_run_not_dropped() -> None:
    table = claims_table(_runs({4: GOOD[4]}), 0.01, 99.9)
    assert list(table["claim"]) == ["1", "2", "3", "4", "variance", "ref", "axes"]
    assert _holds(table) == {"1": "not run", "2": "yes", "3": "not run", "4": "not run", "ref": "not run"}
    assert "N = 8 not run" in table.set_index("claim").loc["2", "note"]


def test_claims_use_the_main_family_and_the_final_step() -> None:
    runs = pd.concat([_runs(GOOD), _runs({4: (0.7, 0.0, 0.0), 8: (0.1, 0.0, 0.0)}, label="other")])
    assert _holds(claims_table(runs, 0.01, 99.9))["1"] == "yes"
    # Seed means: one seed with a drop and one without averages to a drop.
    mixed = _runs({4: GOOD[4]}, seeds=(0,))
    flat = _runs({4: (0.59, 100.0, 0.0)}, seeds=(1,))
    table = claims_table(pd.concat([mixed, flat]), 0.01, 99.9)
    assert _holds(table)["2"] == "yes" and "1/2 single runs agree" in table.set_index("claim").loc["2", "note"]
    assert table.set_index("claim").loc["2", "seeds holding"] == "1/2"  # holds on the mean, in one seed of two


def test_sensitivity_table_one_row_per_label() -> None:
    runs = pd.concat(
        [
            _runs(GOOD),
            _runs({4: GOOD[4], 512: (0.64, 80.0, -0.06 * P0)}, label="eps1e-6", seeds=(0,), eps=1e-6),
        ]
    )
    table = sensitivity_table(runs, 0.01, 99.9)
    assert list(table["label"]) == ["main", "eps1e-6"]
    row = table.set_index("label").loc["eps1e-6"]
    assert row["eps"] == 1e-6 and np.isnan(row["Q_pos(T) N=8"]) and row["Q_pos(T) N=512"] == pytest.approx(0.64)
    assert (row["claim 1"], row["claim 2"], row["claim 3"], row["claim 4"]) == ("yes", "yes", "no", "not run")
    # in how many seeds each claim holds on its own (eps1e-6 ran one seed; N=51,200 not at all)
    assert (row["claim 3 seeds holding"], row["claim 4 seeds holding"]) == ("0/1", "-")
    assert tuple(table.set_index("label").loc["main", ["claim 1", "claim 2", "claim 3", "claim 4"]]) == ("yes",) * 4
    assert {"% improved at largest N", "% improved N=512", "worst drop N=512"} <= set(table.columns)
    # its markdown joins settings, per-N values and claims: every named column exists, and it prints in 12
    from brorl.reporting.tables import MAX_PRINTED_COLUMNS, joined
    from brorl.simulation.cli import SENSITIVITY_PRINTED, claim_cells

    cells = claim_cells(table)
    named = {c for group in SENSITIVITY_PRINTED.values() for c in group}
    assert named - set(cells.columns) == {"anchor", "anchor_frozen"}  # these synthetic runs carry no anchor settings
    printed = joined(cells, SENSITIVITY_PRINTED)
    assert len(printed.columns) <= MAX_PRINTED_COLUMNS and not any("seeds holding" in c for c in cells.columns)
    assert printed.set_index("label").loc["eps1e-6", "claims 1-4 over the run (seeds holding)"] == (
        "yes (1/1) / yes (1/1) / no (0/1) / not run (-)"
    )
    assert printed.set_index("label").loc["eps1e-6", "claims 2-4 at the final step"] == "yes / no / not run"


def test_write_table(tmp_path) -> None:
    df = pd.DataFrame({"name": ["a_b", "c|d"], "value": [-3.6e-6, 0.6408], "n": [4, 51200]})
    md, csv, tex = tmp_path / "x" / "t.md", tmp_path / "y" / "t.csv", tmp_path / "z" / "t.tex"
    write_table(df, md, csv, tex, title="My title")
    text = md.read_text()
    assert text.startswith("# My title\n") and "Produced by" in text
    assert json.loads((tmp_path / "y" / "t.csv.json").read_text())["rows"] == 2  # the full command's sidecar
    assert "-3.6e-6" in text and "0.6408" in text and r"c\|d" in text
    back = pd.read_csv(csv)
    assert back["value"].iloc[0] == -3.6e-6 and list(back.columns) == ["name", "value", "n"]
    latex = tex.read_text()
    assert r"\toprule" in latex and r"a\_b" in latex and r"\bottomrule" in latex
    # printed_groups join columns in the markdown and LaTeX only; the CSV keeps them apart
    write_table(df, tmp_path / "g.md", tmp_path / "g.csv", tmp_path / "g.tex", printed_groups={"v / n": ("value", "n")})
    assert "| name | v / n |" in (tmp_path / "g.md").read_text() and "0.6408 / 51200" in (tmp_path / "g.md").read_text()
    assert list(pd.read_csv(tmp_path / "g.csv").columns) == ["name", "value", "n"]
    write_table(df, tmp_path / "u.md", tmp_path / "u.csv")  # no tex, no title
    assert not (tmp_path / "u.tex").exists() and (tmp_path / "u.md").read_text().startswith("Produced by")


def test_plot_figure3_from_real_runs(tmp_path) -> None:
    from brorl.simulation import SimulationSpec, simulate
    from brorl.simulation.figure import plot_figure3
    from brorl.simulation.io import read_runs, write_run

    paths = []
    for n, seed in ((4, 0), (64, 0), (64, 1)):
        spec = SimulationSpec(vocab=300, correct=30, n=n, steps=8, seed=seed)
        path = tmp_path / f"n{n}_s{seed}.parquet"
        write_run(simulate(spec), {"spec": spec.as_dict(), "label": "main"}, path)
        paths.append(path)
    runs = read_runs(paths)
    png, pdf = tmp_path / "fig" / "f.png", tmp_path / "fig" / "f.pdf"
    drawn = plot_figure3(runs, png, pdf)
    assert drawn == 3 * 2 * runs["step"].nunique()  # three panels, one line per N (mean over seeds) of every step
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1_000
    claims_table(runs, 0.01, 99.9)  # real runs go through the claims code too


def test_provenance_keys_and_json() -> None:
    record = provenance({"stage": "test"})
    json.dumps(record)
    assert {"git", "packages", "python", "machine", "timestamp_utc", "stage"} <= set(record)
    assert {"commit", "dirty"} <= set(record["git"])
    for name in (
        "torch",
        "numpy",
        "pandas",
        "snakemake",
        "vllm",
        "openrlhf",
        "transformers",
        "math-verify",
        "reasoning-gym",
    ):
        assert name in record["packages"]
    assert record["packages"]["numpy"] == np.__version__
    assert record["machine"]["nproc"] >= 1 and record["timestamp_utc"].endswith("+00:00")


def test_provenance_does_not_import_heavy_packages() -> None:
    code = (
        "import sys, json, brorl.reporting.provenance as p; json.dumps(p.provenance()); "
        "print([m for m in ('torch', 'numpy', 'pandas') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_provenance_outside_git(tmp_path) -> None:
    from brorl.reporting.provenance import git_state

    assert git_state(tmp_path) == {"commit": None, "dirty": None, "root": None}


def test_the_variance_claim_reads_the_spread_of_the_step_to_step_change_of_q_pos() -> None:
    """Section 4.1: small-N updates vary more. Scatter of the update shrinking with N holds, whatever the update's
    drift (a larger N here also moves Q_pos faster and faster); a smooth path at the smallest N does not."""
    rng = np.random.default_rng(0)
    rows = []
    for n, noise, drift in ((4, 1e-3, 0.0), (16, 5e-4, 1e-5), (512, 1e-4, 1e-4)):
        for seed in (0, 1):
            update = drift * np.arange(200) + rng.normal(0.0, noise, 200)
            q = 0.6 + np.cumsum(update)
            rows += [{"step": s, "q_pos": v, "n": n, "seed": seed} for s, v in enumerate(q)]
    runs = pd.DataFrame(rows).assign(label="main", pct_improved=50.0, worst_drop=0.0, correct=C)
    row = claims_table(runs, 0.01, 99.9).set_index("claim").loc["variance"]
    assert row["holds"] == "yes" and row["seeds holding"] == "2/2", row["measured"]
    assert "N=4: 0.001, N=16: 5.09e-4" in row["measured"], row["measured"]  # the scatter drawn: 1e-3, 5e-4
    smooth = runs.assign(n=runs["n"].replace({4: 1024}))  # the noisiest path now at the largest N
    assert claims_table(smooth, 0.01, 99.9).set_index("claim").loc["variance", "holds"] == "no"
