# Input functions of the evaluation stage (workflow/rules/evaluate.smk).


def evaluation_targets():
    """The evaluation table (markdown and CSV), which needs every summary."""
    return ["results/tables/eval_summary.md", "results/tables/eval_summary.csv"]


STAGE_TARGETS.append(evaluation_targets)


def evaluation_model(wildcards):
    """Input function of generate_samples: the model folder of the {arm} and {step} wildcards."""
    return model_dir(wildcards.arm, wildcards.step)


def max_items_flag():
    """--max-items of generation, scoring and summaries (the first K problems), empty when evaluation.max_items is null."""
    return [] if EVAL["max_items"] is None else ["--max-items", str(EVAL["max_items"])]


def data_parallel_size(wildcards, resources):
    """vLLM engines of one generation job: one per GPU the profile gives it (resource `gpu`), else 1 (CPU)."""
    return max(1, int(resources.get("gpu", 0) or 0))


def max_model_len():
    """Longest prompt + response at evaluation (tokens): context.prompt_max_len + evaluation.max_tokens."""
    return CONTEXT["prompt_max_len"] + EVAL["max_tokens"]


def checkpoint_files(suffix):
    """The files of one checkpoint on every evaluation.benchmarks, with the {arm} and {step} wildcards left open:
    results/eval/{arm}/step{step}/<benchmark>.<suffix> (the one-engine generate_samples writes them all).
    """
    return [
        f"results/eval/{{arm}}/step{{step}}/{benchmark}.{suffix}"
        for benchmark in EVAL["benchmarks"]
    ]
