"""What a training job is handed apart from its recipe: the engines' operational keys (never params, so tuning them
reruns nothing) and the arm's segment length, frozen once its run folder exists."""

from __future__ import annotations

import copy
import json

import pytest
from brorl.training.layout import freeze_layouts, layout_file, record_layout
from brorl.training.recipe import (
    OPERATIONAL_KEYS,
    OPERATIONS_ENV,
    RecipeError,
    arm_plan,
    load_job_config,
    recipe_fingerprint,
    segment_max_steps,
    split_operations,
)
from helpers import paper_config


@pytest.fixture(scope="module")
def paper():
    return paper_config()


def test_operational_keys_leave_the_recipe_and_come_back_from_the_environment(paper, monkeypatch):
    recipe, operations = split_operations(paper["training"])
    for section, keys in OPERATIONAL_KEYS.items():
        assert not set(keys) & set(recipe[section]) and set(operations[section]) == set(keys)
    assert recipe["cluster"]["nodes"] == 8  # the layout stays: a checkpoint cannot resume on another one
    job = {"arms": paper["arms"], "training": recipe, "context": paper["context"]}
    monkeypatch.delenv(OPERATIONS_ENV, raising=False)
    with pytest.raises(RecipeError, match=f"training.cluster lacks .*{OPERATIONS_ENV}"):
        load_job_config(json.dumps(job))
    monkeypatch.setenv(OPERATIONS_ENV, json.dumps(operations))
    assert load_job_config(json.dumps(job))["training"] == paper["training"]


def test_an_arms_own_segment_length_wins_and_leaves_the_fingerprint(paper):
    config = copy.deepcopy(paper)
    brorl = next(a for a in config["arms"] if a["name"] == "brorl_n512")
    assert segment_max_steps(config, "brorl_n512") == brorl["segment_max_steps"]  # sized for BroRL's step time
    assert segment_max_steps(config, "prorl_n16") == config["training"]["segment_max_steps"]
    lengths = {len(s.steps) for s in arm_plan(config, "brorl_n512").segments}
    assert max(lengths) <= brorl["segment_max_steps"]
    before = recipe_fingerprint(config, "brorl_n512")
    brorl["segment_max_steps"] = 5
    assert recipe_fingerprint(config, "brorl_n512") == before  # a run may keep its length: not part of its recipe
    assert max(len(s.steps) for s in arm_plan(config, "brorl_n512").segments) == 5


def test_the_first_job_records_the_length_and_the_workflow_keeps_it(paper, tmp_path):
    config = copy.deepcopy(paper)
    record_layout(config, "brorl_n512", tmp_path / "brorl_n512")
    recorded = json.loads(layout_file(tmp_path / "brorl_n512").read_text())["segment_max_steps"]
    assert recorded == segment_max_steps(config, "brorl_n512")
    config["training"]["segment_max_steps"] = 7
    next(a for a in config["arms"] if a["name"] == "brorl_n512")["segment_max_steps"] = 9
    with pytest.raises(RecipeError, match="laid out with"):
        record_layout(config, "brorl_n512", tmp_path / "brorl_n512")  # a job with another length is refused
    notes = freeze_layouts(config, tmp_path)
    assert len(notes) == 1 and "keeps" in notes[0] and "brorl_n512" in notes[0]
    assert segment_max_steps(config, "brorl_n512") == recorded  # the recorded length is back in the config
    assert segment_max_steps(config, "prorl_n16") == 7  # an arm without a run takes the config's
    record_layout(config, "brorl_n512", tmp_path / "brorl_n512")  # now consistent: accepted
