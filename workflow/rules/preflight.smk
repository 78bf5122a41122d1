# Preflight of a paper run: one job on one GPU node, before any training or evaluation job is submitted, checks
# what would otherwise fail hours into a 64-GPU job (brorl.preflight: driver vs CUDA build, GPUs seen by torch and
# vLLM, flash-attn, DeepSpeed's FusedAdam, disk for the checkpoints, the code sandbox, Ray). A failed check fails
# the job (its log holds the table with the fix for each failure), so nothing downstream is submitted.
# Only in the DAG at paper scale on GPUs (preflight_input() is empty for the embedded engine and the CPU rehearsal).
# Multi-node training also waits for preflight_cross_node: an all-reduce over two nodes' GPUs (train_preflight_input).


rule preflight_gpu_node:
    """Checks one GPU node before any paper-scale job: driver, GPUs, flash-attn, FusedAdam, disk, sandbox, Ray."""
    output:
        "results/preflight/gpu_node.json",
    log:
        "results/logs/preflight/gpu_node.log",
    conda:
        "../../envs/train.yaml"
    container:
        GPU_CONTAINER
    threads: 1
    resources:
        mem_mb=16000,
        runtime=30,
    params:
        need_gb=PREFLIGHT_NEED_GB,
    shell:
        """
        python -m brorl.preflight --no-slurm --need-gb {params.need_gb} --out {output:q} >{log:q} 2>&1
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
    shell:
        # the profile's mpi: srun runs this in the batch step, so this srun spans both nodes (as train_ppo's Ray)
        """
        srun --overlap --nodes=2 --ntasks-per-node={params.ranks_per_node} --cpus-per-task=1 --cpu-bind=none \
            python -m brorl.preflight.cross_node --backend nccl --out {output:q} >{log:q} 2>&1
        """
