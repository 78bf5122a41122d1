# What several stages share: wildcard constraints, the stage targets of `rule all`, source hashes, report entries and
# the model folders. Each stage's own input functions live in workflow/rules/helpers/<stage>.smk; logic lives in the
# brorl package.
import re

from brorl.benchmarks.registry import load_registry
from brorl.models.folders import staged_base_model
from brorl.ops.run.submission import GROUPS as SUBMISSION_GROUPS, driver_rules
from brorl.ops.run.driver import warn as driver_warning
from brorl.generation.vllm_scheduler import ENV as SCHEDULER_ENV, scheduler_json

SIM = config["simulation"]
SENSITIVITY = SIM["sensitivity"]
EVAL = config["evaluation"]
CONTEXT = config["context"]
BENCHMARKS = load_registry()
RG_CATEGORIES = [b.category for b in BENCHMARKS.values() if b.family == "reasoning_gym"]
BASE_ARM = "base"  # the start checkpoint, evaluated as arm `base` at step base_model.start_step
GPU_CONTAINER = config["containers"][
    "gpu"
]  # image of the GPU rules under --sdm apptainer (None: none)


def gpu_rule_env(env_file):
    """A GPU rule's conda environment, or none where the config names a GPU image: a rule with both would have
    Snakemake build the conda environment inside the image under `--sdm conda apptainer`, which has no conda
    (docs/gpu-software.md#two-ways-to-get-it)."""
    return None if GPU_CONTAINER else env_file


# the GPU node preflights gate training and evaluation of a paper run on GPUs (never the embedded engine, never the
# CPU rehearsal, which trains with OpenRLHF on CPUs)
PREFLIGHT_REQUIRED = (
    config["engine"] == "cluster" and config["training"]["cluster"]["device"] == "gpu"
)
ARM_NAMES = [arm["name"] for arm in config["arms"]]
# checkpoints evaluated beside the arms (evaluation.models): filed like arms, results/eval/<name>/step<step>/
EVAL_MODELS = {model["name"]: model for model in EVAL["models"]}
TRAIN_MIX = f"resources/train/{config['train_data']['name']}.jsonl"  # the RL prompts (rule prepare_train_data)


def operational_env(name, value):
    """Pass a setting that changes how jobs run, never what they compute, in the jobs' environment (declared to
    Snakemake, so executors that do not inherit the environment pass it on) instead of params: changing it reruns
    nothing (docs/cluster.md#rerun-policy). The one channel for such settings: vLLM's scheduler limits, experiment
    tracking (config `logging`) and the training engines' operational keys (helpers/train.smk).
    """
    os.environ[name] = value
    workflow.register_envvars(name)


# vLLM's scheduler limits of every GPU engine (brorl.generation.vllm_scheduler): generation, training and the Table 2
# benchmark read them from the environment; the benchmark also takes them as a param (its number depends on them)
operational_env(SCHEDULER_ENV, scheduler_json(config))


wildcard_constraints:
    n=r"\d+",
    seed=r"\d+",
    variant="|".join(re.escape(v["name"]) for v in SENSITIVITY["variants"]),
    category="|".join(map(re.escape, RG_CATEGORIES)),
    mix=re.escape(config["train_data"]["name"]),
    arm="|".join(map(re.escape, [BASE_ARM, *ARM_NAMES, *EVAL_MODELS])),
    step=r"\d+",
    benchmark="|".join(map(re.escape, BENCHMARKS)),


# ----------------------------------------------------------------------------------------------------- targets
# Each stage's helpers append the function that lists its final outputs; `rule all` (Snakefile) asks them all.
STAGE_TARGETS = []


def get_final_outputs():
    """Targets of the default target (all): the union of every stage's target function."""
    return [target for stage_targets in STAGE_TARGETS for target in stage_targets()]


# ------------------------------------------------------------------------------------------- rule parameters
def report_file(path, caption, category, subcategory=None, **labels):
    """``path`` as an entry of the HTML report (`snakemake --report`): captioned by workflow/report/<caption>.rst,
    filed under category (and subcategory), described by labels (e.g. table="Table 1", format="csv").
    """
    return report(
        path,
        caption=f"../report/{caption}.rst",
        category=category,
        subcategory=subcategory,
        labels=labels,
    )


def unpinned_flag():
    """--allow-unpinned for the download CLIs when config allow_unpinned is true (brorl.hub.pins), else nothing."""
    return "--allow-unpinned" if config.get("allow_unpinned") else ""


FIRST_ARM = config["training"]["cluster"]["first_arm"]


