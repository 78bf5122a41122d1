# Model stage: the start checkpoint staged once with a manifest (download_base_model: the hub at base_model.revision,
# base_model.local_path, or the tiny model built offline when engine is embedded: one contract for every source),
# then derived for the training and evaluation contexts (extend_context: config, tokenizer and generation limits for
# L = context.prompt_max_len + a response budget, RoPE checked, weights hard-linked, proven by a forward pass at L).
# Logic in brorl.models; every later stage verifies a folder against its manifest (brorl.models.verify_model_dir).
# Input functions: helpers/model.smk; the folders other stages read (train_start_model(), eval_start_model()) are in
# common.smk. Targets (in `all`): both derived folders.
#   resources/build/tiny-qwen2/        the tiny Qwen2 as built (engine embedded)
#   resources/build/tiny-qwen2-warm/   after warm_start_tiny_model (sometimes right on one-digit sums): the source
#                                      of the tiny start model (brorl.training.embedded.warm_start: why)
#   resources/models/<name>/           the start checkpoint (<name>: the repo's name, or tiny-qwen2)
#   resources/models/<name>-ctx<L>/    the same weights allowing L tokens
# HF_TOKEN reaches download_base_model from the environment only (never params): it is declared with `envvars:`
# when it is set, so executors that do not inherit the environment get it; `envvars:` stops the whole workflow
# when a variable is unset, and the paper's repository is public, so an unset token must not stop anything.
if os.environ.get("HF_TOKEN"):

    envvars:
        "HF_TOKEN",


rule build_tiny_model:
    """The tiny Qwen2 of the embedded engine, built offline from base_model.embedded_model and checked."""
    output:
        directory(TINY_BUILD_DIR),
    log:
        "results/logs/build_tiny_model/tiny-qwen2.log",
    priority: 10  # the critical path (the chain to trained checkpoints) starts first
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        hidden_size=TINY_MODEL["hidden_size"],
        intermediate_size=TINY_MODEL["intermediate_size"],
        num_layers=TINY_MODEL["num_layers"],
        num_heads=TINY_MODEL["num_heads"],
        num_kv_heads=TINY_MODEL["num_kv_heads"],
        max_position_embeddings=TINY_MODEL["max_position_embeddings"],
        context_length=context_length(CONTEXT["base_max_len"]),
        seed=TINY_MODEL["seed"],
        tie=tiny_model_tie_flag(),
    shell:
        """
        python -m brorl.models build-tiny \
            --out {output:q} \
            --hidden-size {params.hidden_size} \
            --intermediate-size {params.intermediate_size} \
            --num-layers {params.num_layers} \
            --num-heads {params.num_heads} \
            --num-kv-heads {params.num_kv_heads} \
            --max-position-embeddings {params.max_position_embeddings} \
            --context-length {params.context_length} \
            --seed {params.seed} \
            {params.tie:q} \
            >{log:q} 2>&1
        python -m brorl.models check {output:q} >>{log:q} 2>&1
        """


rule warm_start_tiny_model:
    """The tiny model after a short supervised warm start: the stand-in for a start model that already reasons."""
    input:
        TINY_BUILD_DIR,
    output:
        directory(TINY_WARM_DIR),
    log:
        "results/logs/warm_start_tiny_model/tiny-qwen2.log",
    benchmark:
        "results/timings/warm_start_tiny_model/tiny-qwen2.tsv"
    priority: 10  # the critical path (the chain to trained checkpoints) starts first
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=30,
    params:
        steps=WARM_START["steps"],
        lr=WARM_START["lr"],
        batch_size=WARM_START["batch_size"],
        n_items=WARM_START["items"],
        seed=WARM_START["seed"],
    shell:
        """
        python -m brorl.training warm-start \
            --model {input:q} \
            --out {output:q} \
            --steps {params.steps} \
            --lr {params.lr} \
            --batch-size {params.batch_size} \
            --items {params.n_items} \
            --seed {params.seed} \
            >{log:q} 2>&1
        """


