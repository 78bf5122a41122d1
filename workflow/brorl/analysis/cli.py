"""Command line of the analysis stage: ``python -m brorl.analysis {units,significance,tables,figures,algorithms,summary}``.

Every command takes ``--spec``: a JSON object built by the workflow from the config (engine, base arm and start
step, the enabled arms, the analysis and evaluation sections, benchmark -> family).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import run_command
from .commands import add_parsers as add_decision_parsers
from .commands import clocks_of, cmd_figures, cmd_significance, hours_of, read_units, spec_of


def _cmd_units(a: argparse.Namespace) -> None:
    from .load import load_units

    start = None
    if a.start:
        arm, step, draws = a.start.rsplit(":", 2)
        start = (arm, int(step), int(draws))
    units = load_units(a.scores, a.benchmarks, expected_samples=a.n, start=start)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    units.to_parquet(a.out, index=False)
    print(
        f"{len(a.scores)} scores files -> {len(units)} instance units "
        f"({units.groupby(['arm', 'step']).ngroups} checkpoints) -> {a.out}"
    )


def _cmd_tables(a: argparse.Namespace) -> None:
    import pandas as pd

    from ..reporting.tables import write_table
    from .checkpoints import benchmark_pass1, family_pass1, reasoning_gym_averages
    from .paper import FAMILIES, checkpoint_rows, is_tiny_scale, load_paper
    from .tables import benchmark_table, display, table1, table1_long

    spec, paper = spec_of(a), load_paper()
    tiny = is_tiny_scale(spec["engine"])
    units = read_units(a.units)
    clocks = clocks_of(a)
    _, hours = hours_of(a, spec, clocks)
    samples = pd.DataFrame(
        [(arm, step, k) for arm, by in clocks["samples"].items() for step, k in by.items()],
        columns=["arm", "step", "samples_k"],
    )
    evaluated = set(map(tuple, units[["arm", "step"]].drop_duplicates().itertuples(index=False)))
    rows = checkpoint_rows(
        paper,
        spec["arms"],
        spec["analysis"]["comparison"],
        spec["start_step"],
        {(str(x), int(y)) for x, y in evaluated},
        spec["base_arm"],
        spec.get("models", ()),
    )
    fam, bench = family_pass1(units), benchmark_pass1(units)
    t1 = table1(paper, rows, fam, hours, spec["start_step"], reasoning_gym_averages(units), samples, tiny)
    title = "Table 1: family pass@1 (%), reproduced beside the paper (one row per checkpoint and measure)"
    _write(write_table, t1, table1_long(display(t1)), a.out_dir / "table1", title)
    families = spec.get("benchmark_families", {})
    for number, family in zip((3, 4, 5), FAMILIES):
        configured = [b for b in spec["evaluation"]["benchmarks"] if families.get(b) == family]
        t = benchmark_table(paper, family, rows, bench, configured, tiny)
        title = f"{paper['benchmark_tables'][family]['title']}: pass@1 (%), reproduced beside the paper"
        _write(write_table, t, display(t), a.out_dir / f"table{number}", title)
    print(f"tables 1, 3, 4, 5 ({len(rows)} checkpoint rows) -> {a.out_dir}")


def _write(write_table, numeric, shown, stem: Path, title: str) -> None:
    """Markdown and LaTeX from the paper-style text cells; CSV keeps the full-precision numbers."""
    paths = (stem.with_suffix(".md"), stem.with_suffix(".csv"), stem.with_suffix(".tex"))
    write_table(shown, *paths, title=title, csv_frame=numeric)


def _cmd_algorithms(a: argparse.Namespace) -> None:
    from ..reporting.tables import write_table
    from .extensions import NOTE, algorithm_rows

    spec = spec_of(a)
    cfg = spec["analysis"]
    clocks = clocks_of(a)
    hours, _ = hours_of(a, spec, clocks)
    table = algorithm_rows(
        read_units(a.units),
        hours,
        cfg["algorithms"]["pairs"],
        target_hours=cfg["equal_time_hours"],
        alpha=cfg["alpha"],
        alternative=cfg["alternative"],
        resamples=cfg["bootstrap"]["resamples"],
        seed=cfg["bootstrap"]["seed"],
        step_sizes=clocks["step_size"],
    )
    title = f"Does the N gain hold per advantage estimator? N=512 vs N=16, paired one-tailed test. {NOTE}"
    groups = {
        "N=16 arm, step, hours": ("n16_arm", "n16_step", "n16_hours"),
        "N=512 arm, step, hours": ("n512_arm", "n512_step", "n512_hours"),
        "step size N=16 / N=512": ("n16_step_size", "n512_step_size"),
        "grad norm N=16 / N=512": ("n16_grad_norm", "n512_grad_norm"),
        "mean N=16 / N=512": ("n16_mean", "n512_mean"),
        "95% CI": ("ci_low", "ci_high"),
    }
    write_table(table, a.out_md, a.out_csv, None, title=title, printed_groups=groups)
    for row in table.itertuples():
        print(
            f"{row.estimator}: {row.verdict}"
            + (f" (delta {row.delta:.3g}, p {row.p:.3g}, Holm {row.p_holm:.3g})" if row.n == row.n else "")
        )


def _cmd_summary(a: argparse.Namespace) -> None:
    import pandas as pd

    from .paper import FAMILIES
    from .summary import render_summary

    spec = spec_of(a)
    table1 = pd.read_csv(a.table1, keep_default_na=False)
    tables = {fam: pd.read_csv(p, keep_default_na=False) for fam, p in zip(FAMILIES, a.benchmark_tables)}
    sig = json.loads(a.significance.read_text())
    claims = pd.read_csv(a.claims, keep_default_na=False) if a.claims else None
    table2 = a.table2_md.read_text() if a.table2_md else None
    patterns = pd.read_csv(a.patterns) if a.patterns else None
    probe = pd.read_csv(a.probe) if a.probe else None
    probe_arms = pd.read_csv(a.probe_arms) if a.probe_arms else None
    in_batch = (pd.read_csv(a.in_batch[0]), pd.read_csv(a.in_batch[1])) if a.in_batch else None
    stale = json.loads(a.stale_code)
    decision = json.loads(a.decision.read_text()) if a.decision else None
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(
        render_summary(
            spec, table1, tables, sig, claims, table2, patterns, probe, probe_arms, in_batch, stale, decision
        )
    )
    print(f"summary -> {a.out}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m brorl.analysis", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    _add_units_parser(sub)
    _add_result_parsers(sub)
    add_decision_parsers(sub)
    _add_summary_parser(sub)
    return p


def _add_units_parser(sub: argparse._SubParsersAction) -> None:
    """Adds the units command: scores parquets -> per-instance units."""
    u = sub.add_parser("units", help="scores parquets -> per-instance units (mean over samples)")
    u.add_argument("--scores", nargs="+", required=True, type=Path, help="<arm>/step<k>/<bench>.scores.parquet")
    u.add_argument("--benchmarks", nargs="+", required=True, type=Path, help="resources/benchmarks/<bench>.jsonl")
    u.add_argument("--n", type=int, default=None, help="samples every instance must have")
    u.add_argument(
        "--start",
        default=None,
        help="ARM:STEP:DRAWS: the start checkpoint has DRAWS x --n samples (each arm's own draw)",
    )
    u.add_argument("--out", required=True, type=Path)
    u.set_defaults(func=_cmd_units)


def _common(sp: argparse.ArgumentParser) -> None:
    """Adds what the commands reading the units take: --units, --metrics and --spec."""
    sp.add_argument("--units", required=True, type=Path, help="output of the units command")
    sp.add_argument("--metrics", nargs="*", default=[], type=Path, help="results/train/<arm>/metrics.jsonl")
    sp.add_argument("--spec", required=True, help="JSON: engine, base_arm, start_step, arms, analysis, evaluation")


def _add_result_parsers(sub: argparse._SubParsersAction) -> None:
    """Adds the commands from the units to results: significance, tables, figures and algorithms."""
    s = sub.add_parser("significance", help="paired one-tailed test at equal training time -> JSON + table")
    _common(s)
    for name in ("json", "md", "csv", "tex"):
        s.add_argument(f"--out-{name}", required=True, type=Path)
    s.set_defaults(func=cmd_significance)

    t = sub.add_parser("tables", help="Tables 1, 3, 4, 5 (md, tex, csv) beside the paper's values")
    _common(t)
    t.add_argument("--out-dir", required=True, type=Path, help="writes table{1,3,4,5}.{md,tex,csv}")
    t.set_defaults(func=_cmd_tables)

    f = sub.add_parser("figures", help="Figures 1 and 4 (and the N sweep) as PNG and PDF")
    _common(f)
    for name in (
        "figure1-png",
        "figure1-pdf",
        "families-png",
        "families-pdf",
        "figure4-png",
        "figure4-pdf",
        "patterns-csv",
    ):
        f.add_argument(f"--{name}", required=True, type=Path)
    f.add_argument("--sweep-png", type=Path, default=None)
    f.add_argument("--sweep-pdf", type=Path, default=None)
    f.add_argument("--points-json", type=Path, default=None, help="data points drawn per figure, and the subtitle")
    f.set_defaults(func=cmd_figures)

    g = sub.add_parser("algorithms", help="the N gain per advantage estimator (analysis.algorithms) -> table")
    _common(g)
    g.add_argument("--out-md", required=True, type=Path)
    g.add_argument("--out-csv", required=True, type=Path)
    g.set_defaults(func=_cmd_algorithms)


def _add_summary_parser(sub: argparse._SubParsersAction) -> None:
    """Adds the summary command: results/SUMMARY.md from the other commands' outputs."""
    m = sub.add_parser("summary", help="results/SUMMARY.md, claim by claim")
    m.add_argument("--spec", required=True)
    m.add_argument("--significance", required=True, type=Path)
    m.add_argument("--table1", required=True, type=Path, help="table1.csv")
    m.add_argument("--benchmark-tables", nargs=3, required=True, type=Path, help="table3/4/5.csv (math, code, RG)")
    m.add_argument("--claims", type=Path, default=None, help="simulation_claims.csv (absent: simulation disabled)")
    m.add_argument("--table2-md", type=Path, default=None, help="the throughput stage's Table 2 (when it exists)")
    m.add_argument("--probe", type=Path, default=None, help="the mass-balance probe's table (CSV; when it is on)")
    m.add_argument("--probe-arms", type=Path, default=None, help="the probe's between-arm tests (CSV; when it is on)")
    m.add_argument(
        "--in-batch", type=Path, nargs=2, default=None, help="the in-batch probe's table and between-arm test (CSV)"
    )
    m.add_argument("--patterns", type=Path, default=None, help="task_patterns.csv of the figures command")
    m.add_argument("--decision", type=Path, default=None, help="the decision experiment's JSON (when it is on)")
    m.add_argument(
        "--stale-code",
        default="{}",
        help="JSON: arm -> files changed since it trained, or null where not recorded (brorl.ops.reruns.stale_code)",
    )
    m.add_argument("--out", required=True, type=Path)
    m.set_defaults(func=_cmd_summary)


def main(argv: list[str] | None = None) -> None:
    """Entry point; bad inputs end with one ``error: ...`` line and exit status 2."""
    from ..benchmarks.records import RecordError
    from .checkpoints import SelectionError
    from .load import AnalysisInputError
    from .paper import PaperDataError

    a = build_parser().parse_args(argv)
    run_command(a, (AnalysisInputError, SelectionError, PaperDataError, RecordError, ValueError), hard_exit=True)
    sys.stdout.flush()
