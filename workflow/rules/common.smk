# Path grammar helpers and input functions shared by the stage files. Logic lives in the brorl package.
import hashlib
import json
import re

from brorl.benchmarks.prepare import local_data_root
from brorl.benchmarks.registry import load_registry

SIM = config["simulation"]
SENSITIVITY = SIM["sensitivity"]
EVAL = config["evaluation"]
BENCHMARKS = load_registry()
PREPARED_BENCHMARKS = [n for n, b in BENCHMARKS.items() if b.family != "reasoning_gym"]
RG_CATEGORIES = [b.category for b in BENCHMARKS.values() if b.family == "reasoning_gym"]
BASE_ARM = "base"  # the start checkpoint, evaluated as arm `base` at step base_model.start_step
GPU_CONTAINER = config["containers"][
    "gpu"
]  # image of the GPU rules under --sdm apptainer (None: none)
# the GPU node preflight gates training and evaluation of a paper run on GPUs (never the embedded engine, never the
# CPU rehearsal, which trains with OpenRLHF on CPUs)
PREFLIGHT_REQUIRED = (
    config["engine"] == "cluster" and config["training"]["cluster"]["device"] == "gpu"
)
ARM_NAMES = [arm["name"] for arm in config["arms"]]


wildcard_constraints:
    n=r"\d+",
    seed=r"\d+",
    variant="|".join(re.escape(v["name"]) for v in SENSITIVITY["variants"]),
    bench="|".join(map(re.escape, PREPARED_BENCHMARKS)),
    category="|".join(map(re.escape, RG_CATEGORIES)),
    mix=re.escape(config["train_data"]["name"]),
    arm="|".join(map(re.escape, [BASE_ARM, *ARM_NAMES])),
    step=r"\d+",
    benchmark="|".join(map(re.escape, BENCHMARKS)),


# ----------------------------------------------------------------------------------------------------- targets
# Each stage file appends the function that lists its final outputs; `rule all` (Snakefile) asks them all.
STAGE_TARGETS = []  # appended below and by each stage file


def get_final_outputs():
    """Targets of the default target (all): the union of every stage's target function."""
    return [target for stage_targets in STAGE_TARGETS for target in stage_targets()]


def simulation_targets():
    """Figure 3, the claims tables and the theory checks (none when simulation.enabled is false)."""
    if not SIM["enabled"]:
        return []
    targets = [
        "results/simulation/theory_checks.json",
        "results/figures/figure3.png",
        "results/figures/figure3.pdf",
        "results/tables/simulation_claims.md",
        "results/tables/simulation_claims.csv",
    ]
    if SENSITIVITY["enabled"]:
        targets += [
            "results/tables/optimizer_sensitivity.md",
            "results/tables/optimizer_sensitivity.csv",
        ]
    if SIM["n_grid"]["enabled"]:
        targets += [
            "results/tables/simulation_n_grid.md",
            "results/figures/simulation_n_grid.png",
        ]
    return targets


STAGE_TARGETS.append(simulation_targets)


# -------------------------------------------------------------------------------------------------- simulation
def simulation_main_runs():
    """One parquet per (N, seed) of simulation.n_values x simulation.seeds."""
    return expand(
        "results/simulation/N{n}_seed{seed}.parquet",
        n=SIM["n_values"],
        seed=SIM["seeds"],
    )


def simulation_grid_runs():
    """One parquet per (N, seed) of simulation.n_grid (the main sweep's rule and files; shared N are one file)."""
    grid = SIM["n_grid"]
    return expand(
        "results/simulation/N{n}_seed{seed}.parquet",
        n=grid["n_values"],
        seed=grid["seeds"],
    )


def training_sweep_n():
    """N values of analysis.n_sweep's arms (marked in the simulation's N-grid figure)."""
    by_name = {arm["name"]: arm["n"] for arm in config["arms"]}
    return [by_name[a] for a in config["analysis"]["n_sweep"]["arms"] if a in by_name]


def simulation_sensitivity_runs():
    """One parquet per (variant, N, seed) of the sensitivity study; none when it is disabled."""
    if not SENSITIVITY["enabled"]:
        return []
    return expand(
        "results/simulation/sensitivity/{variant}/N{n}_seed{seed}.parquet",
        variant=[v["name"] for v in SENSITIVITY["variants"]],
        n=SENSITIVITY["n_values"],
        seed=SENSITIVITY["seeds"],
    )


