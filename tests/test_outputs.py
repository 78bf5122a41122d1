"""`python -m brorl.reporting.outputs`: the summary `make demo` prints after a run."""

from __future__ import annotations

import subprocess
import sys

from brorl.reporting.outputs import collect_outputs, count_runs, format_outputs


def make_results(root):
    for rel in (
        "figures/figure3.png",
        "figures/figure3.pdf",
        "tables/simulation_claims.md",
        "tables/simulation_claims.csv",
        "simulation/theory_checks.json",
        "simulation/N4_seed0.parquet",
        "simulation/sensitivity/sgd/N4_seed0.parquet",
        "logs/plot_simulation/figure3.log",
    ):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 2048)
    return root


def test_groups_list_existing_files_only(tmp_path):
    results = make_results(tmp_path / "results")
    found = collect_outputs(results)
    assert list(found) == ["Figures", "Tables", "Simulation checks"]
    assert [p.name for p in found["Figures"]] == ["figure3.pdf", "figure3.png"]
    assert [p.name for p in found["Simulation checks"]] == ["theory_checks.json"]
    assert count_runs(results) == 2


def test_summary_names_paths_and_suggests_the_report(tmp_path):
    results = make_results(tmp_path / "results")
    text = format_outputs(results)
    assert str(results / "figures" / "figure3.png") in text and "(2.0 KiB)" in text
    assert "Simulation runs: 2 parquet file(s)" in text
    assert "make report" in text and ".venv/bin/snakemake --report" in text  # commands a fresh clone has
    (results / "report.html").write_text("<html></html>")
    assert "Reports (1)" in format_outputs(results)


def test_missing_or_empty_results_say_so(tmp_path):
    assert "does not exist" in format_outputs(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    assert "No figures, tables or reports" in format_outputs(tmp_path / "empty")


def test_command_line(tmp_path):
    results = make_results(tmp_path / "results")
    proc = subprocess.run(
        [sys.executable, "-m", "brorl.reporting.outputs", str(results)], capture_output=True, text=True, check=True
    )
    assert "Figures (2):" in proc.stdout and "Tables (2):" in proc.stdout
