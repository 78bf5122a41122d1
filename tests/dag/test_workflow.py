"""The Snakemake workflow: DAG of the paper config and the tiny preset, bad configs stop it, lint and format are
clean, and a small simulation runs for real through Snakemake, end to end, and is then up to date."""

from __future__ import annotations

import os
import re
import subprocess

import pandas as pd
import pytest
from brorl.config import load_yaml_config
from helpers import BIN, CONFIG, ROOT, TINY, job_counts, output_of, snakemake, write_yaml
from import_oracle import FOLDER_ENV, audited, outside_closure

# A small simulation (seconds per job) that still exercises every simulation rule.
SMALL_SIMULATION = {
    "simulation": {
        "vocab": 2000,
        "correct": 200,
        "steps": 50,
        "n_values": [4, 64],
        "seeds": [0],
        "sensitivity": {
            "n_values": [4, 64],
            "seeds": [0],
            # the config's sgd variant: an incorrect anchor and no decay (SGD couples weight decay: 0.01 at this lr diverges)
            "variants": [
                {
                    "name": "sgd",
                    "anchor_class": "incorrect",
                    "optimizer": {"name": "sgd", "lr": 1000.0, "weight_decay": 0.0},
                }
            ],
        },
        "theory": {"mc_trials": 50, "n_values": [4, 64], "theorem_draws": 5},
        "n_grid": {"n_values": [4, 16, 64], "seeds": [0]},
    }
}


def expected_simulation_counts(cfg: dict) -> dict[str, int]:
    sim, sens, grid = cfg["simulation"], cfg["simulation"]["sensitivity"], cfg["simulation"]["n_grid"]
    runs = {(n, s) for n in sim["n_values"] for s in sim["seeds"]}
    if grid["enabled"]:  # the grid's runs are files of the same rule; shared (N, seed) are one job
        runs |= {(n, s) for n in grid["n_values"] for s in grid["seeds"]}
    assert runs  # every (N, seed) in one job: torch's import was most of a separate run's time
    counts = {
        "simulate_token_level": 1,
        "check_theory": 1,
        "plot_simulation": 1,
        "tabulate_simulation": 1,
        "all": 1,
    }
    if grid["enabled"]:
        counts["tabulate_n_grid"] = 1
    if sens["enabled"]:
        counts["simulate_sensitivity"] = len(sens["variants"])  # one job per variant, all its (N, seed) in it
    return counts


# ---------------------------------------------------------------------------------------------------- dry runs
@pytest.mark.workflow
def test_dry_run_of_the_paper_config_lists_every_simulation_job(tmp_path):
    cfg = load_yaml_config(CONFIG)
    proc = snakemake("-n", "--directory", tmp_path)  # config.yaml is found beside the Snakefile
    assert proc.returncode == 0, output_of(proc)
    # the simulation's jobs (the other stages' jobs: tests/evaluation/test_evaluation.py, tests/training/test_recipe.py)
    counts = {k: v for k, v in job_counts(proc).items() if k in expected_simulation_counts(cfg)}
    assert counts == expected_simulation_counts(cfg)
    assert counts["simulate_token_level"] == 1 and counts["simulate_sensitivity"] == 10  # 1 job of 15 + 8 runs; 10 x 20
    (eps,) = re.findall(r"python -m brorl.simulation run .*?--label adam_eps1e-6 .*", text := output_of(proc))
    assert len(re.search(r"--out (.*?)>", eps)[1].split()) == 4 * 5  # 4 N x 5 seeds per variant
    (main,) = re.findall(r"python -m brorl.simulation run .*?--label main .*", text)
    assert len(re.search(r"--out (.*?)>", main)[1].split()) == 5 * 3 + 8  # 5 N x 3 seeds + the grid's other 8 N
    for n in cfg["simulation"]["n_values"]:
        for seed in cfg["simulation"]["seeds"]:
            assert f"results/simulation/N{n}_seed{seed}.parquet" in text
    for variant in cfg["simulation"]["sensitivity"]["variants"]:
        assert f"results/simulation/sensitivity/{variant['name']}/N512_seed0.parquet" in text
    for target in ("figure3.png", "figure3.pdf", "simulation_claims.md", "optimizer_sensitivity.csv"):
        assert target in text