def variant_optimizer(wildcards):
    """simulation.optimizer with the variant's non-null keys replacing it."""
    variant = next(v for v in SENSITIVITY["variants"] if v["name"] == wildcards.variant)
    overrides = {k: v for k, v in variant.get("optimizer", {}).items() if v is not None}
    return {**SIM["optimizer"], **overrides}


def anchor_flags(variant=None):
    """--anchor-class and --freeze-anchor of the main sweep, or of a sensitivity variant (its non-null keys win)."""
    own = {k: v for k, v in (variant or {}).items() if v is not None}
    anchor = own.get("anchor_class", SIM["anchor_class"])
    frozen = own.get("freeze_anchor", SIM["freeze_anchor"])
    return f"--anchor-class {anchor}" + (" --freeze-anchor" if frozen else "")


def variant_anchor_flags(wildcards):
    """anchor_flags of the sensitivity variant of ``wildcards`` (params of simulate_sensitivity)."""
    variant = next(v for v in SENSITIVITY["variants"] if v["name"] == wildcards.variant)
    return anchor_flags(variant)


def variant_optimizer_key(key):
    """Input function for one optimizer key of a sensitivity variant (params of simulate_sensitivity)."""

    def get(wildcards):
        return variant_optimizer(wildcards)[key]

    return get


def optimizer_sensitivity_tables():
    """Named outputs of tabulate_simulation for the sensitivity table; none when the study is disabled."""
    if not SENSITIVITY["enabled"]:
        return {}
    return {
        "sensitivity_md": report(
            "results/tables/optimizer_sensitivity.md",
            caption="../report/optimizer_sensitivity.rst",
            category="Simulation",
            labels={"table": "optimizer sensitivity", "format": "markdown"},
        ),
        "sensitivity_csv": report(
            "results/tables/optimizer_sensitivity.csv",
            caption="../report/optimizer_sensitivity.rst",
            category="Simulation",
            labels={"table": "optimizer sensitivity", "format": "csv"},
        ),
    }


def sensitivity_table_flags(wildcards, output):
    """The claims CLI's sensitivity-table flags, empty when the study is disabled."""
    if not SENSITIVITY["enabled"]:
        return []
    return [
        "--sensitivity-md",
        output.sensitivity_md,
        "--sensitivity-csv",
        output.sensitivity_csv,
    ]


# -------------------------------------------------------------------------------------------------------- data
def data_targets():
    """Every benchmark of evaluation.benchmarks (prepared or frozen) and the training mix (target prepare_data)."""
    return [f"resources/benchmarks/{name}.jsonl" for name in EVAL["benchmarks"]] + [
        f"resources/train/{config['train_data']['name']}.jsonl"
    ]


def benchmark_source(wildcards):
    """--source of prepare_benchmark: generated offline (synthetic), else the registry's local file when it exists
    here, else the hub (pinned)."""
    if BENCHMARKS[wildcards.bench].source("synthetic") is not None:
        return "synthetic"
    local = BENCHMARKS[wildcards.bench].source("local")
    if local is not None and (local_data_root() / local.path).is_file():
        return "local"
    return "hub"


def unpinned_flag():
    """--allow-unpinned for the download CLIs when config allow_unpinned is true (brorl.pins), else nothing."""
    return "--allow-unpinned" if config.get("allow_unpinned") else ""


def train_data_spec():
    """The train_data config section as JSON (the mix recipe; no secrets)."""
    return json.dumps(config["train_data"], sort_keys=True)


# ------------------------------------------------------------------------------------------------------- model
# The start checkpoint staged by download_base_model and derived by extend_context (workflow/rules/model.smk).
TINY_BUILD_DIR = "resources/build/tiny-qwen2"
TINY_WARM_DIR = "resources/build/tiny-qwen2-warm"  # after the supervised warm start (warm_start_tiny_model)
WARM_START = config["base_model"]["embedded_model"]["warm_start"]
CONTEXT = config["context"]
HUB_CACHE = "resources/models/.hub-cache"  # resumes an interrupted hub download


