# Input functions of the model stage (workflow/rules/model.smk). The folders other stages read are in common.smk:
# base_model_dir(), train_start_model(), eval_start_model(), model_dir().
TINY_BUILD_DIR = "resources/build/tiny-qwen2"
TINY_WARM_DIR = "resources/build/tiny-qwen2-warm"  # after the supervised warm start (warm_start_tiny_model)
TINY_MODEL = config["base_model"]["embedded_model"]
WARM_START = TINY_MODEL["warm_start"]
HUB_CACHE = "resources/models/.hub-cache"  # resumes an interrupted hub download


def model_targets():
    """Both derived folders of the start checkpoint (the same folder once when the two lengths agree); the training
    one only when an arm trains (an evaluation-only run, e.g. workflow/presets/released.yaml, needs no 16K folder),
    neither when nothing trains and the start checkpoint is not evaluated (`make evaluate` without BASE=1).
    """
    from brorl.training.recipe import enabled_arms

    if enabled_arms(config):
        return sorted({train_start_model(), eval_start_model()})
    return [eval_start_model()] if EVAL["steps"].get("include_start", True) else []


STAGE_TARGETS.append(model_targets)


def base_model_source():
    """Input of download_base_model: the built tiny model after its warm start (engine embedded; the bare build when
    base_model.embedded_model.warm_start.steps is 0), base_model.local_path, or none (hub).
    """
    if config["engine"] == "embedded":
        return TINY_WARM_DIR if WARM_START["steps"] else TINY_BUILD_DIR
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


def tiny_model_tie_flag():
    """--tie of build-tiny when base_model.embedded_model.tie_word_embeddings is set, else nothing."""
    return ["--tie"] if TINY_MODEL["tie_word_embeddings"] else []


def extend_context_resources(key):
    """threads/mem_mb/runtime of extend_context: the forward pass at L is seconds for the tiny model, minutes and
    ~15 GiB for the 1.5B model at 33K tokens on CPU (float32)."""
    embedded = config["engine"] == "embedded"
    return (
        {"threads": 1, "mem_mb": 4096, "runtime": 20}[key]
        if embedded
        else {"threads": 16, "mem_mb": 65536, "runtime": 180}[key]
    )


# ------------------------------------------------------------------------------- checkpoints of evaluation.models
def eval_model_source(wildcards):
    """Input of download_eval_model: the model's local folder, or none (the hub)."""
    path = EVAL_MODELS[wildcards.model]["path"]
    return [path] if path else []


def eval_model_flags(wildcards):
    """--repo-id/--revision (recorded in the manifest; downloaded from the hub without a path), --local and
    --config-key (named by the pin gate's refusal) of the download CLI for one evaluation model.
    """
    model = EVAL_MODELS[wildcards.model]
    index = list(EVAL_MODELS).index(wildcards.model)
    flags = ["--repo-id", model["repo_id"] or f"local/{model['name']}"]
    flags += ["--revision", model["revision"] or "local"]
    flags += ["--config-key", f"evaluation.models[{index}].revision"]
    return flags + (["--local", model["path"]] if model["path"] else [])


def check_local_eval_models():
    """Refuse, while the DAG is built, a local checkpoint of evaluation.models that the pinned vLLM cannot generate
    with (a hub checkpoint is checked by download_eval_model, a CPU job before any GPU job).
    """
    from brorl.models.architectures import folder_architecture_problem

    for model in EVAL_MODELS.values():
        problem = model["path"] and folder_architecture_problem(model["path"])
        if problem:
            raise WorkflowError(f"evaluation.models {model['name']!r}: {problem}")


check_local_eval_models()
