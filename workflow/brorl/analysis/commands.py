"""The analysis commands that need more than a few lines (brorl.analysis.cli binds them), and what every command reads:
its --spec, the units, the training clocks.

``significance``: the paper's paired test at equal compute (twice), the learning effects, significance.json and its
table. ``figures``: Figures 1 and 4 (with Figure 4's per-task patterns and classes) and the N sweep.
``register-decision`` and ``decide``: the decision experiment's registration record (written once, before any F1 or
F3 job) and its verdicts (brorl.analysis.decision).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the commands import pandas when they run: --help stays quick
    import pandas as pd


def spec_of(a: argparse.Namespace) -> dict:
    spec = json.loads(a.spec)
    missing = [k for k in ("engine", "base_arm", "start_step", "arms", "analysis", "evaluation") if k not in spec]
    if missing:
        raise ValueError(f"--spec lacks key(s) {missing}")
    return spec


def read_units(path: Path):
    import pandas as pd

    return pd.read_parquet(path)


def clocks_of(a: argparse.Namespace) -> dict:
    """The training clocks of the --metrics files (brorl.analysis.load.load_clocks: hours, samples, startup)."""
    from .load import load_clocks

    return load_clocks(a.metrics or [])


def hours_of(a: argparse.Namespace, spec: dict, clocks: dict | None = None):
    """(arm -> {step: training hours}, the long table of them with the start at 0 h), from ``clocks`` when read."""
    from .load import hours_table

    hours = (clocks or clocks_of(a))["hours"]
    return hours, hours_table(hours, spec["base_arm"], spec["start_step"])


def evaluated_steps(units, arms) -> dict:
    """arm -> its evaluated steps (sorted), what brorl.analysis.checkpoints.select_checkpoints chooses from."""
    return {arm: sorted(set(units.loc[units["arm"] == arm, "step"])) for arm in arms}


def cmd_significance(a: argparse.Namespace) -> None:
    from ..reporting.provenance import provenance
    from ..reporting.tables import write_table
    from .paper import load_paper

    spec, paper = spec_of(a), load_paper()
    result = _significance(spec, paper, read_units(a.units), clocks_of(a))
    result["provenance"] = provenance()
    a.out_json.parent.mkdir(parents=True, exist_ok=True)
    a.out_json.write_text(json.dumps(result, indent=2) + "\n")
    write_table(
        _significance_table(result, paper),
        a.out_md,
        a.out_csv,
        a.out_tex,
        title="Paired one-tailed t-test, treatment vs control",
        printed_groups={
            "95% CI": ("ci_low", "ci_high"),
            "95% CI, tasks resampled": ("ci_low_tasks", "ci_high_tasks"),
            "p Holm / adjusted": ("p_holm", "p_adjusted"),
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


def _significance(spec: dict, paper: dict, units: pd.DataFrame, clocks: dict) -> dict:
    """significance.json but its provenance: the test at equal hours (status "not run" and the reason where no
    checkpoint can be chosen) and at equal samples, across runs, the lr-rule ablation, and the learning effects."""
    from .checkpoints import SelectionError, clock_statement
    from .extensions import across_runs
    from .significance import equal_hours, equal_samples, learning_effects, paper_comparison

    cfg = spec["analysis"]
    roles = cfg["comparison"]
    evaluated = evaluated_steps(units, roles.values())
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
        "clock": clock_statement(clocks["refill"]),  # which clock the hours are, and each arm's refill mode
    }
    try:
        result.update(equal_hours(units, roles, evaluated, clocks, cfg["equal_time_hours"], cfg["alternative"], test))
        result["versus_paper"] = paper_comparison(result["pooled"], paper["statistics"])
        result["equal_samples"] = equal_samples(units, roles, evaluated, clocks, cfg["alternative"], test)
    except SelectionError as err:
        result.update(status="not run", reason=str(err))
    result["across_runs"] = across_runs(units, spec, result, cfg["alpha"])  # seeds as an axis (arms' replicates)
    result["lr_ablation"] = lr_ablation(units, spec, clocks, test)
    # the learning effect is one-tailed always: the question is whether training improved the start model
    base = (spec["base_arm"], spec["start_step"])
    arms = [arm["name"] for arm in spec["arms"]]
    result["learning"] = learning_effects(units, base, arms, **test)
    result["models"] = learning_effects(units, base, [m["name"] for m in spec.get("models", [])], **test)
    return result


def _significance_table(result: dict, paper: dict) -> pd.DataFrame:
    """The significance table: the pooled, family and benchmark rows, the paper's, and the rows beside them
    (_equal_compute_rows); one row saying why where the test did not run."""
    import pandas as pd

    cols = [
        "level",
        "group",
        "n",
        "delta",
        "ci_low",
        "ci_high",
        "ci_low_tasks",
        "ci_high_tasks",
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
        recs += _equal_compute_rows(result)
        table = pd.DataFrame(recs).reindex(columns=cols)
    else:
        table = pd.DataFrame([{"level": "pooled", "group": f"not run: {result['reason']}"}]).reindex(columns=cols)
    return table


def lr_ablation(units, spec: dict, clocks: dict, test: dict) -> dict | None:
    """The control against the lr-rule ablation arm (analysis.lr_ablation) at equal compute, when that arm is
    enabled: status, the compared checkpoints and the pooled row; status "off" when the named arm is not enabled
    (None when unset)."""
    from .checkpoints import SelectionError
    from .significance import equal_hours

    cfg = spec["analysis"]
    arm = cfg.get("lr_ablation")
    if arm is None:
        return None
    if arm not in {a["name"] for a in spec["arms"]}:
        return {"status": "off", "arm": arm}
    roles = {"control": cfg["comparison"]["control"], "treatment": arm}
    evaluated = evaluated_steps(units, roles.values())
    try:
        rows = equal_hours(units, roles, evaluated, clocks, cfg["equal_time_hours"], cfg["alternative"], test)
    except (SelectionError, ValueError) as err:
        return {"status": "not run", "arm": arm, "reason": str(err)}
    return {"status": "ok", **{k: rows[k] for k in ("control", "treatment", "selection", "pooled")}}


def _equal_compute_rows(result: dict) -> list[dict]:
    """The significance table's rows beside the pooled test: the equal-samples comparison, and the unequal-compute
    flag where the chosen checkpoints' hours differ by more than 10%."""
    rows = []
    same = result.get("equal_samples") or {}
    if same.get("status") == "ok":
        rows.append(
            {
                "level": "equal samples",
                "group": f"pooled, {same['samples_k']:.4g}k generated samples",
                **{k: same["pooled"].get(k) for k in ("n", "delta", "ci_low", "ci_high", "t", "p", "reject")},
            }
        )
    ablation = result.get("lr_ablation") or {}
    if ablation.get("status") == "ok":
        rows.append(
            {
                "level": "lr ablation",
                "group": f"pooled, {ablation['treatment']['arm']} vs {ablation['control']['arm']}",
                **{k: ablation["pooled"].get(k) for k in ("n", "delta", "ci_low", "ci_high", "t", "p", "reject")},
            }
        )
    flag = result["selection"].get("flag")
    if flag:
        rows.append({"level": "flag", "group": flag})
    return rows


