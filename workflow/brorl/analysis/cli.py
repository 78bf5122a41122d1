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


def _spec(a: argparse.Namespace) -> dict:
    spec = json.loads(a.spec)
    missing = [k for k in ("engine", "base_arm", "start_step", "arms", "analysis", "evaluation") if k not in spec]
    if missing:
        raise ValueError(f"--spec lacks key(s) {missing}")
    return spec


def _read_units(path: Path):
    import pandas as pd

    return pd.read_parquet(path)


def _hours(a: argparse.Namespace, spec: dict):
    from .load import hours_table, load_hours

    hours = load_hours(a.metrics or [])
    return hours, hours_table(hours, spec["base_arm"], spec["start_step"])


def _evaluated_steps(units, arms) -> dict:
    """arm -> its evaluated steps (sorted), what brorl.analysis.checkpoints.select_checkpoints chooses from."""
    return {arm: sorted(set(units.loc[units["arm"] == arm, "step"])) for arm in arms}


def _cmd_units(a: argparse.Namespace) -> None:
    from .load import load_units

    units = load_units(a.scores, a.benchmarks, expected_samples=a.n)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    units.to_parquet(a.out, index=False)
    print(
        f"{len(a.scores)} scores files -> {len(units)} instance units "
        f"({units.groupby(['arm', 'step']).ngroups} checkpoints) -> {a.out}"
    )


def _cmd_significance(a: argparse.Namespace) -> None:
    from ..provenance import provenance
    from ..tables import write_table
    from .checkpoints import SelectionError, select_checkpoints
    from .paper import load_paper
    from .significance import compare_checkpoints, learning_effects, paper_comparison

    spec, paper = _spec(a), load_paper()
    cfg = spec["analysis"]
    units = _read_units(a.units)
    hours, _ = _hours(a, spec)
    roles = cfg["comparison"]
    evaluated = _evaluated_steps(units, roles.values())
    target = cfg["equal_time_hours"]
    test = {  # both comparisons' settings (the arms' also takes analysis.alternative)
        "alpha": cfg["alpha"],
        "correction": cfg["correction"],
        "resamples": cfg["bootstrap"]["resamples"],
        "seed": cfg["bootstrap"]["seed"],
    }
    result = {
        "status": "ok",
        "alpha": cfg["alpha"],
        "alternative": cfg["alternative"],
        "correction": cfg["correction"],
        "paper": paper["statistics"],
    }
    try:
        chosen = select_checkpoints(evaluated, hours, target)
    except SelectionError as err:
        result.update(status="not run", reason=str(err))
        chosen = None
    if chosen:
        for role, arm in roles.items():
            result[role] = {"arm": arm, "step": chosen[arm], "hours": hours.get(arm, {}).get(chosen[arm])}
        rule = "final checkpoints" if target is None else f"checkpoints nearest {target} training hours (wall_s)"
        result["selection"] = {"rule": rule, "equal_time_hours": target, "evaluated_steps": evaluated}
        rows = compare_checkpoints(
            units,
            (roles["control"], chosen[roles["control"]]),
            (roles["treatment"], chosen[roles["treatment"]]),
            alternative=cfg["alternative"],
            **test,
        )
        result.update(rows)
        result["versus_paper"] = paper_comparison(rows["pooled"], paper["statistics"])
    # the learning effect is one-tailed always: the question is whether training improved the start model
    base = (spec["base_arm"], spec["start_step"])
    arms = [arm["name"] for arm in spec["arms"]]
    result["learning"] = learning_effects(units, base, arms, **test)
    result["models"] = learning_effects(units, base, [m["name"] for m in spec.get("models", [])], **test)
    result["provenance"] = provenance()
    a.out_json.parent.mkdir(parents=True, exist_ok=True)
    a.out_json.write_text(json.dumps(result, indent=2) + "\n")

    import pandas as pd

    cols = [
        "level",
        "group",
        "n",
        "delta",
        "ci_low",
        "ci_high",
        "t",
        "p",
        "p_holm",
        "p_adjusted",
        "effect_size",
        "baseline_mean",
        "treatment_mean",
        "reject",
        "reject_holm",
    ]
    if result["status"] == "ok":
        recs = [{"level": "pooled", **result["pooled"]}]
        recs += [{"level": lvl, **r} for lvl in ("family", "benchmark") for r in result[lvl]]
        recs.append(
            {
                "level": "paper",
                "group": "all (paper)",
                "delta": paper["statistics"]["delta"],
                "t": paper["statistics"]["t"],
                "p": paper["statistics"]["p"],
            }
        )
        table = pd.DataFrame(recs).reindex(columns=cols)
    else:
        table = pd.DataFrame([{"level": "pooled", "group": f"not run: {result['reason']}"}]).reindex(columns=cols)
    write_table(
        table,
        a.out_md,
        a.out_csv,
        a.out_tex,
        title="Paired one-tailed t-test, treatment vs control",
        printed_groups={
            "95% CI": ("ci_low", "ci_high"),
            "mean control / treatment": ("baseline_mean", "treatment_mean"),
            "reject (raw / Holm)": ("reject", "reject_holm"),
        },
    )
    pooled = result.get("pooled")
    print(
        f"significance: {result['status']}"
        + (
            f", delta {pooled['delta']:.4g}, p {pooled['p']:.3g}, n {pooled['n']}"
            if pooled
            else f" ({result.get('reason')})"
        )
        + f" -> {a.out_json}"
    )


