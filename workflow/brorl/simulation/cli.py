"""Command line of the simulation stage: ``python -m brorl.simulation {run,check-theory,figure,claims,n-grid}``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import run_command
from .memory import keep_freed_memory
from .spec import OptimizerSpec, SimulationError, SimulationSpec


def add_problem_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vocab", type=int, default=128_000, help="vocabulary size V")
    p.add_argument("--correct", type=int, default=10_000, help="number of correct tokens C (reward +1)")
    p.add_argument("--init-correct", type=float, default=3.0, help="initial logit a of every correct token")
    p.add_argument("--init-anchor", type=float, default=5.0, help="initial logit b of the anchor token")
    p.add_argument(
        "--anchor-class",
        choices=("incorrect", "correct"),
        default="correct",
        help="reward class of the anchor token (the paper does not say; config.yaml's default)",
    )
    p.add_argument(
        "--freeze-anchor",
        action="store_true",
        help="keep the anchor's logit fixed during training (one reading of the paper's 'fixing')",
    )


def add_optimizer_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--optimizer", default="adamw", help="adamw or sgd")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.999), metavar=("BETA1", "BETA2"))
    p.add_argument("--eps", type=float, default=1e-8, help="Adam epsilon")
    p.add_argument("--weight-decay", type=float, default=0.01, help="torch AdamW's default, as config.yaml's")


def spec_from_args(a: argparse.Namespace, n: int, seed: int) -> SimulationSpec:
    opt = OptimizerSpec(a.optimizer, a.lr, tuple(a.betas), a.eps, a.weight_decay)
    return SimulationSpec(
        a.vocab,
        a.correct,
        a.init_correct,
        a.init_anchor,
        n,
        a.steps,
        seed,
        opt,
        anchor_correct=a.anchor_class == "correct",
        freeze_anchor=a.freeze_anchor,
    )


def _cmd_run(a: argparse.Namespace) -> None:
    """One run per (--n, --seed, --out) triple, in one process: torch's import is most of a short run's time."""
    from ..reporting.provenance import provenance
    from .engine import simulate
    from .io import write_run

    if not len(a.n) == len(a.seed) == len(a.out):
        raise SimulationError(
            f"--n, --seed and --out pair up run by run: got {len(a.n)} N, {len(a.seed)} seeds and {len(a.out)} outputs"
        )
    if len(set(a.out)) != len(a.out):
        raise SimulationError("two runs would write the same --out file")
    specs = [spec_from_args(a, n, seed) for n, seed in zip(a.n, a.seed)]  # every spec checked before the first run
    for spec, out in zip(specs, a.out):
        df = simulate(spec, progress=True)
        write_run(df, {"spec": spec.as_dict(), "label": a.label, "provenance": provenance()}, out)
        last = df.iloc[-1]
        print(
            f"N={spec.n} seed={spec.seed}: Q_pos {df.q_pos.iloc[0]:.4f} -> {last.q_pos:.4f}, "
            f"{last.pct_improved:.1f}% of correct tokens improved, worst drop {last.worst_drop:.3g} -> {out}",
            flush=True,
        )


def _cmd_check_theory(a: argparse.Namespace) -> None:
    from ..reporting.provenance import provenance
    from .theory_checks import run_theory_checks

    spec = spec_from_args(a, a.n_values[0], a.seed)
    report = run_theory_checks(spec, a.n_values, a.mc_trials, a.theorem_draws, a.finite_step, a.seed)
    report["provenance"] = provenance()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"theory checks: {'all passed' if report['passed'] else 'SOME FAILED'} -> {a.out}")
    if not report["passed"] and a.strict:
        sys.exit(1)


def _cmd_figure(a: argparse.Namespace) -> None:
    from ..reporting.figure_points import report_points
    from .figure import plot_figure3
    from .io import read_runs

    report_points("Figure 3", plot_figure3(read_runs(a.runs), Path(a.png), Path(a.pdf)), a.png)


# the sensitivity table's markdown within the printed width: settings, values per N and claims each in one column
SENSITIVITY_PRINTED = {
    "optimizer, lr, eps, weight decay, anchor, frozen": (
        "optimizer",
        "lr",
        "eps",
        "weight_decay",
        "anchor",
        "anchor_frozen",
    ),
    "Q_pos(T) N=4 / 16 / 512 / 51200": ("Q_pos(T) N=4", "Q_pos(T) N=16", "Q_pos(T) N=512", "Q_pos(T) N=51200"),
    "largest N, % improved": ("largest N", "% improved at largest N"),
    "N=512: % improved, worst drop over the run, / p_i(0)": (
        "% improved N=512",
        "worst drop N=512",
        "worst drop / p_i(0) N=512",
    ),
    "claims 1-4 over the run (seeds holding)": ("claim 1", "claim 2", "claim 3", "claim 4"),  # "yes (1/1)"
    "claims 2-4 at the final step": ("claim 2 at T", "claim 3 at T", "claim 4 at T"),
    "claims 2-4 in figure units": ("claim 2 (figure units)", "claim 3 (figure units)", "claim 4 (figure units)"),
    "fits Figure 3 axes (seeds)": ("fits Figure 3 axes", "fits Figure 3 axes seeds"),
    "Q_pos lowest / highest, lowest worst drop": ("Q_pos lowest", "Q_pos highest", "lowest worst drop"),
}


def claim_cells(table):
    """The sensitivity table with each claim's verdict and its seeds holding in one cell, ``yes (4/5)``."""
    out = table.copy()
    for k in range(1, 5):
        verdict, seeds = f"claim {k}", f"claim {k} seeds holding"
        if verdict in out.columns and seeds in out.columns:
            out[verdict] = [f"{v} ({n})" for v, n in zip(out[verdict], out[seeds])]
            out = out.drop(columns=[seeds])
    return out