rule download_base_model:
    """The start checkpoint staged with its manifest: from the hub, base_model.local_path or the tiny model."""
    input:
        source=base_model_source(),
    output:
        directory(base_model_dir()),
    log:
        "results/logs/download_base_model/base_model.log",
    benchmark:
        "results/timings/download_base_model/base_model.tsv"
    priority: 10  # the critical path (the chain to trained checkpoints) starts first
    # downloads retry inside, with backoff (brorl.hub.retry); a rule retry would multiply the tries
    retries: 0
    conda:
        "../../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=120,
    params:
        repo_id=base_model_repo(),
        revision=base_model_revision(),
        local=base_model_source_flag(),
        cache_dir=HUB_CACHE,
        pins=unpinned_flag(),
    shell:
        """
        python -m brorl.models download \
            --out {output:q} \
            --repo-id {params.repo_id:q} \
            --revision {params.revision:q} {params.pins} \
            {params.local:q} \
            --cache-dir {params.cache_dir:q} \
            >{log:q} 2>&1
        python -m brorl.models verify {output:q} >>{log:q} 2>&1
        """


rule extend_context:
    """The start checkpoint derived to allow L tokens (ctx<L>), proven by a forward pass at that length."""
    input:
        base_model_dir(),
    output:
        directory(extended_model_dir("{length}")),
    log:
        "results/logs/extend_context/ctx{length}.log",
    benchmark:
        "results/timings/extend_context/ctx{length}.tsv"
    wildcard_constraints:
        length=r"\d+",
    priority: 10  # the critical path (the chain to trained checkpoints) starts first
    conda:
        gpu_rule_env("../../envs/eval.yaml")
    container:
        GPU_CONTAINER
    threads: extend_context_resources("threads")
    resources:
        mem_mb=extend_context_resources("mem_mb"),
        runtime=extend_context_resources("runtime"),
    params:
        rope_scaling=CONTEXT["rope_scaling"] or "none",
    shell:
        """
        python -m brorl.models extend-context \
            --base {input:q} \
            --length {wildcards.length} \
            --rope-scaling {params.rope_scaling:q} \
            --threads {threads} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule download_eval_model:
    """A checkpoint of evaluation.models staged with its manifest: from the hub at its revision (the pin gate
    refuses a branch `make pin` did not lock) or from its local folder; the same contract as the start checkpoint.
    A CPU job before any GPU job: an architecture the pinned vLLM does not serve is refused here (a local folder's
    already when the DAG is built)."""
    input:
        source=eval_model_source,
    output:
        directory(eval_model_dir("{model}")),
    log:
        "results/logs/download_eval_model/{model}.log",
    benchmark:
        "results/timings/download_eval_model/{model}.tsv"
    wildcard_constraints:
        model="|".join(map(re.escape, EVAL_MODELS)) or "(?!)",
    retries: 0  # downloads retry inside, with backoff (brorl.hub.retry)
    conda:
        "../../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=120,
    params:
        source=eval_model_flags,
        cache_dir=HUB_CACHE,
        pins=unpinned_flag(),
    shell:
        """
        python -m brorl.models download \
            --out {output:q} \
            {params.source:q} {params.pins} \
            --cache-dir {params.cache_dir:q} \
            >{log:q} 2>&1
        python -m brorl.models verify --served {output:q} >>{log:q} 2>&1
        """


rule extend_eval_model:
    """A checkpoint of evaluation.models derived to allow L tokens (ctx<L>), proven by a forward pass at L, as the
    start checkpoint is for its evaluation."""
    input:
        eval_model_dir("{model}"),
    output:
        directory(eval_model_dir("{model}-ctx{length}")),
    log:
        "results/logs/extend_eval_model/{model}-ctx{length}.log",
    benchmark:
        "results/timings/extend_eval_model/{model}-ctx{length}.tsv"
    wildcard_constraints:
        model="|".join(map(re.escape, EVAL_MODELS)) or "(?!)",
        length=r"\d+",
    conda:
        gpu_rule_env("../../envs/eval.yaml")
    container:
        GPU_CONTAINER
    threads: extend_context_resources("threads")
    resources:
        mem_mb=extend_context_resources("mem_mb"),
        runtime=extend_context_resources("runtime"),
    params:
        rope_scaling=CONTEXT["rope_scaling"] or "none",
    shell:
        """
        python -m brorl.models extend-context \
            --base {input:q} \
            --length {wildcards.length} \
            --rope-scaling {params.rope_scaling:q} \
            --threads {threads} \
            --out {output:q} \
            >{log:q} 2>&1
        """
