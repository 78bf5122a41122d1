"""Tell a person which figures, tables and reports a run has produced: ``python -m brorl.reporting.outputs [results]``.

Used by ``make demo`` after the workflow has run. Only lists what exists; it never reads or changes the files.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Group:
    """One kind of output: a title, where it lives under the results folder, and the file patterns it covers."""

    title: str
    folder: str
    patterns: tuple[str, ...]


GROUPS = (
    Group("Figures", "figures", ("*.png", "*.pdf", "*.svg")),
    Group("Tables", "tables", ("*.md", "*.csv", "*.tex")),
    Group("Statistics", "stats", ("*.json",)),
    Group("Simulation checks", "simulation", ("*.json",)),
    Group("Throughput", "throughput", ("*.json",)),
    Group("Reports", ".", ("report.html", "report.zip", "*.report.html", "*.report.zip")),
)
"""The groups, in the order they are printed. Patterns match files directly inside the group's folder."""


def collect_outputs(results: Path) -> dict[str, list[Path]]:
    """Map each group title to its existing files under ``results`` (sorted; groups without files are left out)."""
    found: dict[str, list[Path]] = {}
    for group in GROUPS:
        folder = results / group.folder
        files = sorted({p for pattern in group.patterns for p in folder.glob(pattern) if p.is_file()})
        if files:
            found[group.title] = files
    return found


def count_runs(results: Path) -> int:
    """Number of simulation run files (parquet) under results/simulation/, sensitivity runs included."""
    folder = results / "simulation"
    return sum(1 for _ in folder.rglob("*.parquet")) if folder.is_dir() else 0


def _size(path: Path) -> str:
    """File size for people: 512 B, 3.4 KiB, 1.2 MiB."""
    n = path.stat().st_size
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1024**2 else f"{n / 1024**2:.1f} MiB"


def format_outputs(results: Path) -> str:
    """A plain-text summary of the outputs under ``results``, grouped, one path per line."""
    if not results.is_dir():
        return f"No results yet: {results}/ does not exist. Run `make demo` (or `snakemake --profile profiles/local`)."
    found = collect_outputs(results)
    runs = count_runs(results)
    if not found and not runs:
        return f"No figures, tables or reports under {results}/ yet."
    lines = [f"Outputs under {results}/:"]
    for title, files in found.items():
        lines.append(f"\n{title} ({len(files)}):")
        lines += [f"  {path}  ({_size(path)})" for path in files]
    if runs:
        lines.append(f"\nSimulation runs: {runs} parquet file(s) under {results / 'simulation'}/")
    if "Reports" not in found:
        lines.append(
            f"\nBrowsable report: make report (the demo's; for another run: .venv/bin/snakemake --report "
            f"{results / 'report.html'} with the run's --profile/--configfile)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m brorl.reporting.outputs", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results", help="the results folder (default: results)")
    args = parser.parse_args(argv)
    print(format_outputs(Path(args.results)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
