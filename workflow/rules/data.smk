# Data stage: benchmarks prepared from a local file or the hub at a pinned revision, the Reasoning Gym evaluation
# sets generated once and frozen, and the RL prompt mix. Logic in brorl.benchmarks; entries in workflow/benchmarks/.
# Hub downloads read HF_TOKEN from the environment when it is set (not `envvars:`, which fails when it is unset).
# Targets: `snakemake prepare_data`, or one file:
#   resources/benchmarks/<benchmark>.jsonl (+ .manifest.json)   resources/train/<train_data.name>.jsonl (+ .manifest.json)


rule prepare_benchmark:
    """One benchmark of the registry as records: from a local file, the hub at a pinned revision, or generated."""
    output:
        records="resources/benchmarks/{bench}.jsonl",
        manifest="resources/benchmarks/{bench}.manifest.json",
    log:
        "results/logs/prepare_benchmark/{bench}.log",
    benchmark:
        "results/timings/prepare_benchmark/{bench}.tsv"
    wildcard_constraints:
        # {bench}: a benchmark of the registry that is not a Reasoning Gym set (rg_<category>, generate_reasoning_gym
        # makes those), so a narrower name than {benchmark}. Renaming it changes this rule's shell text, which the
        # code rerun trigger reads: every prepared benchmark, and the whole evaluation after it, would rerun.
        bench="|".join(map(re.escape, PREPARED_BENCHMARKS)),
    # downloads retry inside, with backoff (brorl.hub.retry); a rule retry would multiply the tries
    retries: 0
    conda:
        "../../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        source=benchmark_source,
        pins=unpinned_flag(),
        registry=lambda wildcards: registry_entry(wildcards.bench),  # rerun trigger (helpers/data.smk)
        data=benchmark_data,  # rerun trigger: the local file's sha256
    shell:
        """
        python -m brorl.benchmarks prepare \
            --name {wildcards.bench:q} \
            --source {params.source:q} {params.pins} \
            --out {output.records:q} \
            >{log:q} 2>&1
        """


rule generate_reasoning_gym:
    """One Reasoning Gym category's evaluation set, generated once from a fixed seed and frozen."""
    output:
        records="resources/benchmarks/rg_{category}.jsonl",
        manifest="resources/benchmarks/rg_{category}.manifest.json",
    log:
        "results/logs/generate_reasoning_gym/rg_{category}.log",
    benchmark:
        "results/timings/generate_reasoning_gym/rg_{category}.tsv"
    conda:
        "../../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        registry=lambda wildcards: registry_entry(f"rg_{wildcards.category}"),  # rerun trigger
        items_per_task=EVAL["reasoning_gym"]["items_per_task"],
        seed=EVAL["reasoning_gym"]["seed"],
        version=EVAL["reasoning_gym"]["version"],
    shell:
        """
        PYTHONHASHSEED=0 python -m brorl.benchmarks generate-reasoning-gym \
            --category {wildcards.category:q} \
            --items-per-task {params.items_per_task} \
            --seed {params.seed} \
            --version {params.version:q} \
            --out {output.records:q} \
            >{log:q} 2>&1
        """


rule prepare_train_data:
    """The RL prompt mix of train_data (its families downloaded at pinned revisions, mixed and deduplicated)."""
    output:
        records="resources/train/{mix}.jsonl",
        manifest="resources/train/{mix}.manifest.json",
    log:
        "results/logs/prepare_train_data/{mix}.log",
    benchmark:
        "results/timings/prepare_train_data/{mix}.tsv"
    # downloads retry inside, with backoff (brorl.hub.retry); a rule retry would multiply the tries
    retries: 0
    conda:
        "../../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=8192,
        runtime=120,
    params:
        spec=train_data_spec(),
        pins=unpinned_flag(),
    shell:
        """
        PYTHONHASHSEED=0 python -m brorl.benchmarks prepare-train-data \
            --spec {params.spec:q} {params.pins} \
            --out {output.records:q} \
            >{log:q} 2>&1
        """


rule prepare_data:
    """Every benchmark of evaluation.benchmarks and the training mix (a target to fetch the data ahead of a run)."""
    input:
        data_targets(),
