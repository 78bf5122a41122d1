# Input functions of the data stage (workflow/rules/data.smk).
import json

from brorl.benchmarks.prepare import local_data_root

# benchmarks prepared from a file (rule prepare_benchmark); the Reasoning Gym sets are generated (generate_reasoning_gym)
PREPARED_BENCHMARKS = [n for n, b in BENCHMARKS.items() if b.family != "reasoning_gym"]


def data_targets():
    """Every benchmark of evaluation.benchmarks (prepared or frozen) and the training mix (target prepare_data)."""
    return benchmark_files() + [TRAIN_MIX]


def benchmark_source(wildcards):
    """--source of prepare_benchmark: generated offline (synthetic), else the registry's local file when it exists
    here, else the hub (pinned)."""
    if BENCHMARKS[wildcards.bench].source("synthetic") is not None:
        return "synthetic"
    local = BENCHMARKS[wildcards.bench].source("local")
    if local is not None and (local_data_root() / local.path).is_file():
        return "local"
    return "hub"


def train_data_spec():
    """The train_data config section as JSON (the mix recipe; no secrets)."""
    return json.dumps(config["train_data"], sort_keys=True)