def _cmd_claims(a: argparse.Namespace) -> None:
    from ..reporting.tables import write_table
    from .claims import claims_table
    from .io import read_runs
    from .sensitivity import sensitivity_table

    claims = claims_table(read_runs(a.runs), a.near_zero_rel_tol, a.full_improvement_pct)
    write_table(claims, a.out_md, a.out_csv, title="Figure 3 claims: do they hold in this reproduction?")
    if a.sensitivity_runs:
        table = sensitivity_table(read_runs(a.sensitivity_runs), a.near_zero_rel_tol, a.full_improvement_pct)
        write_table(
            claim_cells(table),
            a.sensitivity_md,
            a.sensitivity_csv,
            title="Optimizer sensitivity of the Figure 3 claims",
            csv_frame=table,
            printed_groups=SENSITIVITY_PRINTED,
        )
    print(claims.to_string(index=False))


def _cmd_n_grid(a: argparse.Namespace) -> None:
    from ..reporting.tables import write_table
    from .io import read_runs
    from .n_grid import n_grid_table, plot_n_grid, shape_verdict

    table = n_grid_table(read_runs(a.runs))
    verdict = shape_verdict(table)
    title = (
        f"Simulation over N: gain in Q_pos after the last step; monotonic in N: "
        f"{'yes' if verdict['monotonic'] else 'no'}; concave in log N: "
        f"{'yes' if verdict['concave_in_log_n'] else 'no, from N = ' + str(verdict['first_non_concave_N'])}"
    )
    write_table(table, a.out_md, a.out_csv, title=title)
    from ..reporting.figure_points import report_points

    report_points("the simulation's N grid", plot_n_grid(table, verdict, a.mark, Path(a.png), Path(a.pdf)), a.png)
    print(title)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by tests)."""
    parser = argparse.ArgumentParser(prog="python -m brorl.simulation", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run", help="simulation runs (one per --n/--seed/--out triple) -> parquet with step, q_pos, pct_improved, ..."
    )
    add_problem_args(run)
    add_optimizer_args(run)
    run.add_argument("--n", type=int, nargs="+", required=True, help="i.i.d. draws (rollouts) per step, per run")
    run.add_argument("--steps", type=int, default=1000)
    run.add_argument("--seed", type=int, nargs="+", default=[0], help="seed per run, paired with --n")
    run.add_argument("--label", default="main", help="run family (e.g. a sensitivity variant), stored in the file")
    run.add_argument("--out", nargs="+", required=True, help="parquet per run, paired with --n")
    run.set_defaults(func=_cmd_run)

    th = sub.add_parser("check-theory", help="Theorem 1 (first order) and Lemma 2 (Monte Carlo) checks -> JSON")
    add_problem_args(th)
    th.add_argument("--n-values", type=int, nargs="+", default=[4, 16, 512, 51200])
    th.add_argument("--mc-trials", type=int, default=2000)
    th.add_argument("--theorem-draws", type=int, default=20)
    th.add_argument("--finite-step", type=float, default=1e-7, help="max |dz| of the finite-step check")
    th.add_argument("--seed", type=int, default=1234)
    th.add_argument("--strict", action="store_true", help="exit 1 when a check fails")
    th.add_argument("--out", required=True)
    th.set_defaults(
        func=_cmd_check_theory, steps=1, optimizer="adamw", lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0
    )

    fig = sub.add_parser("figure", help="Figure 3 (three panels) from run files")
    fig.add_argument("--runs", nargs="+", required=True)
    fig.add_argument("--png", required=True)
    fig.add_argument("--pdf", required=True)
    fig.set_defaults(func=_cmd_figure)

    cl = sub.add_parser("claims", help="claims table (and optimizer-sensitivity table) from run files")
    cl.add_argument("--runs", nargs="+", required=True)
    cl.add_argument("--sensitivity-runs", nargs="*", default=[])
    cl.add_argument("--near-zero-rel-tol", type=float, default=0.01)
    cl.add_argument("--full-improvement-pct", type=float, default=99.9)
    cl.add_argument("--out-md", required=True)
    cl.add_argument("--out-csv", required=True)
    cl.add_argument("--sensitivity-md")
    cl.add_argument("--sensitivity-csv")
    cl.set_defaults(func=_cmd_claims)

    grid = sub.add_parser("n-grid", help="gain over a fine N grid: monotonic and concave in N? (table + figure)")
    grid.add_argument("--runs", nargs="+", required=True)
    grid.add_argument("--mark", nargs="*", type=int, default=[], help="N values to mark (the training sweep)")
    grid.add_argument("--out-md", required=True)
    grid.add_argument("--out-csv", required=True)
    grid.add_argument("--png", required=True)
    grid.add_argument("--pdf", required=True)
    grid.set_defaults(func=_cmd_n_grid)

    return parser


def main(argv: list[str] | None = None) -> None:
    """Entry point; bad parameters end with one clear line and exit status 2."""
    args = build_parser().parse_args(argv)
    keep_freed_memory()
    run_command(args, (SimulationError,))
