# Model stage: the start checkpoint staged once with a manifest (download_base_model: the hub at base_model.revision,
# base_model.local_path, or the tiny model built offline when engine is embedded: one contract for every source),
# then derived for the training and evaluation contexts (extend_context: config, tokenizer and generation limits for
# L = context.prompt_max_len + a response budget, RoPE checked, weights hard-linked, proven by a forward pass at L).
# Logic in brorl.models; every later stage verifies a folder against its manifest (brorl.models.verify_model_dir).
# Input functions for other stages: train_start_model(), eval_start_model(). Targets (in `all`): both folders.
#   resources/build/tiny-qwen2/        the tiny Qwen2 as built (engine embedded): the source of the start model
#   resources/models/<name>/           the start checkpoint (<name>: the repo's name, or tiny-qwen2)
#   resources/models/<name>-ctx<L>/    the same weights allowing L tokens
# HF_TOKEN reaches download_base_model from the environment only (never params): it is declared with `envvars:`
# when it is set, so executors that do not inherit the environment get it; `envvars:` stops the whole workflow
# when a variable is unset, and the paper's repository is public, so an unset token must not stop anything.
TINY_BUILD_DIR = "resources/build/tiny-qwen2"
CONTEXT = config["context"]
HUB_CACHE = "resources/models/.hub-cache"

if os.environ.get("HF_TOKEN"):

    envvars:
        "HF_TOKEN",


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


def model_targets():
    """Both derived folders of the start checkpoint (the same folder once when the two lengths agree)."""
    return sorted({train_start_model(), eval_start_model()})


STAGE_TARGETS.append(model_targets)


def base_model_source():
    """Input of download_base_model: the built tiny model (engine embedded), base_model.local_path, or none (hub)."""
    if config["engine"] == "embedded":
        return TINY_BUILD_DIR
    return config["base_model"]["local_path"] or []


def base_model_source_flag():
    """--local of the download CLI when the source is a folder, else nothing (the hub)."""
    source = base_model_source()
    return ["--local", source] if source else []


def base_model_repo():
    """Repository recorded in the manifest: base_model.repo_id, or the built tiny model's name (not a hub repo)."""
    if config["engine"] == "embedded":
        return "brorl/tiny-qwen2"
    return config["base_model"]["repo_id"]


def base_model_revision():
    """Revision recorded (and downloaded): base_model.revision, or the tiny model's seed."""
    if config["engine"] == "embedded":
        return f"seed{TINY_MODEL['seed']}"
    return config["base_model"]["revision"]


def extend_context_resources(key):
    """threads/mem_mb/runtime of extend_context: the forward pass at L is seconds for the tiny model, minutes and
    ~15 GiB for the 1.5B model at 33K tokens on CPU (float32)."""
    embedded = config["engine"] == "embedded"
    return (
        {"threads": 1, "mem_mb": 4096, "runtime": 20}[key]
        if embedded
        else {"threads": 16, "mem_mb": 65536, "runtime": 180}[key]
    )


rule build_tiny_model:
    output:
        directory(TINY_BUILD_DIR),
    log:
        "results/logs/build_tiny_model/tiny-qwen2.log",
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


rule download_base_model:
    input:
        source=base_model_source(),
    output:
        directory(base_model_dir()),
    log:
        "results/logs/download_base_model/base_model.log",
    benchmark:
        "results/benchmarks/download_base_model/base_model.tsv"
    retries: 3
    localrule: True
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
    shell:
        """
        python -m brorl.models download \
            --out {output:q} \
            --repo-id {params.repo_id:q} \
            --revision {params.revision:q} \
            {params.local:q} \
            --cache-dir {params.cache_dir:q} \
            >{log:q} 2>&1
        python -m brorl.models verify {output:q} >>{log:q} 2>&1
        """


rule extend_context:
    input:
        base_model_dir(),
    output:
        directory(extended_model_dir("{length}")),
    log:
        "results/logs/extend_context/ctx{length}.log",
    benchmark:
        "results/benchmarks/extend_context/ctx{length}.tsv"
    wildcard_constraints:
        length=r"\d+",
    conda:
        "../../envs/eval.yaml"
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
