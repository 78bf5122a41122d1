"""The rerun policy of the SLURM profile (docs/cluster.md#rerun-policy), proved with dry runs.

A private copy of the workflow runs the tiny preset with every output faked in place (`snakemake --touch`, the
missing files created first), so Snakemake holds metadata for each job as after a real run. Each test makes one kind
of edit and asserts which jobs a dry run with the slurm profile's rerun-triggers would run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import pytest
import yaml
from brorl.plan.estimate import STAGES
from brorl.plan.profile import read_profile
from helpers import TINY, copy_workflow, job_counts, output_of, snakemake, write_yaml

ROOT = Path(__file__).resolve().parents[2]
PROFILE = read_profile(ROOT / "profiles" / "slurm")
TRIGGERS = [str(t) for t in PROFILE["rerun-triggers"]]

# Rules that write trained weights: no edit below may rerun them (their outputs are protected() in train.smk;
# `snakemake --touch` does not apply protection, so fakes cannot show it).
TRAINING_RULES: list[str] = ["train_ppo", "export_checkpoint"]

EVALUATION_RULES = {"generate_samples", "score_samples", "summarize_evaluation", "collect_evaluation"}
PROBE_SCORING = {
    "score_probe",
    "analyse_probe",
    "score_in_batch",
    "analyse_in_batch",
}  # the probes' samples are scored by the same verifiers


def evaluation_and_analysis(jobs: dict[str, int]) -> bool:
    """Only evaluation rules (with the probe's scoring) and analysis rules (those of no other stage: tables,
    statistics, figures)."""
    return all(rule in EVALUATION_RULES | PROBE_SCORING or rule not in STAGES for rule in jobs)


# A module of analysis/plotting code -> the rules an edit there must rerun (and nothing else may rerun).
ANALYSIS_RULES = {"collect_units", "test_significance", "make_tables", "plot_figures", "write_summary"}
ANALYSIS_CODE = {
    "workflow/brorl/simulation/figure.py": {"plot_simulation"},
    # split out of claims.py: its table must still rerun with it
    "workflow/brorl/simulation/sensitivity.py": {"tabulate_simulation"},
    # the probes' figures save through it
    "workflow/brorl/analysis/figures.py": ANALYSIS_RULES | {"analyse_probe", "analyse_in_batch"},
    "workflow/brorl/probe/figure.py": {"analyse_probe", "analyse_in_batch"},
    "workflow/brorl/throughput/table.py": {"tabulate_throughput"},
}


@pytest.fixture(scope="module")
def faked(tmp_path_factory):
    """(repo copy, work dir): the tiny preset's DAG with every output faked and its metadata recorded."""
    tmp = tmp_path_factory.mktemp("rerun")
    repo = copy_workflow(tmp / "repo")
    work = tmp / "work"
    work.mkdir()
    shared = os.environ.get("BRORL_DATA_ROOT")
    os.environ["BRORL_DATA_ROOT"] = str(tmp / "no-data")  # offline, like the embedded default's tests
    # the paper's generation jobs (one per checkpoint x benchmark), whose rerun granularity these tests check; the
    # tiny preset's one engine per checkpoint reruns a checkpoint's benchmarks together
    paper_jobs = write_yaml(tmp / "paper_jobs.yaml", {"evaluation": {"one_engine_per_checkpoint": False}})
    # --configfile last: an override file passed to planned() joins its list
    args = ("--directory", work, "--rerun-triggers", *TRIGGERS, "--configfile", TINY, paper_jobs)
    for _ in range(12):  # one DAG level per round: touch what exists, create what is missing
        proc = snakemake("--touch", "--keep-going", "--cores", "1", *args, cwd=repo)
        missing = re.findall(r"Output files not touched because they don't exist: (.*)", output_of(proc))
        if not missing:
            break
        for path in (p.strip() for line in missing for p in line.split(",")):
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text("fake output\n")  # non-empty: some outputs are ensure(non_empty=True)
    assert proc.returncode == 0, output_of(proc)[-4000:]
    yield repo, work, args
    # restore: later test modules (real-data verifier tests) read BRORL_DATA_ROOT too
    if shared is None:
        os.environ.pop("BRORL_DATA_ROOT", None)
    else:
        os.environ["BRORL_DATA_ROOT"] = shared


def planned(faked, *overrides: Path) -> dict[str, int]:
    """Jobs per rule a dry run would run now with these config files merged last (empty: nothing to do)."""
    repo, _, args = faked
    proc = snakemake("-n", *args, *overrides, cwd=repo)
    text = output_of(proc)
    assert proc.returncode == 0, text[-4000:]
    return {} if "Nothing to be done" in text else {k: v for k, v in job_counts(proc).items() if k != "all"}


@contextlib.contextmanager
def edited(path: Path, change):
    """Apply change(text) -> text to a file of the copy, restore it afterwards."""
    before = path.read_text()
    path.write_text(change(before))
    try:
        yield
    finally:
        path.write_text(before)


def write_override(faked, name: str, data: dict) -> Path:
    path = faked[1].parent / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def assert_no_training(jobs: dict[str, int]) -> None:
    assert not set(jobs) & set(TRAINING_RULES), jobs


def test_the_profile_reruns_on_params_and_inputs_only():
    assert set(TRIGGERS) == {"params", "input"}, TRIGGERS


@pytest.mark.workflow
def test_a_faked_run_is_up_to_date(faked):
    assert planned(faked) == {}


