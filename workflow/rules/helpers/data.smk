# Input functions of the data stage (workflow/rules/data.smk).
import hashlib
import json

from snakemake.exceptions import WorkflowError

from brorl.benchmarks.prepare import local_data_root, source_kind
from brorl.reporting.source_cache import cached
from brorl.reporting.source_digest import file_digest
from brorl.hub.checkpoint_identity import start_identity_problem
from brorl.hub.pin_gate import unpinned_of_run
from brorl.hub.pin_lock import LOCK_NAME, read_lock_data

# benchmarks prepared from a file (rule prepare_benchmark); the Reasoning Gym sets are generated (generate_reasoning_gym)
PREPARED_BENCHMARKS = [n for n, b in BENCHMARKS.items() if b.family != "reasoning_gym"]


def data_targets():
    """Every benchmark of evaluation.benchmarks (prepared or frozen) and the training mix (target prepare_data)."""
    return benchmark_files() + [TRAIN_MIX]


def prepared_data_targets():
    """The prepared data the run uses, with manifests, each a target of its own (a deleted file is remade): every
    evaluated benchmark when something is evaluated, the training mix when an arm trains or Table 2 measures.
    """
    files = benchmark_files() if evaluation_points() else []
    if TRAINED_ARMS or config["throughput"]["enabled"]:
        files.append(TRAIN_MIX)
    return [path for f in files for path in (f, f.replace(".jsonl", ".manifest.json"))]


STAGE_TARGETS.append(prepared_data_targets)


def benchmark_source(wildcards):
    """--source of prepare_benchmark: synthetic, local (the registry's file exists here) or hub (source_kind)."""
    return source_kind(BENCHMARKS[wildcards.bench])


# What a benchmark's records are made from, as params (not inputs: Snakemake reruns on an input newer than its
# output, so a copied or touched data file would rerun GPU generation): its parsed registry entry (seed, prompt
# template, hub revision, fields; a comment changes nothing) and its local data file's sha256. A change reruns the
# benchmark's preparation and everything downstream of it (docs/cluster.md#rerun-policy).
def registry_entry(name):
    """The digest of benchmark ``name``'s parsed registry entry (workflow/benchmarks/<file>.yaml)."""
    spec = BENCHMARKS[name]
    if spec.path is None:
        return f"{name}: no registry file"
    try:
        return f"{spec.path.name} {file_digest(spec.path)}"
    except (OSError, ValueError) as err:
        raise WorkflowError(
            f"benchmark {name}: its registry entry {spec.path} cannot be read: {err}"
        ) from None


def benchmark_data(wildcards):
    """The sha256 of the local data file prepare_benchmark reads (source local), else what it is prepared from."""
    spec = BENCHMARKS[wildcards.bench]
    kind = source_kind(spec)
    if kind != "local":
        return kind
    path = local_data_root() / spec.source("local").path
    try:
        digest = cached(
            path, "sha256", lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
        )
    except OSError as err:
        raise WorkflowError(
            f"benchmark {wildcards.bench}: its local data file {path} cannot be read: {err}"
        ) from None
    return f"{path.name} sha256:{digest}"


# The pin gate (brorl.hub.pins). Every hub source of this config that is not pinned to a commit is listed here as a
# warning, so `-n` and `make plan` show it and stay usable; a run stops before submitting anything when one of its
# jobs would download such a source (pin_gate_problem, called by onstart in hooks.smk), unless allow_unpinned.
UNPINNED = unpinned_of_run(config, BENCHMARKS)
if UNPINNED:
    driver_warning(UNPINNED)
# and whether the start pin is the model the paper starts from, where `make pin` recorded both weights (the lock is
# read once here: its identity records serve the analysis spec too, helpers/analysis.smk)
PIN_LOCK = read_lock_data(Path(workflow.basedir) / LOCK_NAME)
START_IDENTITY = start_identity_problem(config, PIN_LOCK)
if START_IDENTITY:
    driver_warning(START_IDENTITY)


def pin_gate_problem(workflow):
    """The unpinned hub sources that jobs of this run would download (empty: none, or allow_unpinned), and a start
    pin whose recorded weights are not the paper's v2 start model (brorl.hub.checkpoint_identity) when jobs use it.
    """
    jobs = list(workflow.dag.needrun_jobs())
    rules = {job.rule.name for job in jobs}
    prepared = {
        job.wildcards.get("bench")
        for job in jobs
        if job.rule.name == "prepare_benchmark"
    }
    unpinned = unpinned_of_run(
        config,
        BENCHMARKS,
        benchmarks=prepared,
        training="prepare_train_data" in rules,
        base_model="download_base_model" in rules,
    )
    uses_start = {"download_base_model", "extend_context", "train_ppo"} & rules
    return "\n".join(filter(None, [unpinned, START_IDENTITY if uses_start else ""]))


def train_data_spec():
    """The train_data config section as JSON (the mix recipe; no secrets)."""
    return json.dumps(config["train_data"], sort_keys=True)
