# Input functions of the evaluation stage (workflow/rules/evaluate.smk).
import functools
import json

from brorl.training.tracking import Tracking, check_key

# Tracking of evaluation (track_evaluation, docs/stages.md#experiment-tracking) is on when config `logging` turns
# W&B or TensorBoard on. With W&B online a missing WANDB_API_KEY stops the workflow here, before any job, as it does
# for training (helpers/train.smk); the key reaches the jobs from the environment only (envvars: in train.smk).
EVAL_TRACKING = Tracking.from_config(config["logging"])
EVAL_TRACKED = EVAL_TRACKING.wandb.enabled or EVAL_TRACKING.tensorboard
if EVAL_TRACKED:
    check_key(EVAL_TRACKING.wandb)


def evaluation_targets():
    """The evaluation tables (markdown and CSV), every evaluated checkpoint's samples, scores and summaries (each a
    target of its own: a deleted or killed one is remade by the plain command, not only when a table must be), and
    with tracking on (config `logging`) every evaluated checkpoint's tracking marker."""
    targets = [
        f"results/tables/{table}.{ext}"
        for table in ("eval_summary", "math_verify_agreement")
        for ext in ("md", "csv")
    ]
    for suffix in (
        "samples.parquet",
        "samples.parquet.json",
        "scores.parquet",
        "summary.json",
    ):
        targets += evaluation_files(suffix)
    return targets + tracking_markers()


def tracking_markers():
    """results/eval/<arm>/step<k>/tracked.json of every evaluated checkpoint when tracking is on, else nothing."""
    if not EVAL_TRACKED:
        return []
    return [
        f"results/eval/{arm}/step{step}/tracked.json"
        for arm, step in evaluation_points()
    ]


def checkpoint_summaries():
    """Input of track_evaluation: the {arm}/{step} checkpoint's summary of every evaluation benchmark."""
    return [
        f"results/eval/{{arm}}/step{{step}}/{name}.summary.json"
        for name in EVAL["benchmarks"]
    ]


def tracking_settings(wildcards):
    """Params of track_evaluation: config `logging` as JSON (no key in it: the schema has none), so that changing
    the tracking settings logs every checkpoint again. A function, so that Snakemake leaves the group template's
    {arm} as it is (a plain string param would have its wildcards filled in)."""
    return json.dumps(config["logging"], sort_keys=True)


STAGE_TARGETS.append(evaluation_targets)


def evaluation_model(wildcards):
    """Input function of generate_samples: the model folder of the {arm} and {step} wildcards."""
    return model_dir(wildcards.arm, wildcards.step)


def samples_of(wildcards):
    """Samples per problem of the checkpoint of the {arm} and {step} wildcards: evaluation.n_samples, times
    evaluation.start_draws for the start checkpoint (each arm's test against the start gets its own draw).
    """
    start = wildcards.arm == BASE_ARM and int(wildcards.step) == int(
        config["base_model"]["start_step"]
    )
    return EVAL["n_samples"] * (EVAL["start_draws"] if start else 1)


def max_items_flag():
    """--max-items of generation, scoring and summaries (the first K problems), empty when evaluation.max_items is null."""
    return [] if EVAL["max_items"] is None else ["--max-items", str(EVAL["max_items"])]


@functools.cache
def generation_sizing():
    """What sizes a generation job (evaluation's, the probe's, Table 2's): the evaluation cost model's priors
    (profiles/slurm/estimates.yaml, read once per process) and the GPUs of one node (training.cluster.gpus_per_node).
    """
    from brorl.ops.plan.profile import read_estimates

    prior = read_estimates(
        Path(workflow.basedir) / "profiles" / "slurm" / "estimates.yaml"
    ).evaluation
    return prior, int(config["training"]["cluster"]["gpus_per_node"])


def generation_job_gpus():
    """GPUs of one generation job per benchmark, and the size of a job without one (the `gpu` resource of
    generate_samples). On the cluster engine, one job per benchmark: the plan's size (brorl.evaluation.job_sizes.job_gpus:
    the fewest of 1/2/4/8 that finish within estimates.yaml's target hour, capped at training.cluster.gpus_per_node);
    a benchmark the plan cannot count gets a node. One GPU for the embedded engine's CPU generation and where one
    engine serves a checkpoint's every benchmark. A site forces one size for every job with `gpu:` under
    generate_samples in its profile (set-resources override the rule)."""
    if config["engine"] == "embedded" or EVAL["one_engine_per_checkpoint"]:
        return {}, 1
    from brorl.evaluation.job_sizes import job_gpus
    from brorl.benchmarks.problems import ProblemCountError, benchmark_problems

    prior, node = generation_sizing()
    try:
        problems = benchmark_problems(config)
    except ProblemCountError as err:
        print(
            f"note: every generation job gets a node ({node} GPUs): {err}",
            file=sys.stderr,
        )
        return {}, node
    return job_gpus(problems, int(EVAL["n_samples"]), prior, node), node


GENERATION_GPUS, GENERATION_GPUS_DEFAULT = generation_job_gpus()


def generation_gpus(wildcards):
    """Resource `gpu` of one generate_samples job (generation_job_gpus)."""
    return GENERATION_GPUS.get(
        getattr(wildcards, "benchmark", ""), GENERATION_GPUS_DEFAULT
    )


def data_parallel_size(wildcards, resources):
    """vLLM engines of one generation job: one per GPU the profile gives it (resource `gpu`), else 1 (CPU); 1 where
    one engine serves every benchmark of a checkpoint (evaluation.one_engine_per_checkpoint).
    """
    if EVAL["one_engine_per_checkpoint"]:
        return 1
    return max(1, int(resources.get("gpu", 0) or 0))


def max_model_len():
    """Longest prompt + response at evaluation (tokens): context.prompt_max_len + evaluation.max_tokens."""
    return CONTEXT["prompt_max_len"] + EVAL["max_tokens"]


# The shape of generate_samples: one job per checkpoint x benchmark (the paper: its own GPUs, its own rerun), or with
# evaluation.one_engine_per_checkpoint one job per checkpoint for every benchmark (the tiny preset: vLLM's start-up
# was most of a 27-second job there). The files are the same either way.
def generation_benchmarks():
    """Input `benchmark` of generate_samples: the {benchmark} wildcard's records, or every benchmark's."""
    if EVAL["one_engine_per_checkpoint"]:
        return benchmark_files()
    return "resources/benchmarks/{benchmark}.jsonl"


def generation_files(suffix):
    """Outputs of generate_samples: results/eval/{arm}/step{step}/<benchmark>.<suffix> for its benchmark(s)."""
    if EVAL["one_engine_per_checkpoint"]:
        return [
            f"results/eval/{{arm}}/step{{step}}/{name}.{suffix}"
            for name in EVAL["benchmarks"]
        ]
    return [f"results/eval/{{arm}}/step{{step}}/{{benchmark}}.{suffix}"]


def generation_log(folder, suffix=".log"):
    """The log (or timing file) of a generate_samples job under `folder`: per benchmark, or all_benchmarks."""
    name = "all_benchmarks" if EVAL["one_engine_per_checkpoint"] else "{benchmark}"
    return f"{folder}/{{arm}}/step{{step}}/{name}{suffix}"