def _cmd_tables(a: argparse.Namespace) -> None:
    import pandas as pd

    from ..tables import write_table
    from .checkpoints import samples_by_step
    from .load import load_hours
    from .paper import FAMILIES, is_tiny_scale, load_paper
    from .paper_tables import benchmark_table, checkpoint_rows, display, table1, table1_long
    from .trajectories import benchmark_pass1, family_pass1, reasoning_gym_averages

    spec, paper = _spec(a), load_paper()
    tiny = is_tiny_scale(spec["engine"])
    units = _read_units(a.units)
    _, hours = _hours(a, spec)
    samples = pd.DataFrame(
        [(arm, step, k) for arm, by in load_hours(a.metrics or [], samples_by_step).items() for step, k in by.items()],
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


def _cmd_figures(a: argparse.Namespace) -> None:
    from .checkpoints import SelectionError, select_checkpoints
    from .figures import figure4_rows, plot_figure1, plot_figure4, plot_n_sweep, scale_note
    from .paper import FAMILIES, is_tiny_scale, load_paper
    from .patterns import apply_tests, classify_tasks, pattern_shares
    from .task_tests import task_tests
    from .trajectories import family_pass1, task_pass1, with_hours

    spec, paper = _spec(a), load_paper()
    cfg = spec["analysis"]
    units = _read_units(a.units)
    by_step, hours = _hours(a, spec)
    labels = {arm["name"]: arm.get("label") or arm["name"] for arm in spec["arms"]}
    arms = [cfg["comparison"]["control"], cfg["comparison"]["treatment"]]
    equal_time = cfg["equal_time_hours"]
    evaluated = _evaluated_steps(units, arms)
    try:  # Figure 4's patterns are decided where the significance test compares the arms
        compared = select_checkpoints(evaluated, by_step, equal_time)
    except SelectionError as err:
        print(f"warning: Figure 4's patterns compare each arm's last checkpoint: {err}")
        compared, equal_time = None, None
    fam = with_hours(family_pass1(units), hours)  # pass@1 with its 95% interval: the bands
    note = scale_note(spec["engine"])
    start = (spec["base_arm"], spec["start_step"])
    tiny = is_tiny_scale(spec["engine"])
    published = None if tiny else paper["table1"]  # never beside a seconds-long tiny curve
    points = {
        "figure1": plot_figure1(
            fam,
            arms,
            labels,
            *start,
            a.figure1_png,
            a.figure1_pdf,
            note=note,
            paper_table1=published,
            equal_time_hours=equal_time,
        ),
        "figure1_families": plot_figure1(
            fam, arms, labels, *start, a.families_png, a.families_pdf, FAMILIES, note, published, equal_time
        ),
    }
    tasks = with_hours(task_pass1(units), hours)
    patterns = {int(k): v for k, v in paper["figure4_patterns"].items()}
    classified = classify_tasks(tasks, *arms, spec["base_arm"], spec["start_step"], patterns, steps=compared)
    if compared is not None:  # the paired tests per task decide the patterns (the point rule stays as a column)
        tests = task_tests(units, *arms, spec["base_arm"], spec["start_step"], compared, by_step)
        classified = apply_tests(classified, tests, cfg["alpha"], cfg["practical_margin"])
    a.patterns_csv.parent.mkdir(parents=True, exist_ok=True)
    classified.to_csv(a.patterns_csv, index=False)
    shares, rows = pattern_shares(classified), figure4_rows(classified, patterns)
    points["figure4"] = plot_figure4(
        tasks,
        rows,
        shares,
        len(classified),
        arms,
        labels,
        *start,
        a.figure4_png,
        a.figure4_pdf,
        note,
        None if tiny else paper,
        equal_time,
    )
    print(
        f"figure 1 (math) and all families; figure 4: {len(classified)} tasks classified, shares "
        + ", ".join(f"pattern {k} {100 * v:.0f}%" for k, v in shares.items())
        + f", shown {rows}"
    )
    if a.sweep_png:
        enabled = {arm["name"]: arm for arm in spec["arms"]}
        sweep = [enabled[n] for n in cfg["n_sweep"]["arms"] if n in enabled]
        step = cfg["n_sweep"]["step"]
        points["n_sweep"] = plot_n_sweep(fam, sweep, step, a.sweep_png, a.sweep_pdf, note, published)
        print(f"N sweep over {[s['name'] for s in sweep]} at step {step}")
    for name in (n for n, count in points.items() if not count):
        print(f"warning: figure {name} has no data point (no evaluated checkpoint of its arms at its steps)")
    if a.points_json:  # what each figure drew, so an empty one is caught (tests) and seen (the report)
        a.points_json.parent.mkdir(parents=True, exist_ok=True)
        a.points_json.write_text(json.dumps({"scale": note, "points": points}, indent=2) + "\n")


def _cmd_algorithms(a: argparse.Namespace) -> None:
    from ..tables import write_table
    from .algorithms import algorithm_rows

    spec = _spec(a)
    cfg = spec["analysis"]
    hours, _ = _hours(a, spec)
    table = algorithm_rows(
        _read_units(a.units),
        hours,
        cfg["algorithms"]["pairs"],
        target_hours=cfg["equal_time_hours"],
        alpha=cfg["alpha"],
        alternative=cfg["alternative"],
        resamples=cfg["bootstrap"]["resamples"],
        seed=cfg["bootstrap"]["seed"],
    )
    title = "Does the N gain hold per advantage estimator? N=512 vs N=16, paired one-tailed test"
    groups = {
        "N=16 arm, step, hours": ("n16_arm", "n16_step", "n16_hours"),
        "N=512 arm, step, hours": ("n512_arm", "n512_step", "n512_hours"),
        "mean N=16 / N=512": ("n16_mean", "n512_mean"),
        "95% CI": ("ci_low", "ci_high"),
    }
    write_table(table, a.out_md, a.out_csv, None, title=title, printed_groups=groups)
    for row in table.itertuples():
        print(
            f"{row.estimator}: {row.verdict}" + (f" (delta {row.delta:.3g}, p {row.p:.3g})" if row.n == row.n else "")
        )


def _cmd_summary(a: argparse.Namespace) -> None:
    import pandas as pd

    from .paper import FAMILIES
    from .summary import render_summary

    spec = _spec(a)
    table1 = pd.read_csv(a.table1, keep_default_na=False)
    tables = {fam: pd.read_csv(p, keep_default_na=False) for fam, p in zip(FAMILIES, a.benchmark_tables)}
    sig = json.loads(a.significance.read_text())
    claims = pd.read_csv(a.claims, keep_default_na=False) if a.claims else None
    table2 = a.table2_md.read_text() if a.table2_md else None
    patterns = pd.read_csv(a.patterns) if a.patterns else None
    probe = pd.read_csv(a.probe) if a.probe else None
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(render_summary(spec, table1, tables, sig, claims, table2, patterns, probe))
    print(f"summary -> {a.out}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m brorl.analysis", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    u = sub.add_parser("units", help="scores parquets -> per-instance units (mean over samples)")
    u.add_argument("--scores", nargs="+", required=True, type=Path, help="<arm>/step<k>/<bench>.scores.parquet")
    u.add_argument("--benchmarks", nargs="+", required=True, type=Path, help="resources/benchmarks/<bench>.jsonl")
    u.add_argument("--n", type=int, default=None, help="samples every instance must have")
    u.add_argument("--out", required=True, type=Path)
    u.set_defaults(func=_cmd_units)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--units", required=True, type=Path, help="output of the units command")
        sp.add_argument("--metrics", nargs="*", default=[], type=Path, help="results/train/<arm>/metrics.jsonl")
        sp.add_argument("--spec", required=True, help="JSON: engine, base_arm, start_step, arms, analysis, evaluation")

    s = sub.add_parser("significance", help="paired one-tailed test at equal training time -> JSON + table")
    common(s)
    for name in ("json", "md", "csv", "tex"):
        s.add_argument(f"--out-{name}", required=True, type=Path)
    s.set_defaults(func=_cmd_significance)

    t = sub.add_parser("tables", help="Tables 1, 3, 4, 5 (md, tex, csv) beside the paper's values")
    common(t)
    t.add_argument("--out-dir", required=True, type=Path, help="writes table{1,3,4,5}.{md,tex,csv}")
    t.set_defaults(func=_cmd_tables)

    f = sub.add_parser("figures", help="Figures 1 and 4 (and the N sweep) as PNG and PDF")
    common(f)
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
    f.set_defaults(func=_cmd_figures)

    g = sub.add_parser("algorithms", help="the N gain per advantage estimator (analysis.algorithms) -> table")
    common(g)
    g.add_argument("--out-md", required=True, type=Path)
    g.add_argument("--out-csv", required=True, type=Path)
    g.set_defaults(func=_cmd_algorithms)

    m = sub.add_parser("summary", help="results/SUMMARY.md, claim by claim")
    m.add_argument("--spec", required=True)
    m.add_argument("--significance", required=True, type=Path)
    m.add_argument("--table1", required=True, type=Path, help="table1.csv")
    m.add_argument("--benchmark-tables", nargs=3, required=True, type=Path, help="table3/4/5.csv (math, code, RG)")
    m.add_argument("--claims", type=Path, default=None, help="simulation_claims.csv (absent: simulation disabled)")
    m.add_argument("--table2-md", type=Path, default=None, help="the throughput stage's Table 2 (when it exists)")
    m.add_argument("--probe", type=Path, default=None, help="the mass-balance probe's table (CSV; when it is on)")
    m.add_argument("--patterns", type=Path, default=None, help="task_patterns.csv of the figures command")
    m.add_argument("--out", required=True, type=Path)
    m.set_defaults(func=_cmd_summary)
    return p


def main(argv: list[str] | None = None) -> None:
    """Entry point; bad inputs end with one ``error: ...`` line and exit status 2."""
    from ..benchmarks.records import RecordError
    from .checkpoints import SelectionError
    from .load import AnalysisInputError
    from .paper import PaperDataError

    a = build_parser().parse_args(argv)
    run_command(a, (AnalysisInputError, SelectionError, PaperDataError, RecordError, ValueError), hard_exit=True)
    sys.stdout.flush()
