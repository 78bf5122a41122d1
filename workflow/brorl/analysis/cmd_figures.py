"""``python -m brorl.analysis figures``: Figures 1 and 4 (with Figure 4's per-task patterns and classes) and the N
sweep."""

from __future__ import annotations

import argparse
import json

from .cli_inputs import evaluated_steps, hours_of, read_units, spec_of


def cmd_figures(a: argparse.Namespace) -> None:
    from .checkpoints import SelectionError, select_checkpoints
    from .figures import figure4_rows, plot_figure1, plot_figure4, plot_n_sweep, scale_note
    from .paper import FAMILIES, is_tiny_scale, load_paper
    from .patterns import apply_tests, classify_tasks, pattern_shares
    from .task_tests import task_tests
    from .trajectories import family_pass1, task_pass1, with_hours

    spec, paper = spec_of(a), load_paper()
    cfg = spec["analysis"]
    units = read_units(a.units)
    by_step, hours = hours_of(a, spec)
    labels = {arm["name"]: arm.get("label") or arm["name"] for arm in spec["arms"]}
    arms = [cfg["comparison"]["control"], cfg["comparison"]["treatment"]]
    equal_time = cfg["equal_time_hours"]
    evaluated = evaluated_steps(units, arms)
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
    enabled = {arm["name"]: arm for arm in spec["arms"]}
    sweep, step = [enabled[n] for n in cfg["n_sweep"]["arms"] if n in enabled], cfg["n_sweep"]["step"]
    if a.sweep_png:  # with two or more sweep arms (the sweep figure's rule): task by task, beside Figure 4's tasks
        from .sweep_tasks import sweep_columns

        per_task = sweep_columns(units, sweep, step, start, cfg["alpha"], cfg["practical_margin"])
        if len(per_task.columns) > 1:
            classified = classified.merge(per_task, on="task", how="left")
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
        points["n_sweep"] = plot_n_sweep(fam, sweep, step, a.sweep_png, a.sweep_pdf, note, published)
        print(f"N sweep over {[s['name'] for s in sweep]} at step {step}")
    for name in (n for n, count in points.items() if not count):
        print(f"warning: figure {name} has no data point (no evaluated checkpoint of its arms at its steps)")
    if a.points_json:  # what each figure drew, so an empty one is caught (tests) and seen (the report)
        a.points_json.parent.mkdir(parents=True, exist_ok=True)
        a.points_json.write_text(json.dumps({"scale": note, "points": points}, indent=2) + "\n")
