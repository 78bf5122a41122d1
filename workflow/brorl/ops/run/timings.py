"""Where a run's time went: ``python -m brorl.ops.run.timings [results/timings] [--log .snakemake/log/<run>.log]``.

Every rule with a ``benchmark:`` directive writes one Snakemake timing file per job under ``results/timings/<rule>/``
(a TSV with the job's wall seconds ``s`` and ``cpu_time``). This adds them up per rule: jobs, job-seconds, the longest
job and the CPU seconds, sorted by job-seconds, so a slow stage is seen at a glance. With ``--log`` it also gives the
DAG's wall time (first to last timestamp of a Snakemake log) and how busy the cores were (job-seconds / wall / cores).
Only reads files. The measurement it supports is described in docs/testing.md#measuring-the-demo.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

# Snakemake's log stamps each job event with a line like "[Tue Dec  1 21:40:12 2026]"
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]", re.M)


@dataclass(frozen=True)
class RuleTime:
    """The jobs of one rule: how many, their summed wall seconds, the longest one, their CPU seconds."""

    rule: str
    jobs: int
    job_s: float
    max_s: float
    cpu_s: float


def read_job(path: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one job's timing file; the mean over rows where repeats wrote several."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows or "s" not in rows[0]:
        raise ValueError(f"{path}: not a Snakemake timing file (a TSV with a column s)")
    wall = [float(r["s"]) for r in rows]
    cpu = [float(r.get("cpu_time") or 0.0) for r in rows]
    return math.fsum(wall) / len(wall), math.fsum(cpu) / len(cpu)


def rule_times(jobs: dict[str, list[tuple[float, float]]]) -> list[RuleTime]:
    """Per-rule totals of ``{rule: [(wall, cpu), ...]}``, the rule with the most job-seconds first."""
    out = [
        RuleTime(
            rule, len(times), math.fsum(w for w, _ in times), max(w for w, _ in times), math.fsum(c for _, c in times)
        )
        for rule, times in jobs.items()
        if times
    ]
    return sorted(out, key=lambda r: (-r.job_s, r.rule))


def collect(root: Path) -> list[RuleTime]:
    """The rules under ``root`` (``results/timings``): each first-level folder is a rule, each TSV below it a job."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no timing folder (a run writes results/timings/<rule>/...tsv)")
    jobs = {d.name: [read_job(p) for p in sorted(d.rglob("*.tsv"))] for d in sorted(root.iterdir()) if d.is_dir()}
    return rule_times(jobs)


def log_span_s(text: str) -> float | None:
    """Seconds from the first to the last timestamp of a Snakemake log, or None without two stamps."""
    stamps = [datetime.strptime(" ".join(s.split()), "%a %b %d %H:%M:%S %Y") for s in STAMP.findall(text)]
    return (max(stamps) - min(stamps)).total_seconds() if len(stamps) >= 2 else None


def format_table(rows: list[RuleTime], wall_s: float | None = None, cores: int | None = None) -> str:
    """A Markdown table of ``rows`` with a total line, and the wall time and core use when known."""
    lines = ["| rule | jobs | job-seconds | longest job (s) | CPU seconds |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.rule} | {r.jobs} | {r.job_s:.0f} | {r.max_s:.1f} | {r.cpu_s:.0f} |" for r in rows]
    total = math.fsum(r.job_s for r in rows)
    lines.append(
        f"| **total** | {sum(r.jobs for r in rows)} | {total:.0f} | {max((r.max_s for r in rows), default=0):.1f} | "
        f"{math.fsum(r.cpu_s for r in rows):.0f} |"
    )
    if wall_s:
        busy = f", job-seconds / wall = {total / wall_s:.2f}" + (f" of {cores} cores" if cores else "")
        lines.append(f"\nDAG wall time {wall_s:.0f} s ({wall_s / 60:.1f} min){busy}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m brorl.ops.run.timings", description=__doc__.splitlines()[0])
    p.add_argument("root", nargs="?", type=Path, default=Path("results/timings"), help="the timing folder")
    p.add_argument("--log", type=Path, default=None, help="a Snakemake log (.snakemake/log/...): the DAG's wall time")
    p.add_argument("--cores", type=int, default=None, help="cores the run had, for the core-use figure")
    a = p.parse_args(argv)
    try:
        rows = collect(a.root)
        wall = log_span_s(a.log.read_text(encoding="utf-8")) if a.log else None
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(format_table(rows, wall, a.cores))


if __name__ == "__main__":
    main()
