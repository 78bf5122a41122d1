# Input functions of the mass-balance probe (workflow/rules/probe.smk).
import json

from brorl.training.recipe import enabled_arms, in_batch_steps

PROBE = config["probe"]
PROBE_SET = "resources/probes/probe_set.jsonl"
# on when asked for and some arm trains: without a trained arm there is no change to follow
PROBE_ON = PROBE["enabled"] and bool(enabled_arms(config))
# the in-batch probe's steps (probe.in_batch.steps), in every enabled arm, when the probe is on
IN_BATCH = in_batch_steps(config) if PROBE_ON else ()
# its files per arm and probed step
IN_BATCH_DIR = "results/probe/in_batch/{arm}/step{step}"


def probe_points():
    """(arm, step) of every probed checkpoint: the start (arm `base` at base_model.start_step) and every saved step
    of every enabled arm (brorl.training.recipe.arm_plan) but those saved for the in-batch probe alone.
    """
    from brorl.training.recipe import arm_plan, enabled_arms

    points = [(BASE_ARM, config["base_model"]["start_step"])]
    for arm in enabled_arms(config):
        points += [(arm, s) for s in arm_plan(config, arm).regular_saves]
    return points


def probe_targets():
    """The probe's table, per-probe pass rates and figures, when it is on (PROBE_ON)."""
    if not PROBE_ON:
        return []
    return [
        "results/tables/probe.md",
        "results/tables/probe.csv",
        "results/probe/pass_rates.csv",
        "results/figures/probe.png",
        "results/figures/probe.pdf",
        "results/figures/probe_arms.png",
        "results/figures/probe_arms.pdf",
        "results/tables/probe_between_arms.md",
        "results/tables/probe_between_arms.csv",
        # every probed checkpoint's files, each a target of its own (a deleted or killed one is remade)
        PROBE_SET,
        *[
            f"results/probe/{arm}/step{step}.{suffix}"
            for arm, step in probe_points()
            for suffix in ("samples.parquet", "samples.parquet.json", "scores.parquet")
        ],
        *in_batch_targets(),
    ]


def in_batch_targets():
    """The in-batch probe's tables, rates and figure, when it has steps (IN_BATCH)."""
    if not IN_BATCH:
        return []
    return [
        f"results/tables/probe_in_batch{suffix}"
        for suffix in (".md", ".csv", "_between_arms.md", "_between_arms.csv")
    ] + [
        "results/probe/in_batch/pass_rates.csv",
        "results/figures/probe_in_batch.png",
        "results/figures/probe_in_batch.pdf",
        *in_batch_files(
            ".prompts.jsonl",
            ".rollouts.csv",
            *(
                f".{side}.{suffix}"
                for side in ("before", "after")
                for suffix in (
                    "samples.parquet",
                    "samples.parquet.json",
                    "scores.parquet",
                )
            ),
        ),
    ]


def in_batch_files(*suffixes):
    """The in-batch probe's files with these suffixes, of every probed step of every enabled arm."""
    return [
        f"{IN_BATCH_DIR.format(arm=arm, step=step)}{suffix}"
        for arm in enabled_arms(config)
        for step in IN_BATCH
        for suffix in suffixes
    ]


def in_batch_model(wildcards):
    """The policy one side of a probed step samples: just before its update (the previous step's export; the
    start checkpoint as training starts from it for step 1) or just after (the step's own export).
    """
    step = int(wildcards.step) - (wildcards.side == "before")
    return train_start_model() if step == 0 else model_dir(wildcards.arm, step)


STAGE_TARGETS.append(probe_targets)


def probe_start_scores():
    """The start checkpoint's evaluation scores of probe.benchmark, which choose the probes (probe.select
    start_pass_rate); none with probe.select first."""
    if PROBE["select"] != "start_pass_rate":
        return []
    step = config["base_model"]["start_step"]
    return [f"results/eval/{BASE_ARM}/step{step}/{PROBE['benchmark']}.scores.parquet"]


def probe_target_hours():
    """--target-hours of analyse_probe: analysis.equal_time_hours, none for the final checkpoints."""
    hours = config["analysis"]["equal_time_hours"]
    return [] if hours is None else ["--target-hours", str(hours)]


def probe_comparison_metrics():
    """The training metrics (hours) of analysis.comparison's two arms, where they train: the equal-compute pair."""
    from brorl.training.recipe import enabled_arms

    comparison = config["analysis"]["comparison"]
    return [
        f"results/train/{arm}/metrics.jsonl"
        for arm in (comparison["control"], comparison["treatment"])
        if arm in enabled_arms(config)
    ]


def probe_summary_input():
    """The probe's table for SUMMARY.md (none when the probe is off)."""
    return (
        ["results/tables/probe.csv", "results/tables/probe_between_arms.csv"]
        if PROBE_ON
        else []
    )


def in_batch_summary_input():
    """The in-batch probe's table and between-arm test for SUMMARY.md (none when it has no steps)."""
    return (
        [
            "results/tables/probe_in_batch.csv",
            "results/tables/probe_in_batch_between_arms.csv",
        ]
        if IN_BATCH
        else []
    )


def probe_model(wildcards):
    """The policy a probed checkpoint samples from: the start checkpoint as training starts from it (for the
    training response budget), or a trained arm's exported step."""
    if wildcards.arm == BASE_ARM:
        if int(wildcards.step) != config["base_model"]["start_step"]:
            raise ValueError(
                f"arm {BASE_ARM!r} is the start checkpoint: only step {config['base_model']['start_step']} exists"
            )
        return train_start_model()
    return model_dir(wildcards.arm, wildcards.step)


def probe_job_gpus():
    """GPUs of one generate_probe job: the evaluation cost model's size for probes x samples (the plan prices the
    same number); 1 on the embedded engine."""
    if config["engine"] == "embedded":
        return 1
    from brorl.evaluation.job_sizes import job_gpus

    prior, node = generation_sizing()
    sizes = job_gpus({"probe": PROBE["problems"]}, int(PROBE["samples"]), prior, node)
    return sizes["probe"]


PROBE_GPUS = probe_job_gpus()


def probe_scores():
    """Input of analyse_probe: the scores of every probed checkpoint."""
    return [
        f"results/probe/{arm}/step{step}.scores.parquet" for arm, step in probe_points()
    ]


def probe_labels():
    """--labels of analyse_probe (JSON): each enabled arm's label with its N, in the config's order."""
    return json.dumps(
        {
            arm["name"]: f"{arm.get('label') or arm['name']}, N={arm['n']}"
            for arm in config["arms"]
            if arm["enabled"]
        }
    )
