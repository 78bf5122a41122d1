# Preflights of a paper run: one job on one GPU node checks what would otherwise fail hours into a 64-GPU job
# (brorl.ops.preflight). Two of them, each in the software its jobs use: training jobs wait on preflight_train_node
# (envs/train.yaml: driver vs CUDA build, GPUs, vLLM sleep mode, flash-attn, DeepSpeed's FusedAdam, NCCL, disk for
# the checkpoints, the code sandbox, Ray); generation, probe and throughput jobs on preflight_eval_node
# (envs/eval.yaml or the image: driver, GPUs, vLLM generating, disk, hub token), so evaluating a checkpoint never
# waits on compiling the training stack. A failed check fails the job (its log holds the table with the fix for each
# failure), so nothing downstream is submitted. Only in the DAG at paper scale on GPUs (the input functions in
# common.smk are empty for the embedded engine and the CPU rehearsal). Multi-node training also waits for
# preflight_cross_node: an all-reduce over two nodes' GPUs (train_preflight_input).


rule preflight_eval_node:
    """Checks one GPU node before generation, probe and throughput jobs: driver, GPUs, vLLM generating, disk, token."""
    output:
        "results/preflight/eval_node.json",
    log:
        "results/logs/preflight/eval_node.log",
    conda:
        gpu_rule_env("../../envs/eval.yaml")
    container:
        GPU_CONTAINER
    threads: 1
    resources:
        mem_mb=16000,
        runtime=30,
    shell:
        """
        python -m brorl.ops.preflight --scope eval --no-slurm --out {output:q} >{log:q} 2>&1
        """


rule preflight_train_node:
    """Checks one GPU node before any training job: driver, GPUs, flash-attn, FusedAdam, NCCL, disk, sandbox, Ray."""
    output:
        "results/preflight/train_node.json",
    log:
        "results/logs/preflight/train_node.log",
    conda:
        "../../envs/train.yaml"
    # no container: the training preflight checks the software train_ppo runs with, its conda environment (train_ppo
    # has no container: it drives Slurm itself)
    threads: 1
    resources:
        mem_mb=16000,
        runtime=30,
    params:
        need_gb=PREFLIGHT_NEED_GB,
    shell:
        """
        python -m brorl.ops.preflight --no-slurm --need-gb {params.need_gb} --out {output:q} >{log:q} 2>&1
        """


rule preflight_cross_node:
    """An all-reduce across two GPU nodes (one rank per GPU, NCCL) before any multi-node training job."""
    output:
        "results/preflight/cross_node.json",
    log:
        "results/logs/preflight/cross_node.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=16000,
        runtime=20,
    params:
        ranks_per_node=config["training"]["cluster"]["gpus_per_node"],
        # named: the batch step's inherited SLURM_NTASKS (the job's 2 tasks) would otherwise cap srun at 2 ranks
        ranks=2 * config["training"]["cluster"]["gpus_per_node"],
    shell:
        # the profile's mpi: srun runs this in the batch step, so this srun spans both nodes (as train_ppo's Ray)
        """
        srun --overlap --nodes=2 --ntasks={params.ranks} --ntasks-per-node={params.ranks_per_node} --cpus-per-task=1 \
            --cpu-bind=none \
            python -m brorl.ops.preflight.cross_node --backend nccl --out {output:q} >{log:q} 2>&1
        """