def context_length(response_budget):
    """Tokens a model must allow for a response budget: the longest prompt on top (context.prompt_max_len)."""
    return CONTEXT["prompt_max_len"] + response_budget


def extended_model_dir(length):
    """The start checkpoint derived for ``length`` tokens (rule extend_context)."""
    return f"{base_model_dir()}-ctx{length}"


def train_start_model():
    """The folder training starts from: the start checkpoint for prompt_max_len + train_max_len tokens."""
    return extended_model_dir(context_length(CONTEXT["train_max_len"]))


def eval_start_model():
    """The folder the start checkpoint is evaluated from: for prompt_max_len + eval_max_len tokens."""
    return extended_model_dir(context_length(CONTEXT["eval_max_len"]))


def model_targets():
    """Both derived folders of the start checkpoint (the same folder once when the two lengths agree)."""
    return sorted({train_start_model(), eval_start_model()})


STAGE_TARGETS.append(model_targets)


def base_model_source():
    """Input of download_base_model: the built tiny model after its warm start (engine embedded; the bare build when
    base_model.embedded_model.warm_start.steps is 0), base_model.local_path, or none (hub).
    """
    if config["engine"] == "embedded":
        return TINY_WARM_DIR if WARM_START["steps"] else TINY_BUILD_DIR
    return config["base_model"]["local_path"] or []


def base_model_source_flag():
    """--local of the download CLI when the source is a folder, else nothing (the hub)."""
    source = base_model_source()
    return ["--local", source] if source else []


def base_model_repo():
    """Repository recorded in the manifest: base_model.repo_id, or the built tiny model's name (not a hub repo)."""
    if config["engine"] == "embedded":
        return "brorl/tiny-qwen2"
    return config["base_model"]["repo_id"]


def base_model_revision():
    """Revision recorded (and downloaded): base_model.revision, or the tiny model's seed."""
    if config["engine"] == "embedded":
        return f"seed{TINY_MODEL['seed']}"
    return config["base_model"]["revision"]


def extend_context_resources(key):
    """threads/mem_mb/runtime of extend_context: the forward pass at L is seconds for the tiny model, minutes and
    ~15 GiB for the 1.5B model at 33K tokens on CPU (float32)."""
    embedded = config["engine"] == "embedded"
    return (
        {"threads": 1, "mem_mb": 4096, "runtime": 20}[key]
        if embedded
        else {"threads": 16, "mem_mb": 65536, "runtime": 180}[key]
    )


# -------------------------------------------------------------------------------------------------- evaluation
TINY_MODEL_DIR = "resources/models/tiny-qwen2"
TINY_MODEL = config["base_model"]["embedded_model"]


def base_model_dir():
    """The start checkpoint as download_base_model stages it, with its manifest, from every source (model.smk):
    resources/models/tiny-qwen2 (engine embedded: the built tiny model), else resources/models/<repo name>
    (from the hub, or copied from base_model.local_path). The context-extended folders derive from it.
    """
    if config["engine"] == "embedded":
        return TINY_MODEL_DIR
    return f"resources/models/{config['base_model']['repo_id'].split('/')[-1]}"


def model_dir(arm, step):
    """The model folder of (arm, step): the start checkpoint (arm `base` at base_model.start_step, extended to the
    evaluation length) or a trained arm's exported step results/train/<arm>/step<k>/."""
    if arm == BASE_ARM:
        if int(step) != config["base_model"]["start_step"]:
            raise ValueError(
                f"arm {BASE_ARM!r} is the start checkpoint: only step {config['base_model']['start_step']} exists"
            )
        return eval_start_model()
    return f"results/train/{arm}/step{step}"


def evaluation_model(wildcards):
    """Input function of generate_samples: the model folder of the {arm} and {step} wildcards."""
    return model_dir(wildcards.arm, wildcards.step)


def evaluation_points():
    """The evaluated (arm, step) checkpoints: the start checkpoint (evaluation.steps.include_start) and each enabled
    arm's steps of evaluation.steps (brorl.training.recipe.evaluation_steps)."""
    from brorl.training.recipe import enabled_arms, evaluation_steps

    points = []
    if EVAL["steps"].get("include_start", True):
        points.append((BASE_ARM, config["base_model"]["start_step"]))
    for arm in enabled_arms(config):
        points += [(arm, step) for step in evaluation_steps(config, arm)]
    return points