@pytest.mark.workflow
def test_the_earlier_composite_recipe_preset_dry_runs_the_same_jobs(tmp_path):
    """workflow/presets/recipe_prorl_v1.yaml changes recipe values only: the same jobs as config.yaml, with its
    values in the training commands (each train_ppo job is told the arm's recipe through --config JSON)."""
    preset = ROOT / "workflow" / "presets" / "recipe_prorl_v1.yaml"
    paper = snakemake("-n", "--directory", tmp_path / "paper")
    proc = snakemake("-n", "-p", "--directory", tmp_path / "v1", "--configfile", preset)
    assert proc.returncode == 0 and paper.returncode == 0, output_of(proc)
    assert job_counts(proc) == job_counts(paper)
    text = output_of(proc)
    assert '"lr0": 2e-06' in text and '"rollout_temperature": 1.2' in text and '"truncated": "verifier"' in text


@pytest.mark.workflow
def test_the_algorithm_generality_arms_dry_run_at_paper_scale(tmp_path):
    """workflow/presets/algorithms.yaml: every pair's arms train with their estimator (OpenRLHF's flag in the
    command) and one compare_algorithms job writes the table; the switch without the preset's arms is refused,
    naming the preset."""
    switch = write_yaml(tmp_path / "switch.yaml", {"analysis": {"algorithms": {"enabled": True}}})
    proc = snakemake("-n", "--directory", tmp_path / "switch", "--configfile", switch)
    assert proc.returncode != 0 and "workflow/presets/algorithms.yaml adds the pairs' arms" in output_of(proc)
    paper = job_counts(snakemake("-n", "--directory", tmp_path / "paper"))
    preset = ROOT / "workflow" / "presets" / "algorithms.yaml"
    proc = snakemake("-n", "-p", "--directory", tmp_path / "on", "--configfile", preset)
    assert proc.returncode == 0, output_of(proc)
    counts, text = job_counts(proc), output_of(proc)
    assert counts["train_ppo"] == 4 * paper["train_ppo"] and counts["compare_algorithms"] == 1
    assert "compare_algorithms" not in paper
    for arm in ("grpo_n16", "grpo_n512", "rloo_n16", "rloo_n512", "drgrpo_n16", "drgrpo_n512"):
        assert f"results/train/{arm}/step" in text
    assert "results/tables/algorithms.md" in text


@pytest.mark.workflow
def test_dry_run_from_the_repo_root_uses_config_yaml():
    proc = snakemake("-n", "--forceall")  # every job, whatever outputs an earlier run left in the checkout
    assert proc.returncode == 0, output_of(proc)
    expected = expected_simulation_counts(load_yaml_config(CONFIG))
    assert {k: v for k, v in job_counts(proc).items() if k in expected} == expected


@pytest.mark.workflow
def test_dry_run_with_the_local_profile_uses_the_tiny_preset(tmp_path):
    # --directory: outputs left in the checkout by an earlier `make demo` must not shrink the dry run
    proc = snakemake("-n", "--profile", "profiles/local", "--directory", tmp_path)
    text = output_of(proc)
    assert proc.returncode == 0, text
    assert "profiles/local" in text and "profiles/default" in text  # the workflow profile applies too
    assert "config.yaml is extended by additional config" in text  # tiny.yaml merged over config.yaml
    assert re.search(r"Config file\(s\): .*workflow/presets/tiny\.yaml", text), text
    tiny = load_yaml_config(CONFIG, TINY)
    # the embedded engine also evaluates the start checkpoint (tests/evaluation/test_evaluation.py checks those jobs)
    counts = {k: v for k, v in job_counts(proc).items() if k in expected_simulation_counts(tiny)}
    assert counts == expected_simulation_counts(tiny)
    assert "collect_evaluation" in job_counts(proc)