@pytest.mark.parametrize(
    "path, change",
    [
        (
            "workflow/rules/evaluate.smk",
            lambda t: t.replace("--engine {params.engine:q}", "--engine  {params.engine:q}"),
        ),
        ("envs/eval.yaml", lambda t: t + "\n# a comment\n"),
        ("workflow/report/eval_summary.rst", lambda t: t + "\n"),
    ],
    ids=["rule-shell-whitespace", "env-comment", "report-caption"],
)
@pytest.mark.workflow
def test_cosmetic_edits_rerun_nothing(faked, path, change):
    with edited(faked[0] / path, change):
        assert planned(faked) == {}


@pytest.mark.workflow
def test_a_changed_input_reruns_only_its_consumers(faked):
    # Snakemake 9.27.1 always compares mtimes, but an input <= 1 MB whose checksum it recorded is exempt while its
    # content is unchanged (whether it recorded one depends on the order the fake outputs were touched in), so the
    # file's content changes too: a changed benchmark file reruns that benchmark's evaluation, nothing else.
    _, work, _ = faked
    data = work / "resources/benchmarks/synthetic_math.jsonl"
    before, content = data.stat(), data.read_bytes()
    data.write_bytes(content + b"changed\n")
    try:
        jobs = planned(faked)
    finally:
        data.write_bytes(content)
        os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns))  # the next tests start up to date
    assert evaluation_and_analysis(jobs) and jobs.get("generate_samples", 0) >= 1, jobs
    assert jobs["generate_samples"] == jobs["score_samples"], jobs  # one benchmark's checkpoints only
    assert_no_training(jobs)


@pytest.mark.workflow
def test_an_evaluation_protocol_edit_reruns_generation_scoring_and_analysis_only(faked):
    jobs = planned(faked, write_override(faked, "temperature", {"evaluation": {"temperature": 0.7}}))
    benchmarks = len(yaml.safe_load(TINY.read_text())["evaluation"]["benchmarks"])
    assert EVALUATION_RULES <= set(jobs) and evaluation_and_analysis(jobs), jobs
    assert jobs["generate_samples"] == jobs["score_samples"] == jobs["summarize_evaluation"] >= benchmarks
    assert_no_training(jobs)


@pytest.mark.workflow
def test_a_protocol_edit_of_some_benchmarks_reruns_only_their_checkpoints(faked):
    # frozen Reasoning Gym sets get more items: their data and evaluation rerun, synthetic_math's do not
    jobs = planned(faked, write_override(faked, "rg", {"evaluation": {"reasoning_gym": {"items_per_task": 3}}}))
    rg = [b for b in yaml.safe_load(TINY.read_text())["evaluation"]["benchmarks"] if b.startswith("rg_")]
    assert jobs.get("generate_reasoning_gym") == len(rg), jobs
    assert evaluation_and_analysis({k: v for k, v in jobs.items() if k != "generate_reasoning_gym"}), jobs
    assert jobs["generate_samples"] % len(rg) == 0 and "prepare_benchmark" not in jobs, jobs
    assert_no_training(jobs)


@pytest.mark.workflow
def test_a_verifier_edit_reruns_scoring_never_generation(faked):
    with edited(faked[0] / "workflow/brorl/scoring/math/grade.py", lambda t: t + "\n# a verifier edit\n"):
        jobs = planned(faked)
    assert "score_samples" in jobs and "generate_samples" not in jobs and evaluation_and_analysis(jobs), jobs
    assert "score_probe" in jobs and "generate_probe" not in jobs, jobs
    assert "score_in_batch" in jobs and "generate_in_batch" not in jobs, jobs
    assert_no_training(jobs)


@pytest.mark.parametrize("module", sorted(ANALYSIS_CODE))
@pytest.mark.workflow
def test_an_analysis_code_edit_reruns_only_analysis(faked, module):
    with edited(faked[0] / module, lambda t: t + "\n# a plotting edit\n"):
        jobs = planned(faked)
    # the rules running that code rerun; downstream of them only analysis (the summary reads tables and figures)
    assert ANALYSIS_CODE[module] <= set(jobs) <= ANALYSIS_CODE[module] | ANALYSIS_RULES, jobs
    assert_no_training(jobs)


@pytest.mark.workflow
def test_operational_training_keys_and_a_started_arms_segment_length_rerun_nothing(faked):
    """Tuning a running arm's job (threads and micro-batch size here, and vLLM's scheduler limits; the cluster's
    watchdog, polling, prompt-file size, checkpoints kept and partition the same way, tests/training/test_layout.py)
    or the segment length of an
    arm that has trained changes no weight: nothing reruns, nothing is renumbered."""
    _, work, _ = faked
    operational = {
        "training": {"embedded": {"threads": 1, "micro_batch_size": 7}},
        "vllm_scheduler": {"max_num_seqs": 256, "max_num_batched_tokens": 8192},  # in the jobs' environment
    }
    assert planned(faked, write_override(faked, "operational", operational)) == {}

    arms = [a["name"] for a in yaml.safe_load(TINY.read_text())["arms"] if a.get("enabled", True)]
    shorter = write_override(faked, "shorter", {"training": {"segment_max_steps": 1}})
    assert "train_ppo" in planned(faked, shorter)  # without a recorded layout the arms would be split anew
    layouts = [work / "results" / "train" / arm / "run" / "layout.json" for arm in arms]
    for path in layouts:  # what each arm's first job records (brorl.training.layout)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"segment_max_steps": 25}))
    try:
        assert planned(faked, shorter) == {}
    finally:
        for path in layouts:
            path.unlink()
