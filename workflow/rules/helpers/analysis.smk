# Input functions of the analysis stage (workflow/rules/analysis.smk).
import json

from brorl.hub.checkpoint_identity import steps_note

ANALYSIS = config["analysis"]
ANALYSIS_TABLES = [f"table{i}" for i in (1, 3, 4, 5)]


def analysis_targets():
    """Statistics, Tables 1 and 3-5, Figures 1 and 4 (+ N sweep) and SUMMARY.md."""
    figures = ["figure1", "figure1_families", "figure4"]
    figures += ["n_sweep"] if len(n_sweep_arms()) >= 2 else []
    return (
        ["results/stats/significance.json", "results/SUMMARY.md"]
        + [
            f"results/tables/{t}.{ext}"
            for t in ANALYSIS_TABLES
            for ext in ("md", "tex", "csv")
        ]
        + [f"results/figures/{f}.{ext}" for f in figures for ext in ("png", "pdf")]
        + ["results/tables/task_patterns.csv", "results/stats/instance_scores.parquet"]
        + [f"results/tables/significance.{ext}" for ext in ("md", "csv")]
        + ["results/figures/figures.json"]
        + (
            [f"results/tables/algorithms.{ext}" for ext in ("md", "csv")]
            if ANALYSIS["algorithms"]["enabled"]
            else []
        )
    )


STAGE_TARGETS.append(analysis_targets)


def analysis_metrics():
    """Training metrics of every trained arm that has an evaluated checkpoint (hours per step)."""
    arms = sorted({arm for arm, _ in evaluation_points() if arm in ARM_NAMES})
    return [f"results/train/{arm}/metrics.jsonl" for arm in arms]


def n_sweep_arms():
    """The enabled arms of analysis.n_sweep.arms, in its order."""
    enabled = {arm["name"] for arm in config["arms"] if arm["enabled"]}
    return [name for name in ANALYSIS["n_sweep"]["arms"] if name in enabled]


# what `make pin` recorded of each hub model commit (brorl.hub.checkpoint_identity): the card's training-step sentence
MODEL_IDENTITY = PIN_LOCK.get("identity") or {}  # read by helpers/data.smk


def analysis_spec():
    """--spec of the analysis CLI (JSON): engine, start checkpoint, enabled arms, evaluation.models, analysis and
    evaluation sections."""
    keys = ("name", "label", "n", "prompts_per_step", "continued_steps", "report_steps")
    return json.dumps(
        {
            "engine": config["engine"],
            "base_arm": BASE_ARM,
            "start_step": config["base_model"]["start_step"],
            "arms": [
                {k: arm.get(k) for k in keys}
                for arm in config["arms"]
                if arm["enabled"]
            ],
            "analysis": ANALYSIS,
            "models": [
                {
                    **{
                        k: model[k]
                        for k in (
                            "name",
                            "label",
                            "step",
                            "continued_steps",
                            "paper_row",
                        )
                    },
                    "steps_note": steps_note(model, MODEL_IDENTITY),
                }
                for model in EVAL["models"]
            ],
            "evaluation": {
                **{k: EVAL[k] for k in ("benchmarks", "n_samples", "max_items")},
                "include_start": EVAL["steps"].get("include_start", True),
            },
            # the evaluated benchmarks' only: a registry entry no config uses reruns nothing
            "benchmark_families": {n: BENCHMARKS[n].family for n in EVAL["benchmarks"]},
        },
        sort_keys=True,
    )


def analysis_table(name, title, ext):
    """results/tables/<name>.<ext> in the report's Analysis > Tables, captioned by workflow/report/<name>.rst."""
    return report_file(
        f"results/tables/{name}.{ext}",
        name,
        "Analysis",
        "Tables",
        table=title,
        format=ext,
    )


def analysis_figure(name, title):
    """results/figures/<name>.png in the report's Analysis > Figures, captioned by workflow/report/<name>.rst."""
    return report_file(
        f"results/figures/{name}.png",
        name,
        "Analysis",
        "Figures",
        figure=title,
        format="PNG",
    )


def n_sweep_figures():
    """Named outputs of plot_figures for the N-sweep figure: only with >= 2 enabled sweep arms."""
    if len(n_sweep_arms()) < 2:
        return {}
    return {
        f"sweep_{ext}": report_file(
            f"results/figures/n_sweep.{ext}",
            "n_sweep",
            "Analysis",
            "Figures",
            figure="N sweep",
            format=ext.upper(),
        )
        for ext in ("png", "pdf")
    }


def n_sweep_flags(wildcards, output):
    """--sweep-png/--sweep-pdf of the figures command, empty without the sweep figure."""
    if len(n_sweep_arms()) < 2:
        return []
    return ["--sweep-png", output.sweep_png, "--sweep-pdf", output.sweep_pdf]


def simulation_claims_input():
    """The simulation claims table for SUMMARY.md (none when the simulation is disabled)."""
    return ["results/tables/simulation_claims.csv"] if SIM["enabled"] else []


def table2_input():
    """The throughput stage's Table 2 for SUMMARY.md (none when throughput is disabled)."""
    return [TABLE2_FILES["md"]] if THROUGHPUT["enabled"] else []


def optional_flag(flag, paths):
    """[flag, path] for an optional single input, else nothing."""
    return [flag, *paths] if paths else []
