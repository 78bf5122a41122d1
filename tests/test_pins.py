"""The pin gate: every hub download of a run at a 40-hex commit, checked before anything is submitted. A dry run and
the plan list the unpinned sources as a warning; a run that would execute jobs stops at its start (onstart)."""

from __future__ import annotations

import copy

import pytest
from brorl.benchmarks.registry import load_registry
from brorl.hub.pins import HubSource, hub_sources, is_pinned, unpinned_report
from helpers import CONFIG, output_of, paper_config, snakemake


@pytest.fixture(scope="module")
def paper():
    return paper_config()


def test_the_sources_of_a_run_are_the_ones_it_would_download(paper):
    registry = load_registry()
    every = hub_sources(paper, registry, lambda name: True, training=True)
    keys = {s.config_key for s in every}
    assert "base_model.revision" in keys and "train_data.sources[stem].revision" in keys
    assert not any("reasoning_gym" in s.repo_id for s in every)  # generated, not downloaded
    local = hub_sources(paper, registry, lambda name: False, training=True)  # every benchmark has its local copy
    assert not any("benchmarks" in s.config_key for s in local)
    assert hub_sources(paper, registry, lambda name: False, training=False) == [
        HubSource("base_model.revision", paper["base_model"]["repo_id"], paper["base_model"]["revision"], "model")
    ]
    embedded = copy.deepcopy(paper)
    embedded["engine"] = "embedded"
    assert all(s.repo_type == "dataset" for s in hub_sources(embedded, registry, lambda n: True, training=True))


def test_the_report_names_each_unpinned_source_and_how_to_pin_it():
    sources = [
        HubSource("base_model.revision", "org/model", "a" * 40, "model"),
        HubSource("train_data.sources[stem].revision", "org/data", "main", "dataset"),
        HubSource("x.yaml", "org/other", None, "dataset"),
    ]
    report = unpinned_report(sources)
    assert report.startswith("2 hub source(s)") and "org/model" not in report
    assert "org/data@main (train_data.sources[stem].revision)" in report and "dataset_info('org/data'" in report
    assert "org/other@main (no revision given)" in report
    assert unpinned_report(sources[:1]) == "" and is_pinned("a" * 40) and not is_pinned("main")


@pytest.mark.workflow
def test_the_shipped_config_plans_with_a_warning_and_refuses_to_start(tmp_path):
    dry = snakemake("-n", "--directory", tmp_path / "dry")
    assert dry.returncode == 0, output_of(dry)[-3000:]
    assert "warning: 1 hub source(s) of this run are not pinned" in dry.stderr and "EricLu/SCP-116K@main" in dry.stderr
    run = snakemake("--cores", "1", "--directory", tmp_path / "run")
    assert run.returncode != 0 and "not started: 1 hub source(s)" in output_of(run), output_of(run)[-3000:]
    made = [p for p in (tmp_path / "run").rglob("*") if p.is_file() and ".snakemake" not in p.parts]
    assert made == []  # nothing was run or submitted
    allowed = tmp_path / "allow.yaml"
    allowed.write_text("allow_unpinned: true\n")
    dry = snakemake("-n", "--directory", tmp_path / "dry", "--configfile", CONFIG, allowed)
    assert dry.returncode == 0 and "not pinned" not in dry.stderr
    # pinned (or allowed), the smoke gate is next: GPU training waits for a passed GPU smoke run
    assert "warning: no GPU smoke verdict at results/smoke/verdict.json" in dry.stderr, dry.stderr[-2000:]
    run = snakemake("--cores", "1", "--directory", tmp_path / "run", "--configfile", CONFIG, allowed)
    assert run.returncode != 0 and "not started: no GPU smoke verdict" in output_of(run), output_of(run)[-3000:]
    assert [p for p in (tmp_path / "run").rglob("*") if p.is_file() and ".snakemake" not in p.parts] == []