@pytest.mark.workflow
def test_sensitivity_disabled_drops_its_jobs_and_tables(tmp_path):
    override = write_yaml(tmp_path / "override.yaml", {"simulation": {"sensitivity": {"enabled": False}}})
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", override)
    text = output_of(proc)
    assert proc.returncode == 0, text
    assert "simulate_sensitivity" not in job_counts(proc)
    assert "optimizer_sensitivity" not in text
    claims_cmd = text.split("python -m brorl.simulation claims", 1)[1].split(">", 1)[0]
    assert re.search(r"--sensitivity-runs\s+--near-zero-rel-tol", claims_cmd), claims_cmd  # empty, not ''


@pytest.mark.workflow
def test_simulation_disabled_leaves_nothing_to_run(tmp_path):
    override = write_yaml(tmp_path / "override.yaml", {"simulation": {"enabled": False}})
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", override)
    assert proc.returncode == 0, output_of(proc)
    assert "simulate_token_level" not in output_of(proc)


# ------------------------------------------------------------------------------------------------- bad configs
@pytest.mark.parametrize(
    "override, key",
    [
        ({"simulation": {"n_values": [0]}}, "simulation.n_values[0]"),
        ({"simulation": {"sensitivity": {"colour": "blue"}}}, "simulation.sensitivity.colour"),
        ({"simulation": {"correct": 200000}}, "simulation.correct"),
    ],
)
@pytest.mark.workflow
def test_a_bad_config_stops_snakemake_before_any_job_naming_the_key(tmp_path, override, key):
    bad = write_yaml(tmp_path / "bad.yaml", override)
    proc = snakemake("--cores", "1", "--directory", tmp_path, "--configfile", bad)  # a real run, not -n
    text = output_of(proc)
    assert proc.returncode != 0
    assert "invalid config" in text and f"config key '{key}'" in text, text
    assert not (tmp_path / "results").exists()  # no job started
    assert "Building DAG" not in text and "rule simulate" not in text


@pytest.mark.workflow
def test_the_local_profile_refuses_a_configfile_that_replaced_its_preset(tmp_path):
    over = write_yaml(tmp_path / "over.yaml", {"evaluation": {"seed": 0}})
    proc = snakemake("-n", "--profile", "profiles/local", "--directory", tmp_path, "--configfile", over)
    text = output_of(proc)
    assert proc.returncode != 0 and "Job stats" not in text, text[-3000:]
    assert "replaced it" in text and f"--configfile workflow/presets/tiny.yaml {over}" in text, text[-3000:]
    fixed = snakemake("-n", "--profile", "profiles/local", "--directory", tmp_path, "--configfile", TINY, over)
    assert fixed.returncode == 0 and "collect_evaluation" in job_counts(fixed), output_of(fixed)[-3000:]


@pytest.mark.parametrize(
    "text, words",
    [
        ("evaluation: {seed: 0\n  bad: [\n", r"over\.yaml, line 2, column \d+: not valid YAML"),
        ("", r"over\.yaml is empty: give it keys at top level"),
        (None, r"config file .*nonexistent\.yaml does not exist \(workflow/presets/ holds: .*tiny\.yaml"),
    ],
    ids=["yaml-syntax", "empty", "missing"],
)
@pytest.mark.workflow
def test_a_config_file_snakemake_cannot_load_is_named_with_its_line_and_fix(tmp_path, text, words):
    # Snakemake reads --configfile files before the Snakefile; the environment's hook words its errors
    # (workflow/scripts/driver_site/brorl_snakemake_messages.py, installed by make setup)
    path = tmp_path / ("over.yaml" if text is not None else "nonexistent.yaml")
    if text is not None:
        path.write_text(text)
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", path)
    out = output_of(proc)
    assert proc.returncode != 0 and re.search(words, out), out[-2000:]
    assert "Traceback" not in out, out[-2000:]