def evaluation_summaries():
    """One summary per evaluated checkpoint x evaluation.benchmarks."""
    return [
        f"results/eval/{arm}/step{step}/{bench}.summary.json"
        for arm, step in evaluation_points()
        for bench in EVAL["benchmarks"]
    ]


def evaluation_targets():
    """The evaluation table (markdown and CSV), which needs every summary."""
    return ["results/tables/eval_summary.md", "results/tables/eval_summary.csv"]


STAGE_TARGETS.append(evaluation_targets)


def max_items_flag():
    """--max-items of generation, scoring and summaries (the first K problems), empty when evaluation.max_items is null."""
    return [] if EVAL["max_items"] is None else ["--max-items", str(EVAL["max_items"])]


def data_parallel_size(wildcards, resources):
    """vLLM engines of one generation job: one per GPU the profile gives it (resource `gpu`), else 1 (CPU)."""
    return max(1, int(resources.get("gpu", 0) or 0))


def max_model_len():
    """Longest prompt + response at evaluation (tokens): context.prompt_max_len + evaluation.max_tokens."""
    return config["context"]["prompt_max_len"] + EVAL["max_tokens"]


def tiny_model_tie_flag():
    """--tie of build-tiny when base_model.embedded_model.tie_word_embeddings is set, else nothing."""
    return ["--tie"] if TINY_MODEL["tie_word_embeddings"] else []


def code_sha256(*parts):
    """SHA-256 over the source of brorl/<part> (a .py file or a package folder) for each part: a params value of
    the rules that run that code and nothing heavier (verifiers -> scoring, plotting -> figures), so that editing
    it reruns exactly those rules (Snakemake's own code trigger sees only a rule's shell text).
    """
    digest = hashlib.sha256()
    root = Path(PACKAGE_DIR) / "brorl"
    for part in parts:
        target = root / part
        for path in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# -------------------------------------------------------------------------------------------------- throughput
THROUGHPUT = config["throughput"]

# Integrator switches: flip each when the rules that produce its inputs exist.
# True once train_ppo writes results/train/{arm}/metrics.jsonl: Table 2 then needs both compared arms' metrics.
THROUGHPUT_USES_TRAINING_METRICS = True
# True once download_base_model stages base_model_dir() for engine cluster (paper scale); the tiny preset
# (engine embedded) builds its model with build_tiny_model and is always on.
THROUGHPUT_AT_PAPER_SCALE = True

TABLE2_FILES = {ext: f"results/tables/table2.{ext}" for ext in ("md", "tex", "csv")}
THROUGHPUT_FIGURE = {
    ext: f"results/figures/throughput_vs_n.{ext}" for ext in ("png", "pdf")
}


def throughput_results():
    """One JSON per throughput.layouts x throughput.prefix_caching configuration."""
    return [
        f"results/throughput/p{layout['prompts']}_n{layout['n']}_pc{'on' if pc else 'off'}.json"
        for layout in THROUGHPUT["layouts"]
        for pc in THROUGHPUT["prefix_caching"]
    ]


def throughput_targets():
    """Table 2, the figure and machine.json; none when throughput is disabled or its model has no producing rule
    yet (paper scale: see THROUGHPUT_AT_PAPER_SCALE)."""
    if not THROUGHPUT["enabled"]:
        return []
    if config["engine"] != "embedded" and not THROUGHPUT_AT_PAPER_SCALE:
        return []
    return [
        *TABLE2_FILES.values(),
        *THROUGHPUT_FIGURE.values(),
        "results/throughput/machine.json",
        "results/throughput/pass_rate_by_step.csv",
    ]


STAGE_TARGETS.append(throughput_targets)


def throughput_compared_arms():
    """analysis.comparison's control and treatment as the table's arm records (name, label, n, prompts/step)."""
    arms = {arm["name"]: arm for arm in config["arms"]}
    return {
        role: {
            "name": arms[name]["name"],
            "label": arms[name]["label"],
            "n": arms[name]["n"],
            "prompts": arms[name]["prompts_per_step"],
            "enabled": arms[name]["enabled"],
        }
        for role, name in config["analysis"]["comparison"].items()
        if role in ("control", "treatment")
    }


