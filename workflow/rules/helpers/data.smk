# Input functions of the data stage (workflow/rules/data.smk).
import json

from brorl.benchmarks.prepare import source_kind
from brorl.pins import hub_sources, unpinned_report
from brorl.training.recipe import enabled_arms

# benchmarks prepared from a file (rule prepare_benchmark); the Reasoning Gym sets are generated (generate_reasoning_gym)
PREPARED_BENCHMARKS = [n for n, b in BENCHMARKS.items() if b.family != "reasoning_gym"]


def data_targets():
    """Every benchmark of evaluation.benchmarks (prepared or frozen) and the training mix (target prepare_data)."""
    return benchmark_files() + [TRAIN_MIX]


def benchmark_source(wildcards):
    """--source of prepare_benchmark: synthetic, local (the registry's file exists here) or hub (source_kind)."""
    return source_kind(BENCHMARKS[wildcards.bench])


# Every hub download of this run that is not pinned to a commit (brorl.pins): listed here as a warning, so `-n` and
# `make plan` show it and stay usable; a run that would execute jobs stops before submitting any
# (onstart in hooks.smk), unless allow_unpinned.
UNPINNED = ""
if not config["allow_unpinned"]:
    UNPINNED = unpinned_report(
        hub_sources(
            config,
            BENCHMARKS,
            lambda name: source_kind(BENCHMARKS[name]) == "hub",
            training=bool(enabled_arms(config)),
        )
    )
if UNPINNED:
    print(f"warning: {UNPINNED}", file=sys.stderr)


def train_data_spec():
    """The train_data config section as JSON (the mix recipe; no secrets)."""
    return json.dumps(config["train_data"], sort_keys=True)