# --------------------------------------------------------------------------------------------- lint and format
def test_snakefmt_check_is_clean():
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    proc = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "."], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, output_of(proc)


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]], ids=["format", "lint"])
def test_ruff_is_clean(command):
    """The Python code is formatted and linted by ruff with the settings in pyproject.toml (`make lint`)."""
    proc = subprocess.run([str(BIN / "ruff"), *command, "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, output_of(proc)


@pytest.mark.parametrize("profile", [[], ["--profile", "profiles/local"]], ids=["paper", "tiny"])
@pytest.mark.workflow
def test_snakemake_lint_is_clean(profile):
    proc = snakemake("--lint", *profile)
    text = output_of(proc)
    assert proc.returncode == 0, text
    assert "Congratulations, your workflow is in a good condition!" in text, text


# ----------------------------------------------------------------------------------------------- real run
@pytest.mark.workflow
def test_small_simulation_runs_end_to_end_and_is_then_up_to_date(tmp_path):
    override = write_yaml(tmp_path / "small.yaml", SMALL_SIMULATION)
    # the simulation stage's final outputs only: the paper config's other stages need the hub and GPUs
    targets = [
        "results/simulation/theory_checks.json",
        "results/figures/figure3.pdf",
        "results/tables/simulation_claims.md",
        "results/tables/optimizer_sensitivity.md",
        "results/tables/simulation_n_grid.md",
        "results/figures/simulation_n_grid.png",
    ]
    args = (*targets, "--cores", "2", "--directory", tmp_path, "--configfile", override)
    audit = tmp_path / "audit"  # what each job imported and opened: the rerun derivation's oracle
    proc = snakemake(*args, env={FOLDER_ENV: str(audit)})
    assert proc.returncode == 0, output_of(proc)[-6000:]
    assert outside_closure(audit) == {}  # every module a job ran is in its rule's rerun trigger
    assert {"brorl.simulation run", "brorl.simulation claims", "brorl.simulation figure"} <= set(audited(audit))

    results = tmp_path / "results"
    runs = [results / f"simulation/N{n}_seed0.parquet" for n in (4, 64)]
    sensitivity = [results / f"simulation/sensitivity/sgd/N{n}_seed0.parquet" for n in (4, 64)]
    tables = [
        results / f"tables/{name}.{ext}"
        for name in ("simulation_claims", "optimizer_sensitivity", "simulation_n_grid")
        for ext in ("md", "csv")
    ]
    figures = [results / f"figures/{name}.{ext}" for name in ("figure3", "simulation_n_grid") for ext in ("png", "pdf")]
    for path in [*runs, *sensitivity, *tables, *figures, results / "simulation/theory_checks.json"]:
        assert path.is_file() and path.stat().st_size > 0, path
    for path in runs + sensitivity:
        df = pd.read_parquet(path)
        assert {"step", "q_pos", "pct_improved", "worst_drop"} <= set(df.columns)
        assert len(df) >= 50  # one row per step (plus the initial state)
    grid = pd.read_csv(results / "tables/simulation_n_grid.csv")
    assert grid["N"].tolist() == [4, 16, 64] and grid["gain per doubling"].notna().sum() == 2
    for rule in ("simulate_token_level", "check_theory", "plot_simulation", "tabulate_simulation", "tabulate_n_grid"):
        assert any((results / "logs" / rule).rglob("*.log")), rule
    logs = results / "logs"
    for log in (logs / "plot_simulation/figure3.log", logs / "tabulate_n_grid/n_grid.log"):
        drawn = re.search(r": (\d+) data points ->", log.read_text())  # every figure says how much data it drew
        assert drawn and int(drawn[1]) > 0, log.read_text()

    again = snakemake(*args)
    assert again.returncode == 0, output_of(again)
    assert "Nothing to be done" in output_of(again)

    report = snakemake(*args, "--report", tmp_path / "report.html")  # captions render with this config
    assert report.returncode == 0, output_of(report)
    assert (tmp_path / "report.html").stat().st_size > 0