def training_setup_text():
    """The hardware the training runs use, in words (Table 2's rows measured in training)."""
    if config["training"].get("engine") or config["engine"] == "embedded":
        engine = config["training"].get("engine") or config["engine"]
        if engine == "embedded":
            return "embedded engine, one CPU machine"
    cluster = config["training"]["cluster"]
    return f"{cluster['nodes']} nodes x {cluster['gpus_per_node']} {cluster['device'].upper()}s"


def throughput_metric_arms():
    """Compared arms whose training metrics Table 2 reads: enabled ones, once training exists."""
    if not THROUGHPUT_USES_TRAINING_METRICS:
        return []
    return [a["name"] for a in throughput_compared_arms().values() if a["enabled"]]


def throughput_training_metrics(wildcards):
    """Input function of tabulate_throughput: results/train/{arm}/metrics.jsonl of throughput_metric_arms()."""
    return [f"results/train/{arm}/metrics.jsonl" for arm in throughput_metric_arms()]


def throughput_metrics_flags(wildcards, input):
    """--metrics ARM=PATH for each compared arm with metrics (nothing before training exists)."""
    pairs = [
        f"{arm}={path}" for arm, path in zip(throughput_metric_arms(), input.metrics)
    ]
    return ["--metrics", *pairs] if pairs else []


def throughput_temperature():
    """throughput.temperature, or training.rollout_temperature when it is null (the rollouts being timed)."""
    if THROUGHPUT["temperature"] is None:
        return config["training"]["rollout_temperature"]
    return THROUGHPUT["temperature"]


def throughput_max_num_seqs_flag():
    """--max-num-seqs when throughput.max_num_seqs is set, else nothing (vLLM's default)."""
    if THROUGHPUT["max_num_seqs"] is None:
        return []
    return ["--max-num-seqs", str(THROUGHPUT["max_num_seqs"])]


# ---------------------------------------------------------------------------------------------------- analysis
ANALYSIS = config["analysis"]
ANALYSIS_TABLES = [f"table{i}" for i in (1, 3, 4, 5)]
TABLE2_MD = "results/tables/table2.md"  # the throughput stage's Table 2 (rule tabulate_throughput)


def analysis_enabled():
    """Whether `all` builds the analysis stage: yes (training writes results/train/{arm}/metrics.jsonl through
    finish_training and evaluation_points() lists the trained checkpoints)."""
    return True


def analysis_targets():
    """Statistics, Tables 1 and 3-5, Figures 1 and 4 (+ N sweep) and SUMMARY.md; none while analysis_enabled() is
    off or the evaluation is not in `all` (at paper scale until download_base_model exists).
    """
    if not analysis_enabled() or not evaluation_targets():
        return []
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
        + ["results/tables/task_patterns.csv"]
    )


STAGE_TARGETS.append(analysis_targets)  # after evaluation_targets: uses it


def analysis_scores():
    """Every evaluated checkpoint's scores: evaluation_points() x evaluation.benchmarks."""
    return [
        f"results/eval/{arm}/step{step}/{bench}.scores.parquet"
        for arm, step in evaluation_points()
        for bench in EVAL["benchmarks"]
    ]


def analysis_benchmark_files():
    """The records of evaluation.benchmarks (family and Reasoning Gym task of each problem)."""
    return [f"resources/benchmarks/{bench}.jsonl" for bench in EVAL["benchmarks"]]


def analysis_metrics():
    """Training metrics of every trained arm that has an evaluated checkpoint (hours per step)."""
    arms = sorted({arm for arm, _ in evaluation_points() if arm != BASE_ARM})
    return [f"results/train/{arm}/metrics.jsonl" for arm in arms]


def n_sweep_arms():
    """The enabled arms of analysis.n_sweep.arms, in its order."""
    enabled = {arm["name"] for arm in config["arms"] if arm["enabled"]}
    return [name for name in ANALYSIS["n_sweep"]["arms"] if name in enabled]


def analysis_spec():
    """--spec of the analysis CLI (JSON): engine, start checkpoint, enabled arms, analysis and evaluation sections."""
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
            "evaluation": {
                k: EVAL[k] for k in ("benchmarks", "n_samples", "max_items")
            },
            "benchmark_families": {n: b.family for n, b in BENCHMARKS.items()},
        },
        sort_keys=True,
    )


