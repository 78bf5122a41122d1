# Input functions of the train stage (workflow/rules/train.smk).
import json

from snakemake.exceptions import WorkflowError

from brorl.models.check import quick_problem
from brorl.training.recipe import training_engine
from brorl.training.job_shape import (
    profile_shape_problem,
    train_job_layout,
    train_job_resources,
)
from brorl.training.layout import freeze_layouts
from brorl.training.lease import driver_check as trainers_driver_check
from brorl.training.recipe import (
    OPERATIONS_ENV,
    arm_plan,
    enabled_arms,
    in_batch_steps,
    segment_max_steps,
    split_operations,
)
from brorl.training.tracking import TRACKING_ENV, Tracking, check_key
from brorl.ops.smoke.gate import smoke_gate_problem

TRAIN = config["training"]
# the CPU rehearsal trains with cluster, the rest embedded
TRAIN_ENGINE = training_engine(config)
# the job's nodes and tasks come from training.cluster; a profile that sets others for train_ppo is refused here,
# before any job is submitted (each job would wait for its nodes, then the launcher would refuse them)
TRAIN_JOB = train_job_resources(config)
TRAIN_LAYOUT = train_job_layout(config)
# (Resource objects once parsed: their raw value is what the profile wrote)
_profiled = workflow.resource_settings.overwrite_resources.get("train_ppo") or {}
_shape = profile_shape_problem(
    {key: getattr(value, "raw", value) for key, value in _profiled.items()},
    config,
    "the profile",
)
if _shape:
    raise WorkflowError(_shape)
TRAINED_ARMS = enabled_arms(config)
# not recipe: they change no weight (a replicate's own seed is in the recipe), so editing them never retrains
PRESENTATION_KEYS = ("label", "description", "enabled", "replicates", "replicate_of")
# config `logging` reaches the segment jobs through the environment (TRACKING_ENV, operational_env in common.smk),
# not params: tracking changes no weight, so editing it must never rerun (or, with protected outputs,
# block) training. With W&B online, a missing WANDB_API_KEY stops the workflow here, before any job (the job checks
# again: an executor may not pass it on).
operational_env(TRACKING_ENV, json.dumps(config["logging"], sort_keys=True))
if TRAINED_ARMS:
    check_key(Tracking.from_config(config["logging"]).wandb)


# An arm that has started training keeps the segment length it started with (brorl.training.layout): changing
# training.segment_max_steps (or the arm's own) never renumbers, reruns or blocks its finished jobs.
for note in freeze_layouts(config, Path("results/train")):
    print(f"note: {note}", file=sys.stderr)
# The operational keys of the engine sections (brorl.training.recipe.OPERATIONAL_KEYS: polling, watchdog, prompt
# file size, checkpoints kept, the micro-batch partition, threads) change how a job runs, never its weights: they
# reach train_ppo's jobs in BRORL_TRAIN_OPERATIONS (operational_env, common.smk), not in params.recipe, so
# tuning them during a run reruns nothing (docs/cluster.md#rerun-policy).
_RECIPE_TRAINING, _OPERATIONS = split_operations(TRAIN)
operational_env(OPERATIONS_ENV, json.dumps(_OPERATIONS, sort_keys=True))
# The smoke gate (brorl.ops.smoke.gate): GPU training at paper scale waits for a passed GPU smoke run. A warning here
# (-n and make plan stay usable); onstart (hooks.smk) stops a run whose jobs would train.
SMOKE_GATE = smoke_gate_problem(config) if TRAINED_ARMS else ""
if SMOKE_GATE:
    driver_warning(SMOKE_GATE)


def checkpoint_stop(workflow):
    """The broken checkpoints' message (empty: none)."""
    return checkpoint_advice(BROKEN_CHECKPOINTS) if BROKEN_CHECKPOINTS else ""


def checkpoint_advice(problems):
    """The broken checkpoints and the fix."""
    folders = " ".join(sorted({p.split(":")[0] for p in problems}))
    return (
        "trained checkpoint(s) damaged since they were exported: "
        + "; ".join(problems)
        + f". Delete the folder(s) (protected: `chmod -R u+w` first) and run again: each is exported again from "
        f"its arm's run folder (rm -rf {folders})"
    )


