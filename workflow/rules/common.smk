# Path grammar helpers and input functions shared by the stage files. Logic lives in the brorl package.
import json
import re

from brorl.benchmarks.prepare import local_data_root
from brorl.benchmarks.registry import load_registry

SIM = config["simulation"]
SENSITIVITY = SIM["sensitivity"]
EVAL = config["evaluation"]
BENCHMARKS = load_registry()
PREPARED_BENCHMARKS = [n for n, b in BENCHMARKS.items() if b.family != "reasoning_gym"]
RG_CATEGORIES = [b.category for b in BENCHMARKS.values() if b.family == "reasoning_gym"]


wildcard_constraints:
    n=r"\d+",
    seed=r"\d+",
    variant="|".join(re.escape(v["name"]) for v in SENSITIVITY["variants"]),
    bench="|".join(map(re.escape, PREPARED_BENCHMARKS)),
    category="|".join(map(re.escape, RG_CATEGORIES)),
    mix=re.escape(config["train_data"]["name"]),


# ----------------------------------------------------------------------------------------------------- targets
def get_final_outputs():
    """Targets of the default target (all): each enabled stage adds its own (later stages append here)."""
    targets = []
    if SIM["enabled"]:
        targets += simulation_targets()
    return targets


def simulation_targets():
    """Figure 3, the claims tables and the theory checks."""
    targets = [
        "results/simulation/theory_checks.json",
        "results/figures/figure3.png",
        "results/figures/figure3.pdf",
        "results/tables/simulation_claims.md",
        "results/tables/simulation_claims.csv",
    ]
    if SENSITIVITY["enabled"]:
        targets += [
            "results/tables/optimizer_sensitivity.md",
            "results/tables/optimizer_sensitivity.csv",
        ]
    return targets


# -------------------------------------------------------------------------------------------------- simulation
def simulation_main_runs():
    """One parquet per (N, seed) of simulation.n_values x simulation.seeds."""
    return expand(
        "results/simulation/N{n}_seed{seed}.parquet",
        n=SIM["n_values"],
        seed=SIM["seeds"],
    )


def simulation_sensitivity_runs():
    """One parquet per (variant, N, seed) of the sensitivity study; none when it is disabled."""
    if not SENSITIVITY["enabled"]:
        return []
    return expand(
        "results/simulation/sensitivity/{variant}/N{n}_seed{seed}.parquet",
        variant=[v["name"] for v in SENSITIVITY["variants"]],
        n=SENSITIVITY["n_values"],
        seed=SENSITIVITY["seeds"],
    )


def variant_optimizer(wildcards):
    """simulation.optimizer with the variant's non-null keys replacing it."""
    variant = next(v for v in SENSITIVITY["variants"] if v["name"] == wildcards.variant)
    overrides = {k: v for k, v in variant["optimizer"].items() if v is not None}
    return {**SIM["optimizer"], **overrides}


def variant_optimizer_key(key):
    """Input function for one optimizer key of a sensitivity variant (params of simulate_sensitivity)."""

    def get(wildcards):
        return variant_optimizer(wildcards)[key]

    return get


def optimizer_sensitivity_tables():
    """Named outputs of tabulate_simulation for the sensitivity table; none when the study is disabled."""
    if not SENSITIVITY["enabled"]:
        return {}
    return {
        "sensitivity_md": report(
            "results/tables/optimizer_sensitivity.md",
            caption="../report/optimizer_sensitivity.rst",
            category="Simulation",
            labels={"table": "optimizer sensitivity", "format": "markdown"},
        ),
        "sensitivity_csv": report(
            "results/tables/optimizer_sensitivity.csv",
            caption="../report/optimizer_sensitivity.rst",
            category="Simulation",
            labels={"table": "optimizer sensitivity", "format": "csv"},
        ),
    }


def sensitivity_table_flags(wildcards, output):
    """The claims CLI's sensitivity-table flags, empty when the study is disabled."""
    if not SENSITIVITY["enabled"]:
        return []
    return [
        "--sensitivity-md",
        output.sensitivity_md,
        "--sensitivity-csv",
        output.sensitivity_csv,
    ]


# -------------------------------------------------------------------------------------------------------- data
def data_targets():
    """Every benchmark of evaluation.benchmarks (prepared or frozen) and the training mix (target prepare_data)."""
    return [f"resources/benchmarks/{name}.jsonl" for name in EVAL["benchmarks"]] + [
        f"resources/train/{config['train_data']['name']}.jsonl"
    ]


def benchmark_source(wildcards):
    """--source of prepare_benchmark: the registry's local file when it exists here, else the hub (pinned)."""
    local = BENCHMARKS[wildcards.bench].source("local")
    if local is not None and (local_data_root() / local.path).is_file():
        return "local"
    return "hub"


def train_data_spec():
    """The train_data config section as JSON (the mix recipe; no secrets)."""
    return json.dumps(config["train_data"], sort_keys=True)