def n_sweep_figures():
    """Named outputs of plot_figures for the N-sweep figure: only with >= 2 enabled sweep arms."""
    if len(n_sweep_arms()) < 2:
        return {}
    return {
        f"sweep_{ext}": report(
            f"results/figures/n_sweep.{ext}",
            caption="../report/n_sweep.rst",
            category="Analysis",
            subcategory="Figures",
            labels={"figure": "N sweep", "format": ext.upper()},
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
    """The throughput stage's Table 2 for SUMMARY.md, when a rule of this workflow produces it."""
    made = any(TABLE2_MD in map(str, r.output) for r in workflow.rules)
    return [TABLE2_MD] if made and config["throughput"]["enabled"] else []


def optional_flag(flag, paths):
    """[flag, path] for an optional single input, else nothing."""
    return [flag, *paths] if paths else []


def analysis_table(name, caption, title):
    """report() of one analysis table file; the caption file is workflow/report/<caption>.rst."""
    return lambda ext: report(
        f"results/tables/{name}.{ext}",
        caption=f"../report/{caption}.rst",
        category="Analysis",
        subcategory="Tables",
        labels={"table": title, "format": ext},
    )


# ------------------------------------------------------------------------------------------------------- train
from brorl.training.recipe import arm_plan, enabled_arms

TRAIN = config["training"]
TRAIN_ENGINE = (
    TRAIN["engine"] or config["engine"]
)  # the CPU rehearsal trains with cluster, the rest embedded
TRAINED_ARMS = enabled_arms(config)
PRESENTATION_KEYS = ("label", "description", "enabled")


def train_recipe(wildcards):
    """The config the training CLI needs for one arm, as JSON (params: a change here reruns the arm)."""
    arm = next(a for a in config["arms"] if a["name"] == wildcards.arm)
    other_engine = "cluster" if TRAIN_ENGINE == "embedded" else "embedded"
    recipe = {
        "arms": [{k: v for k, v in arm.items() if k not in PRESENTATION_KEYS}],
        # the other engine's settings cannot change these weights: leaving them out keeps them from rerunning
        "training": {k: v for k, v in TRAIN.items() if k != other_engine},
        "context": config["context"],
        "train_data": {"name": config["train_data"]["name"]},
    }
    return json.dumps(recipe, sort_keys=True)


def previous_segment(wildcards):
    """Segment s needs segment s-1's manifest (its state is where s resumes)."""
    index = int(wildcards.segment)
    return (
        [] if index == 0 else f"results/train/{wildcards.arm}/segment{index - 1}.json"
    )


def segment_of_step(wildcards):
    """The manifest of the segment that ran (and exported) {step} of {arm}."""
    segment = arm_plan(config, wildcards.arm).segment_of(int(wildcards.step))
    return f"results/train/{wildcards.arm}/segment{segment.index}.json"


def arm_segment_manifests(wildcards):
    return [
        f"results/train/{wildcards.arm}/segment{s.index}.json"
        for s in arm_plan(config, wildcards.arm).segments
    ]


def arm_checkpoints(wildcards):
    return [
        f"results/train/{wildcards.arm}/step{k}"
        for k in arm_plan(config, wildcards.arm).saved_steps
    ]


def training_targets():
    """Every enabled arm's train.json and metrics.jsonl (which need all its segments and saved checkpoints)."""
    return [
        f"results/train/{arm}/{name}"
        for arm in TRAINED_ARMS
        for name in ("train.json", "metrics.jsonl")
    ]


STAGE_TARGETS.append(training_targets)


# ---------------------------------------------------------------------------------------------------- preflight
def preflight_input():
    """The GPU node preflight's result for training and generation jobs of a paper run on GPUs, else nothing."""
    return ["results/preflight/gpu_node.json"] if PREFLIGHT_REQUIRED else []


def preflight_need_gb():
    """Disk the run's training checkpoints need (brorl.plan's estimate), for the preflight's disk check."""
    from brorl.preflight.__main__ import config_needs

    return round(config_needs(config)[0], 1)


PREFLIGHT_NEED_GB = preflight_need_gb()
