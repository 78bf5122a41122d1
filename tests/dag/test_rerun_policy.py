"""The rerun policy of every run (docs/cluster.md#rerun-policy), proved with dry runs.

A private copy of the workflow runs the tiny preset with every output faked in place (`snakemake --touch`, the
missing files created first), so Snakemake holds metadata for each job as after a real run. Each test makes edits
and asserts which jobs a dry run would run, and that each rerun job's reason names the edited file. The triggers are
those of profiles/default, which Snakemake applies to every run of the workflow (the demo, CI and the cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import pytest
import yaml
from brorl.ops.plan.estimate import STAGES
from brorl.ops.plan.profile import read_profile
from brorl.ops.reruns.rerun_policy import EXEMPT_RULES
from brorl.reporting.code_record import training_code
from helpers import TINY, copy_workflow, job_counts, output_of, snakemake, write_yaml

ROOT = Path(__file__).resolve().parents[2]

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
    args = ("--directory", work, "--configfile", TINY, paper_jobs)
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


def dry_run(faked, *overrides: Path, profile: str | None = None) -> tuple[dict[str, int], str]:
    """(jobs per rule a dry run would run now with these config files merged last, its output); `profile`: a
    profile of the copy to run under as well (profiles/default always applies)."""
    repo, _, args = faked
    extra = ("--profile", repo / "profiles" / profile) if profile else ()
    proc = snakemake("-n", *extra, *args, *overrides, cwd=repo)
    text = output_of(proc)
    assert proc.returncode == 0, text[-4000:]
    jobs = {} if "Nothing to be done" in text else {k: v for k, v in job_counts(proc).items() if k != "all"}
    return jobs, text


def planned(faked, *overrides: Path, profile: str | None = None) -> dict[str, int]:
    """Jobs per rule a dry run would run now (empty: nothing to do)."""
    return dry_run(faked, *overrides, profile=profile)[0]


def rerun_for(text: str, path: str) -> set[str]:
    """The rules of a dry run whose reason names the file ``path`` (their params hold its digest)."""
    rules, rule = set(), None
    for line in text.splitlines():  # a grouped job's block is indented
        if re.match(r"\s*(?:local)?rule (\w+):$", line):
            rule = re.match(r"\s*(?:local)?rule (\w+):$", line)[1]
        elif rule and line.strip().startswith("reason: Params have changed") and f"'{path} " in line:
            rules.add(rule)
    return rules


def write_override(faked, name: str, data: dict) -> Path:
    path = faked[1].parent / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def assert_no_training(jobs: dict[str, int]) -> None:
    assert not set(jobs) & set(TRAINING_RULES), jobs


def test_every_profile_takes_the_policy_of_the_default_profile():
    assert set(read_profile(ROOT / "profiles" / "default")["rerun-triggers"]) == {"params", "input"}
    for name in ("local", "slurm", "ci"):  # none sets its own: the demo, CI and the cluster follow one policy
        assert "rerun-triggers" not in read_profile(ROOT / "profiles" / name), name


@pytest.mark.workflow
def test_a_faked_run_is_up_to_date(faked):
    assert planned(faked) == {}


# Edits that change no behaviour: each file -> the edit (comments, docstrings, whitespace, YAML comments)
COSMETIC = {
    "workflow/rules/evaluate.smk": lambda t: t.replace("--engine {params.engine:q}", "--engine  {params.engine:q}"),
    "workflow/rules/train.smk": lambda t: t.replace("--segment {wildcards.segment}", "--segment   {wildcards.segment}"),
    "envs/eval.yaml": lambda t: t + "\n# a comment\n",
    "workflow/report/eval_summary.rst": lambda t: t + "\n",
    "workflow/brorl/scoring/math/grade.py": lambda t: t + "\n# a comment in a verifier\n",
    "workflow/brorl/analysis/significance.py": lambda t: t.replace('"""', '"""A reworded docstring. ', 1),
    "workflow/brorl/evaluation/summary.py": lambda t: t.replace(
        "def error_reason(error: str) -> str:", "def error_reason(\n    error: str,\n) -> str:"
    ),  # a formatter's line breaks and trailing comma
    "workflow/benchmarks/synthetic_sums.yaml": lambda t: t + "\n# a comment in the registry\n",
    "workflow/brorl/analysis/paper_results.yaml": lambda t: t + "\n# a comment in package data\n",
}


@contextlib.contextmanager
def edits(repo: Path, changes: dict):
    """Apply each change(text) -> text to its file of the copy, restore them afterwards."""
    before = {path: (repo / path).read_text() for path in changes}
    try:
        for path, change in changes.items():
            (repo / path).write_text(change(before[path]))
        yield
    finally:
        for path, text in before.items():
            (repo / path).write_text(text)


@pytest.mark.parametrize("profile", [None, "local"], ids=["default", "local"])
@pytest.mark.workflow
def test_cosmetic_edits_rerun_nothing(faked, profile):
    with edits(faked[0], COSMETIC):
        assert planned(faked, profile=profile) == {}


# Behaviour edits of code and package data -> rules that run it: each must rerun, and the first rules to rerun name
# the file in their reason (Snakemake gives a job downstream of a rerun job that reason instead)
BEHAVIOUR = {
    "workflow/brorl/evaluation/passk.py": {"summarize_evaluation"},
    "workflow/brorl/stats/tests.py": {"test_significance", "analyse_probe"},
    "workflow/brorl/simulation/engine.py": {"simulate_token_level", "simulate_sensitivity"},
    "workflow/brorl/probe/select.py": {"select_probes"},
    "workflow/brorl/training/metrics.py": {"finish_training", "test_significance", "tabulate_throughput"},
    "workflow/brorl/throughput/bench.py": {"bench_throughput"},
    "workflow/brorl/analysis/paper_results.yaml": {"make_tables", "write_summary"},
}


def behaviour_edit(path: str):
    if path.endswith(".yaml"):
        return lambda t: t + "\nrerun_marker: 1\n"
    return lambda t: t + "\n_RERUN_MARKER = 1\n"


@pytest.mark.workflow
def test_a_behaviour_edit_reruns_the_rules_that_run_it_and_the_reason_names_the_file(faked):
    with edits(faked[0], {path: behaviour_edit(path) for path in BEHAVIOUR}):
        jobs, text = dry_run(faked)
    for path, rules in BEHAVIOUR.items():
        named = rerun_for(text, path.removeprefix("workflow/"))
        assert rules <= set(jobs) and named, (path, named, jobs)
        assert not named & set(EXEMPT_RULES), (path, named)
    assert_no_training(jobs)
    # a benchmark script no rule runs reruns nothing
    with edits(faked[0], {"workflow/brorl/ops/speed/scoring_code.py": behaviour_edit(".py")}):
        assert planned(faked) == {}


@pytest.mark.workflow
def test_a_registry_edit_reruns_its_benchmark_and_everything_after_it_but_not_training(faked):
    change = {"workflow/benchmarks/synthetic_sums.yaml": lambda t: re.sub(r"seed: \d+", "seed: 4242", t)}
    with edits(faked[0], change):
        jobs, text = dry_run(faked)
    assert rerun_for(text, "synthetic_sums.yaml") == {"prepare_benchmark"}, text[-3000:]
    assert jobs["prepare_benchmark"] == 1 and jobs.get("generate_samples", 0) >= 1, jobs
    assert_no_training(jobs)


@pytest.mark.workflow
def test_a_registry_entry_no_config_uses_reruns_nothing(faked):
    registry = faked[0] / "workflow" / "benchmarks"
    unused = registry / "unused_sums.yaml"
    unused.write_text(
        (registry / "synthetic_sums.yaml").read_text().replace("name: synthetic_sums", "name: unused_sums")
    )
    try:
        assert planned(faked) == {}
    finally:
        unused.unlink()


@pytest.mark.workflow
def test_a_damaged_checkpoint_is_named_before_any_job_reads_it(faked):
    _, work, _ = faked
    arm = next(a["name"] for a in yaml.safe_load(TINY.read_text())["arms"] if a.get("enabled", True))
    step = work / "results" / "train" / arm / "step16"
    kept, stat = step.read_bytes(), step.stat()  # the faked run's checkpoint is a file: a real one is a folder
    step.unlink()
    step.mkdir()
    (step / "brorl_manifest.json").write_text(json.dumps({"files": {"model.safetensors": {"bytes": 10}}}))
    try:
        _, text = dry_run(faked)
    finally:
        for path in step.iterdir():
            path.unlink()
        step.rmdir()
        step.write_bytes(kept)
        os.utime(step, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert f"warning: trained checkpoint(s) damaged since they were exported: results/train/{arm}/step16: " in text
    assert "model.safetensors is listed in brorl_manifest.json but missing" in text
    assert f"rm -rf results/train/{arm}/step16" in text


@pytest.mark.workflow
def test_an_edit_of_code_training_starts_from_reruns_no_training(faked):
    # the tiny benchmarks' generator: also the warm start's and the training mix's (exempt: they feed training)
    with edits(faked[0], {"workflow/brorl/benchmarks/synthetic.py": behaviour_edit(".py")}):
        jobs, text = dry_run(faked)
    assert rerun_for(text, "brorl/benchmarks/synthetic.py") == {"prepare_benchmark"}, jobs
    assert not set(jobs) & {"warm_start_tiny_model", "prepare_train_data", "build_tiny_model", *TRAINING_RULES}


@pytest.mark.workflow
def test_a_new_flag_in_a_rules_command_reruns_that_rule(faked):
    flag = {"workflow/rules/evaluate.smk": lambda t: t.replace("--out-md {output.md:q}", "--out-md {output.md:q} -v")}
    with edits(faked[0], flag):
        jobs, text = dry_run(faked, profile="local")
    assert rerun_for(text, "shell") == {"collect_evaluation"}, jobs


@pytest.mark.workflow
def test_an_exempt_rules_code_edit_reruns_nothing_and_names_what_older_code_made(faked):
    _, work, _ = faked
    arm = next(a["name"] for a in yaml.safe_load(TINY.read_text())["arms"] if a.get("enabled", True))
    manifest = work / "results" / "train" / arm / "segment0.json"
    kept, stat = manifest.read_bytes(), manifest.stat()
    manifest.write_text(json.dumps({"code": training_code()}))  # as a segment trained by the current code writes it
    os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    exempt = {  # training, and GPU generation (whose command's first line names its code: kept in the metadata)
        "workflow/brorl/training/embedded/advantages.py": behaviour_edit(".py"),
        "workflow/brorl/generation/generate.py": behaviour_edit(".py"),
    }
    try:
        with edits(faked[0], exempt):
            jobs, text = dry_run(faked)
    finally:
        manifest.write_bytes(kept)
        os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    # SUMMARY.md is rewritten to say so (its param lists what is stale); nothing trains or generates again
    assert set(jobs) == {"write_summary"}, jobs
    assert f"note: arm {arm} was trained by code that has changed since: brorl/training/embedded/advantages.py" in text
    assert re.search(
        r"note: \d+ output\(s\) of generate_samples were made by code that has changed since: "
        r"brorl/generation/generate.py; a code edit never reruns generate_samples",
        text,
    ), text[-3000:]


@pytest.mark.parametrize(
    "path, change, words",
    [
        (
            "workflow/rules/evaluate.smk",
            lambda t: (
                t
                + '\n\nrule echo_hello:\n    output:\n        "hello.txt",\n    shell:\n        "echo hi > {output}"\n'
            ),
            "rule echo_hello: its command runs no `python -m brorl.<stage>`",
        ),
        (
            "workflow/brorl/ops/reruns/rerun_policy.py",
            lambda t: t.replace("EXEMPT_RULES = {", 'EXEMPT_RULES = {\n    "train_pp0": "a typo",'),
            "exempts what does not exist: rule train_pp0",
        ),
    ],
    ids=["no-package-command", "unknown-exemption"],
)
@pytest.mark.workflow
def test_a_rule_the_derivation_cannot_follow_stops_the_dag_naming_it(faked, path, change, words):
    repo, _, args = faked
    with edits(repo, {path: change}):
        proc = snakemake("-n", *args, cwd=repo)
    assert proc.returncode != 0 and words in output_of(proc), output_of(proc)[-3000:]


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
    with edits(faked[0], {"workflow/brorl/scoring/math/grade.py": behaviour_edit(".py")}):
        jobs, text = dry_run(faked)
    assert rerun_for(text, "brorl/scoring/math/grade.py") == {"score_samples", "score_probe", "score_in_batch"}
    assert evaluation_and_analysis(jobs) and "generate_samples" not in jobs, jobs
    assert "generate_probe" not in jobs and "generate_in_batch" not in jobs, jobs
    assert_no_training(jobs)


@pytest.mark.workflow
def test_operational_training_keys_and_a_started_arms_segment_length_rerun_nothing(faked):
    """Tuning a running arm's job (threads and micro-batch size here; the cluster's watchdog, polling, prompt-file
    size, checkpoints kept and partition the same way, tests/training/test_layout.py) or the segment length of an
    arm that has trained changes no weight: nothing reruns, nothing is renumbered."""
    _, work, _ = faked
    operational = {"training": {"embedded": {"threads": 1, "micro_batch_size": 7}}}
    assert planned(faked, write_override(faked, "operational", operational)) == {}
    # vLLM's scheduler limits reach the jobs in their environment too, but Table 2 measures samples/s under them:
    # its benchmark reruns (then the table and the summary that quote it), nothing else
    scheduler = {"vllm_scheduler": {"max_num_seqs": 256, "max_num_batched_tokens": 8192}}
    jobs = planned(faked, write_override(faked, "scheduler", scheduler))
    assert set(jobs) == {"bench_throughput", "tabulate_throughput", "write_summary"}, jobs

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