# Trained checkpoints checked where it is cheap (brorl.models.check.quick_problem: every file its manifest lists is
# there, at its size): root ignores protected(), and a folder missing its weights is still "present" to Snakemake.
# A warning here (-n stays usable); onstart (hooks.smk) stops the run before any job reads the folder.
BROKEN_CHECKPOINTS = [
    problem
    for arm in TRAINED_ARMS
    for step in arm_plan(config, arm).saved_steps
    if (problem := quick_problem(Path(f"results/train/{arm}/step{step}")))
]
if BROKEN_CHECKPOINTS:
    driver_warning(checkpoint_advice(BROKEN_CHECKPOINTS))


def smoke_gate_stop(workflow):
    """The smoke gate's message when jobs of this run would train (empty: none, or the gate passed)."""
    training = any(job.rule.name == "train_ppo" for job in workflow.dag.needrun_jobs())
    return SMOKE_GATE if training else ""


def trainer_stop(workflow):
    """Before any sbatch: why this run must not start while another job trains an arm it would train (the lease,
    brorl.training.lease; empty: none). With BRORL_TRAINERS=wait it waits for those jobs instead.
    """
    segments = {}
    for job in workflow.dag.needrun_jobs():
        if job.rule.name == "train_ppo":
            segments.setdefault(job.wildcards.arm, []).append(
                int(job.wildcards.segment)
            )
    return trainers_driver_check(Path("results/train"), segments) if segments else ""


def train_recipe(wildcards):
    """The config the training CLI needs for one arm, as JSON (params: a change here reruns the arm)."""
    arm = next(a for a in config["arms"] if a["name"] == wildcards.arm)
    other_engine = "cluster" if TRAIN_ENGINE == "embedded" else "embedded"
    own = {k: v for k, v in arm.items() if k not in PRESENTATION_KEYS}
    # the arm's effective segment length (its own, else the training default), frozen once its run started
    own["segment_max_steps"] = segment_max_steps(config, wildcards.arm)
    recipe = {
        "arms": [own],
        # the other engine's settings cannot change these weights: leaving them out keeps them from rerunning
        "training": {
            k: v
            for k, v in _RECIPE_TRAINING.items()
            if k not in (other_engine, "segment_max_steps")
        },
        "context": config["context"],
        "train_data": {"name": config["train_data"]["name"]},
    }
    # the in-batch probe's saves (recipe.in_batch_saves); absent while it is off, as before it existed
    steps = in_batch_steps(config)
    if steps:
        recipe["probe"] = {"enabled": True, "in_batch": {"steps": list(steps)}}
    return json.dumps(recipe, sort_keys=True)


def cluster_prompts(wildcards):
    """OpenRLHF's prompt file of {arm}, made by prepare_prompts (a CPU job) before its first GPU job."""
    return (
        f"results/train/{wildcards.arm}/prompts.json"
        if TRAIN_ENGINE == "cluster"
        else []
    )


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
    """The manifests of every segment of {arm} (finish_training needs them all)."""
    return [
        f"results/train/{wildcards.arm}/segment{s.index}.json"
        for s in arm_plan(config, wildcards.arm).segments
    ]


def arm_checkpoints(wildcards):
    """The exported folders of every saved step of {arm}."""
    return [
        f"results/train/{wildcards.arm}/step{k}"
        for k in arm_plan(config, wildcards.arm).saved_steps
    ]


def training_targets():
    """Every enabled arm's train.json and metrics.jsonl (which need all its segments) and every saved checkpoint,
    each a target of its own: a deleted checkpoint folder is exported again from the run folder. (A segment's
    manifest is not: it is the training job's own output, protected; delete results/train/<arm> to retrain.)
    """
    return [
        f"results/train/{arm}/{name}"
        for arm in TRAINED_ARMS
        for name in ("train.json", "metrics.jsonl")
    ] + [
        f"results/train/{arm}/step{step}"
        for arm in TRAINED_ARMS
        for step in arm_plan(config, arm).saved_steps
    ]


STAGE_TARGETS.append(training_targets)