# what the figures draw beside the data: the arms (control, treatment), their labels, the start checkpoint, the
# subtitle and the equal-compute point
Shown = tuple[list[str], dict[str, str], tuple[str, int], str, float | None]


def cmd_figures(a: argparse.Namespace) -> None:
    from .checkpoints import family_pass1, task_pass1, with_hours
    from .figures import plot_n_sweep, scale_note
    from .paper import is_tiny_scale, load_paper

    spec, paper = spec_of(a), load_paper()
    cfg = spec["analysis"]
    units = read_units(a.units)
    by_step, hours = hours_of(a, spec)
    labels = {arm["name"]: arm.get("label") or arm["name"] for arm in spec["arms"]}
    arms = [cfg["comparison"]["control"], cfg["comparison"]["treatment"]]
    compared, equal_time = _compared(units, arms, by_step, cfg["equal_time_hours"])
    fam = with_hours(family_pass1(units), hours)  # pass@1 with its 95% interval: the bands
    note = scale_note(spec["engine"])
    start = (spec["base_arm"], spec["start_step"])
    tiny = is_tiny_scale(spec["engine"])
    published = None if tiny else paper["table1"]  # never beside a seconds-long tiny curve
    shown = (arms, labels, start, note, equal_time)
    points = _figure1(a, fam, shown, published)
    tasks = with_hours(task_pass1(units), hours)
    patterns = {int(k): v for k, v in paper["figure4_patterns"].items()}
    enabled = {arm["name"]: arm for arm in spec["arms"]}
    sweep, step = [enabled[n] for n in cfg["n_sweep"]["arms"] if n in enabled], cfg["n_sweep"]["step"]
    classified = _classified(a, units, tasks, spec, arms, patterns, compared, by_step, (sweep, step))
    a.patterns_csv.parent.mkdir(parents=True, exist_ok=True)
    classified.to_csv(a.patterns_csv, index=False)
    points["figure4"] = _figure4(a, tasks, classified, patterns, shown, None if tiny else paper)
    if a.sweep_png:
        points["n_sweep"] = plot_n_sweep(fam, sweep, step, a.sweep_png, a.sweep_pdf, note, published)
        print(f"N sweep over {[s['name'] for s in sweep]} at step {step}")
    for name in (n for n, count in points.items() if not count):
        print(f"warning: figure {name} has no data point (no evaluated checkpoint of its arms at its steps)")
    if a.points_json:  # what each figure drew, so an empty one is caught (tests) and seen (the report)
        a.points_json.parent.mkdir(parents=True, exist_ok=True)
        a.points_json.write_text(json.dumps({"scale": note, "points": points}, indent=2) + "\n")


