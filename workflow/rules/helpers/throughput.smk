# Input functions of the throughput stage (workflow/rules/throughput.smk).
from brorl.ops.plan.throughput import RULE_RUNTIME_MIN as BENCH_RULE_RUNTIME_MIN
from brorl.training.recipe import training_engine

THROUGHPUT = config["throughput"]
TABLE2_FILES = {ext: f"results/tables/table2.{ext}" for ext in ("md", "tex", "csv")}
THROUGHPUT_FIGURE = {
    ext: f"results/figures/throughput_vs_n.{ext}" for ext in ("png", "pdf")
}


def bench_jobs_sized():
    """Each bench_throughput job sized by its work (brorl.ops.plan.throughput) at the evaluation model's priors."""
    from brorl.ops.plan.throughput import bench_jobs

    return bench_jobs(THROUGHPUT, generation_sizing()[0])


def bench_time_stop(workflow):
    """Why Table 2's jobs cannot run ("" when they can): a job priced beyond the runtime of its last attempt (the
    profile's, else the rule's own; retries + 1 is known once the run starts, so onstart in hooks.smk checks it,
    before any job), naming both (brorl.ops.plan.throughput.refusal, as `make plan`)."""
    if not (THROUGHPUT["enabled"] and config["engine"] != "embedded"):
        return ""
    from brorl.ops.plan.throughput import refusal, runtime_limit

    raw = (
        workflow.resource_settings.overwrite_resources.get("bench_throughput") or {}
    ).get("runtime")
    limit = runtime_limit(
        getattr(raw, "raw", raw), workflow.execution_settings.retries + 1
    )
    return refusal(bench_jobs_sized(), *limit)


if (
    THROUGHPUT["enabled"]
    and config["engine"] != "embedded"
    and workflow.is_main_process
):
    from brorl.ops.plan.throughput import size_lines

    for _line in size_lines(bench_jobs_sized(), generation_sizing()[0]):
        print(f"note: {_line}", file=sys.stderr)


def throughput_results():
    """One JSON per throughput.layouts x throughput.prefix_caching configuration."""
    return [
        f"results/throughput/p{layout['prompts']}_n{layout['n']}_pc{'on' if pc else 'off'}.json"
        for layout in THROUGHPUT["layouts"]
        for pc in THROUGHPUT["prefix_caching"]
    ]


# The shape of bench_throughput: one job (a fresh engine) per configuration (the paper), or with
# throughput.one_engine_per_setting one job per prefix-caching setting for every layout (the tiny preset, where
# vLLM's start-up was most of a 25-second job). The files are the same either way.
def bench_files():
    """Outputs of bench_throughput: results/throughput/p{prompts}_n{n}_pc{pc}.json, or every layout's at {pc}."""
    if THROUGHPUT["one_engine_per_setting"]:
        return [
            f"results/throughput/p{lay['prompts']}_n{lay['n']}_pc{{pc}}.json"
            for lay in THROUGHPUT["layouts"]
        ]
    return "results/throughput/p{prompts}_n{n}_pc{pc}.json"


def bench_log(folder, suffix=".log"):
    """The log (or timing file) of a bench_throughput job under `folder`."""
    name = (
        "all_layouts_pc{pc}"
        if THROUGHPUT["one_engine_per_setting"]
        else "p{prompts}_n{n}_pc{pc}"
    )
    return f"{folder}/{name}{suffix}"


def throughput_targets():
    """Table 2, the figure and machine.json; none when throughput is disabled."""
    if not THROUGHPUT["enabled"]:
        return []
    return [
        *TABLE2_FILES.values(),
        *THROUGHPUT_FIGURE.values(),
        "results/throughput/machine.json",
        "results/throughput/pass_rate_by_step.csv",
        *throughput_results(),  # each configuration's measurement, a target of its own (a deleted one is remade)
    ]


STAGE_TARGETS.append(throughput_targets)


def throughput_compared_arms():
    """analysis.comparison's control and treatment as the table's arm records (name, label, n, prompts/step)."""
    arms = {arm["name"]: arm for arm in config["arms"]}
    return {
        role: {
            "name": arms[name]["name"],
            "label": arms[name]["label"],
            "n": arms[name]["n"],
            "prompts": arms[name]["prompts_per_step"],
            "enabled": arms[name]["enabled"],
        }
        for role, name in config["analysis"]["comparison"].items()
        if role in ("control", "treatment")
    }


def training_setup_text():
    """The hardware the training runs use, in words (Table 2's rows measured in training)."""
    if training_engine(config) == "embedded":
        return "embedded engine, one CPU machine"
    cluster = config["training"]["cluster"]
    return f"{cluster['nodes']} nodes x {cluster['gpus_per_node']} {cluster['device'].upper()}s"


def throughput_metric_arms():
    """Compared arms whose training metrics Table 2 reads: the enabled ones."""
    return [a["name"] for a in throughput_compared_arms().values() if a["enabled"]]


def throughput_training_metrics(wildcards):
    """Input function of tabulate_throughput: results/train/{arm}/metrics.jsonl of throughput_metric_arms()."""
    return [f"results/train/{arm}/metrics.jsonl" for arm in throughput_metric_arms()]


def throughput_metrics_flags(wildcards, input):
    """--metrics ARM=PATH for each compared arm with metrics (nothing when neither is enabled)."""
    pairs = [
        f"{arm}={path}" for arm, path in zip(throughput_metric_arms(), input.metrics)
    ]
    return ["--metrics", *pairs] if pairs else []


def throughput_temperature():
    """throughput.temperature, or training.rollout_temperature when it is null (the rollouts being timed)."""
    if THROUGHPUT["temperature"] is None:
        return config["training"]["rollout_temperature"]
    return THROUGHPUT["temperature"]