def first_arm_input(arm=None):
    """The first arm's finished training (training.cluster.first_arm) for every other GPU job, else nothing."""
    if FIRST_ARM is None or arm == FIRST_ARM:
        return []
    return [f"results/train/{FIRST_ARM}/train.json"]


def eval_preflight_input():
    """The evaluation preflight's result for generation, probe and throughput jobs of a paper run on GPUs, else
    nothing: those jobs never wait on the training stack (workflow/rules/preflight.smk). Where the config names a
    first arm, they wait for its training too.
    """
    return (
        ["results/preflight/eval_node.json"] if PREFLIGHT_REQUIRED else []
    ) + first_arm_input()


# training jobs of more than one node also wait for an all-reduce across two nodes (rule preflight_cross_node)
CROSS_NODE_REQUIRED = PREFLIGHT_REQUIRED and config["training"]["cluster"]["nodes"] > 1


def train_preflight_input(wildcards):
    """The training preflight's result for training jobs of a paper run on GPUs, for multi-node training the
    cross-node all-reduce's result, and for every arm but the first arm (if any) that arm's finished training.
    """
    return (
        (["results/preflight/train_node.json"] if PREFLIGHT_REQUIRED else [])
        + (["results/preflight/cross_node.json"] if CROSS_NODE_REQUIRED else [])
        + first_arm_input(wildcards.arm)
    )


# ---------------------------------------------------------------------------------------------- benchmarks
def benchmark_files():
    """The records of evaluation.benchmarks (rules prepare_benchmark and generate_reasoning_gym)."""
    return [f"resources/benchmarks/{name}.jsonl" for name in EVAL["benchmarks"]]


def evaluation_files(suffix):
    """One file per evaluated checkpoint x evaluation.benchmarks: results/eval/<arm>/step<k>/<benchmark>.<suffix>
    (suffix summary.json, scores.parquet, ...)."""
    return [
        f"results/eval/{arm}/step{step}/{benchmark}.{suffix}"
        for arm, step in evaluation_points()
        for benchmark in EVAL["benchmarks"]
    ]


# Which rules the driver runs itself and which jobs share one submission: one list for the workflow and the plan's
# count of sbatch calls (brorl.ops.run.submission; docs/cluster.md#how-many-submissions).
# (what the `localrules:` directive compiles to; the directive itself takes only literal names)
workflow.localrules(*driver_rules(config["engine"]))


# ------------------------------------------------------------------------------------------------ model folders
TINY_MODEL_DIR = "resources/models/tiny-qwen2"


def base_model_dir():
    """The start checkpoint as download_base_model stages it, with its manifest, from every source (model.smk):
    resources/models/tiny-qwen2 (engine embedded: the built tiny model), else resources/models/<repo name>
    (from the hub, or copied from base_model.local_path). The context-extended folders derive from it.
    """
    if config["engine"] == "embedded":
        return TINY_MODEL_DIR
    return str(staged_base_model(config))


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


def eval_model_dir(name):
    """Where a checkpoint of evaluation.models is staged with its manifest (rule download_eval_model)."""
    return f"resources/models/eval/{name}"


def model_dir(arm, step):
    """The model folder of (arm, step): the start checkpoint (arm `base` at base_model.start_step, extended to the
    evaluation length), a checkpoint of evaluation.models (at its step, extended likewise) or a trained arm's
    exported step results/train/<arm>/step<k>/."""
    if arm in EVAL_MODELS:
        if int(step) != EVAL_MODELS[arm]["step"]:
            raise ValueError(
                f"evaluation model {arm!r} is filed under step {EVAL_MODELS[arm]['step']} only"
            )
        return f"{eval_model_dir(arm)}-ctx{context_length(CONTEXT['eval_max_len'])}"
    if arm == BASE_ARM:
        if int(step) != config["base_model"]["start_step"]:
            raise ValueError(
                f"arm {BASE_ARM!r} is the start checkpoint: only step {config['base_model']['start_step']} exists"
            )
        return eval_start_model()
    return f"results/train/{arm}/step{step}"


def evaluation_points():
    """The evaluated (arm, step) checkpoints: the start checkpoint (evaluation.steps.include_start), each enabled
    arm's steps of evaluation.steps (brorl.training.recipe.evaluation_steps) and each of evaluation.models.
    """
    from brorl.training.recipe import enabled_arms, evaluation_steps

    points = []
    if EVAL["steps"].get("include_start", True):
        points.append((BASE_ARM, config["base_model"]["start_step"]))
    for arm in enabled_arms(config):
        points += [(arm, step) for step in evaluation_steps(config, arm)]
    points += [(name, model["step"]) for name, model in EVAL_MODELS.items()]
    return points