def _compared(
    units: pd.DataFrame, arms: list[str], by_step: dict, equal_time: float | None
) -> tuple[dict[str, int] | None, float | None]:
    """(each arm's checkpoint Figure 4's patterns are decided at, the equal-compute point drawn): the significance
    test's, or (None, None) after a warning where none can be chosen (each arm's last checkpoint, no point)."""
    from .checkpoints import SelectionError, select_checkpoints

    evaluated = evaluated_steps(units, arms)
    try:  # Figure 4's patterns are decided where the significance test compares the arms
        compared = select_checkpoints(evaluated, by_step, equal_time)
    except SelectionError as err:
        print(f"warning: Figure 4's patterns compare each arm's last checkpoint: {err}")
        compared, equal_time = None, None
    return compared, equal_time


def _figure1(a: argparse.Namespace, fam: pd.DataFrame, shown: Shown, published: list | None) -> dict[str, int]:
    """The data points drawn by Figure 1 (Math) and by its every-family version."""
    from .figures import plot_figure1
    from .paper import FAMILIES

    arms, labels, start, note, equal_time = shown
    return {
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


def _classified(
    a: argparse.Namespace,
    units: pd.DataFrame,
    tasks: pd.DataFrame,
    spec: dict,
    arms: list[str],
    patterns: dict[int, list[str]],
    compared: dict[str, int] | None,
    by_step: dict,
    sweep: tuple[list[dict], int],
) -> pd.DataFrame:
    """task_patterns.csv: each task's pattern, by the paired tests per task where the compared checkpoints are
    known, and with the sweep figure its N sweep columns."""
    from .tasks import apply_tests, classify_tasks, task_tests

    cfg = spec["analysis"]
    classified = classify_tasks(tasks, *arms, spec["base_arm"], spec["start_step"], patterns, steps=compared)
    if compared is not None:  # the paired tests per task decide the patterns (the point rule stays as a column)
        tests = task_tests(units, *arms, spec["base_arm"], spec["start_step"], compared, by_step)
        classified = apply_tests(classified, tests, cfg["alpha"], cfg["practical_margin"])
    if a.sweep_png:  # with two or more sweep arms (the sweep figure's rule): task by task, beside Figure 4's tasks
        from .extensions import sweep_columns

        start = (spec["base_arm"], spec["start_step"])
        per_task = sweep_columns(units, *sweep, start, cfg["alpha"], cfg["practical_margin"])
        if len(per_task.columns) > 1:
            classified = classified.merge(per_task, on="task", how="left")
    return classified


def _figure4(
    a: argparse.Namespace,
    tasks: pd.DataFrame,
    classified: pd.DataFrame,
    patterns: dict[int, list[str]],
    shown: Shown,
    paper: dict | None,
) -> int:
    """The data points drawn by Figure 4, after the line saying how its tasks were classified."""
    from .figures import figure4_rows, plot_figure4
    from .tasks import pattern_shares

    arms, labels, start, note, equal_time = shown
    shares, rows = pattern_shares(classified), figure4_rows(classified, patterns)
    points = plot_figure4(
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
        paper,
        equal_time,
    )
    print(
        f"figure 1 (math) and all families; figure 4: {len(classified)} tasks classified, shares "
        + ", ".join(f"pattern {k} {100 * v:.0f}%" for k, v in shares.items())
        + f", shown {rows}"
    )
    return points


def cmd_register(a: argparse.Namespace) -> None:
    from ..training.run_folder import atomic_json
    from .decision import registration

    record = registration(json.loads(a.block), json.loads(a.planned_steps))
    atomic_json(a.out, record)
    print(f"decision thresholds registered ({record['sha256'][:12]}) -> {a.out}")


def cmd_decide(a: argparse.Namespace) -> None:
    import pandas as pd

    from ..reporting.tables import write_table
    from .decision import decide, decision_rows, read_metrics_files

    block = json.loads(a.block)
    record = json.loads(a.registration.read_text())
    units = pd.read_parquet(a.units)
    start = (a.start_arm, a.start_step)
    result = decide(units, read_metrics_files(a.metrics), block, record, start, a.gpus)
    rows = decision_rows(result, block)
    write_table(rows, a.out_md, a.out_csv, title="The decision experiment: F1 and F3 against registered thresholds")
    a.out_json.write_text(json.dumps(result, indent=2, default=str) + "\n")
    for row in rows.itertuples():
        print(f"{row.test}: {row.verdict}")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The two subcommands, bound with set_defaults(func=...) (the rerun derivation reads them)."""
    r = sub.add_parser("register-decision", help="freeze the decision block's thresholds before any result")
    r.add_argument("--block", required=True, help="the config's decision block (JSON)")
    r.add_argument("--planned-steps", required=True, help="JSON: F3 arm -> its planned continued steps")
    r.add_argument("--out", required=True, type=Path)
    r.set_defaults(func=cmd_register)
    d = sub.add_parser("decide", help="F1 and F3 against the registered thresholds -> table and JSON")
    d.add_argument("--block", required=True, help="the config's decision block now (JSON)")
    d.add_argument("--registration", required=True, type=Path)
    d.add_argument("--units", required=True, type=Path, help="results/stats/instance_scores.parquet")
    d.add_argument("--metrics", nargs="*", default=[], type=Path, help="the F3 arms' metrics.jsonl")
    d.add_argument("--start-arm", required=True)
    d.add_argument("--start-step", required=True, type=int)
    d.add_argument("--gpus", required=True, type=int, help="GPUs of a training job (rates per GPU-hour)")
    d.add_argument("--out-md", required=True, type=Path)
    d.add_argument("--out-csv", required=True, type=Path)
    d.add_argument("--out-json", required=True, type=Path)
    d.set_defaults(func=cmd_decide)
