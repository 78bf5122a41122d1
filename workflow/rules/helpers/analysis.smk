# Input functions of the analysis stage (workflow/rules/analysis.smk).
import json

from brorl.analysis.config_checks import decision_active, decision_missing
from brorl.hub.checkpoint_identity import steps_note
from brorl.ops.plan.power import design_record, power_verdict
from brorl.benchmarks.problems import ProblemCountError, benchmark_problems
from brorl.training.recipe import enabled_arms

ANALYSIS = config["analysis"]
ANALYSIS_TABLES = [f"table{i}" for i in (1, 3, 4, 5)]
# What this run can establish, before anyone pays (brorl.ops.plan.power; `make plan` prints every pair's numbers): the
# main comparison's minimum detectable effect, and its power against the paper's predicted gap where it has one.
# Computed once per parse: the analysis spec (every analysis rule's params) carries the design record.
try:
    _PROBLEMS = benchmark_problems(config, BENCHMARKS)
except ProblemCountError as err:  # a benchmark of unknown size: the plan says so too
    _PROBLEMS, _PROBLEMS_UNKNOWN = None, str(err)
ANALYSIS_DESIGN = design_record(config, _PROBLEMS) if _PROBLEMS is not None else None
if workflow.is_main_process and enabled_arms(config):
    print(
        (
            f"note: {power_verdict(config, _PROBLEMS)}"
            if _PROBLEMS is not None
            else f"note: what this run can establish is not known: {_PROBLEMS_UNKNOWN}"
        ),
        file=sys.stderr,
    )


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
        + (list(DECISION_TABLES.values()) if DECISION_ON else [])
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
    keys = (
        "name",
        "label",
        "n",
        "prompts_per_step",
        "continued_steps",
        "report_steps",
        "replicate_of",
    )
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
            # what the main comparison could detect, from the plan's inputs (brorl.ops.plan.power): SUMMARY.md says so
            "design": ANALYSIS_DESIGN,
            "decision": DECISION if DECISION_ON else None,
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


# The decision experiment (config `decision`, workflow/presets/decision.yaml): its thresholds are registered once
# (rule register_decision) before any of its jobs; its block reaches that rule in the environment, never as a param,
# so that editing the block can never rewrite the registration: rule decide compares the two and withholds verdicts.
DECISION = config["decision"]
DECISION_ON = decision_active(config)
if (
    DECISION["enabled"] and not DECISION_ON and workflow.is_main_process
):  # a pipeline check whose arms a run left out
    print(
        f"note: the decision experiment's pipeline check is off: {', '.join(decision_missing(config))} not in this run",
        file=sys.stderr,
    )
DECISION_FILE = "results/decision/registration.json"
DECISION_TABLES = {
    ext: f"results/tables/decision.{ext}" for ext in ("md", "csv", "json")
}


def decision_input(wildcards=None):
    """The registration record for a job of the decision experiment (F1: the start's and the compared checkpoint's
    generation; F3: the two arms' training), else nothing."""
    if (
        not DECISION_ON or DECISION["mode"] == "pipeline_check"
    ):  # a pipeline check registers, its jobs need not wait
        return []
    arm = getattr(wildcards, "arm", None)
    f1 = {BASE_ARM, DECISION["f1"]["checkpoint"]}
    f3 = {DECISION["f3"]["treatment"], DECISION["f3"]["control"]}
    return [DECISION_FILE] if arm is None or arm in f1 | f3 else []


def decision_planned_steps():
    """The F3 arms' planned continued steps (the pre-registered extension counts from them)."""
    by_name = {arm["name"]: arm for arm in config["arms"]}
    arms = (DECISION["f3"]["treatment"], DECISION["f3"]["control"])
    return json.dumps({a: by_name[a]["continued_steps"] for a in arms if a in by_name})


if DECISION_ON:
    operational_env("BRORL_DECISION_BLOCK", json.dumps(DECISION, sort_keys=True))
    operational_env("BRORL_DECISION_PLANNED", decision_planned_steps())


def decision_gpus():
    """GPUs of one training job: kept samples per GPU-hour are per this many GPUs."""
    if TRAIN_ENGINE == "embedded":
        return 1
    cluster = config["training"]["cluster"]
    return cluster["nodes"] * cluster["gpus_per_node"]


def decision_summary_input():
    """The decision experiment's JSON for SUMMARY.md (none when it is off)."""
    return [DECISION_TABLES["json"]] if DECISION_ON else []


def table2_input():
    """The throughput stage's Table 2 for SUMMARY.md (none when throughput is disabled)."""
    return [TABLE2_FILES["md"]] if THROUGHPUT["enabled"] else []


def optional_flag(flag, paths):
    """[flag, path] for an optional single input, else nothing."""
    return [flag, *paths] if paths else []
