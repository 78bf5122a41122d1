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
    """vLLM engines of one generation job: one per GPU the profile gives it (resource `gpu`), else 1 (CPU); 1 where
    one engine serves every benchmark of a checkpoint (evaluation.one_engine_per_checkpoint).
    """
    if EVAL["one_engine_per_checkpoint"]:
        return 1
    return max(1, int(resources.get("gpu", 0) or 0))


def max_model_len():
    """Longest prompt + response at evaluation (tokens): context.prompt_max_len + evaluation.max_tokens."""
    return CONTEXT["prompt_max_len"] + EVAL["max_tokens"]


# The shape of generate_samples: one job per checkpoint x benchmark (the paper: its own GPUs, its own rerun), or with
# evaluation.one_engine_per_checkpoint one job per checkpoint for every benchmark (the tiny preset: vLLM's start-up
# was most of a 27-second job there). The files are the same either way.
def generation_benchmarks():
    """Input `benchmark` of generate_samples: the {benchmark} wildcard's records, or every benchmark's."""
    if EVAL["one_engine_per_checkpoint"]:
        return benchmark_files()
    return "resources/benchmarks/{benchmark}.jsonl"


def generation_files(suffix):
    """Outputs of generate_samples: results/eval/{arm}/step{step}/<benchmark>.<suffix> for its benchmark(s)."""
    if EVAL["one_engine_per_checkpoint"]:
        return [
            f"results/eval/{{arm}}/step{{step}}/{name}.{suffix}"
            for name in EVAL["benchmarks"]
        ]
    return [f"results/eval/{{arm}}/step{{step}}/{{benchmark}}.{suffix}"]


def generation_log(folder, suffix=".log"):
    """The log (or timing file) of a generate_samples job under `folder`: per benchmark, or all_benchmarks."""
    name = "all_benchmarks" if EVAL["one_engine_per_checkpoint"] else "{benchmark}"
    return f"{folder}/{{arm}}/step{{step}}/{name}{suffix}"
