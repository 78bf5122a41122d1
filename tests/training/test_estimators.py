"""The advantage estimators are listed once (brorl.training.estimators): the schema's choices, the config checks, both
engines, the algorithm table and docs/stages.md read that list, and adding one is one function and one row."""

from __future__ import annotations

import re

import numpy as np
import pytest
from brorl import config as config_module
from brorl.config import ConfigError, load_schema, load_yaml_config, validate_config
from brorl.training import estimators
from brorl.training.embedded import advantages as adv
from brorl.training.estimators import ESTIMATORS, Estimator
from helpers import ROOT

CONFIG = ROOT / "config.yaml"
TINY = ROOT / "workflow" / "presets" / "tiny.yaml"
DOC = ROOT / "docs" / "stages.md"
TABLE = re.compile(r"<!-- estimators: generated from brorl.training.estimators -->\n(.*?)<!-- end estimators -->", re.S)


def test_the_page_shows_the_list_as_it_is():
    shown = TABLE.search(DOC.read_text())
    assert shown, "docs/stages.md has no generated estimator table"
    assert shown[1] == estimators.markdown_table(), "regenerate it: python -m brorl.training.estimators"


def test_the_schema_offers_exactly_the_listed_estimators():
    defs = load_schema()["$defs"]
    assert defs["estimator"]["enum"] == list(estimators.NAMES)
    assert defs["estimator_or_null"]["enum"] == [*estimators.NAMES, None]
    assert "dr_grpo" in estimators.NAMES


@pytest.mark.parametrize("row", ESTIMATORS, ids=lambda row: row.name)
def test_each_embedded_row_names_a_baseline_function_that_wants_a_group(row):
    if row.embedded is None:
        assert row.name not in estimators.EMBEDDED
        return
    baseline = getattr(adv, row.embedded)
    rewards = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    assert baseline(rewards).shape == rewards.shape
    if row.group:
        with pytest.raises(ValueError, match="n >= 2"):
            baseline(rewards[:, :1])


def test_the_derived_sets_the_engines_read():
    assert estimators.EMBEDDED == ("reinforce_baseline", "group_norm", "rloo", "dr_grpo")
    assert set(estimators.OPENRLHF_GROUP) == {"reinforce_baseline", "group_norm", "rloo", "dr_grpo"}
    # experience_maker.py:325 also normalises gae, which needs a critic: not an estimator of this project
    assert set(estimators.OPENRLHF_BATCH_NORMALISED) == {"reinforce_baseline", "reinforce"}


def test_an_unknown_estimator_is_refused_with_the_known_ones():
    tiny = load_yaml_config(CONFIG, TINY)
    tiny["arms"][0]["advantage_estimator"] = "ppo_gae"
    with pytest.raises(ConfigError, match=r"'arms\[0\].advantage_estimator'.*'ppo_gae'") as info:
        validate_config(tiny)
    assert "dr_grpo" in str(info.value)


@pytest.fixture
def throwaway(monkeypatch):
    """One function and one row: a baseline of the group's median, which OpenRLHF does not have."""

    def group_median(rewards: np.ndarray) -> np.ndarray:
        adv._check_groups(rewards)
        return rewards - np.median(rewards, axis=1, keepdims=True)

    row = Estimator("group_median", None, "group_median", True, False, "reward minus the group median")
    monkeypatch.setattr(adv, "group_median", group_median, raising=False)
    rows = (*ESTIMATORS, row)
    monkeypatch.setattr(estimators, "ESTIMATORS", rows)
    monkeypatch.setattr(estimators, "BY_NAME", {e.name: e for e in rows})
    monkeypatch.setattr(estimators, "NAMES", tuple(e.name for e in rows))
    monkeypatch.setattr(estimators, "EMBEDDED", tuple(e.name for e in rows if e.embedded))
    monkeypatch.setattr(adv, "BY_NAME", estimators.BY_NAME)
    monkeypatch.setattr(adv, "EMBEDDED", estimators.EMBEDDED)
    monkeypatch.setattr(config_module, "ESTIMATOR_NAMES", estimators.NAMES)
    return row


def test_an_added_estimator_trains_in_the_embedded_engine(throwaway):
    rewards = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    lengths = np.ones_like(rewards)
    out = adv.advantages("group_median", rewards, lengths)
    assert np.allclose(out, [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # not normalised: its row says OpenRLHF would not
    normalised = adv.advantages("group_median", rewards, lengths, batch_norm="every_estimator")
    assert np.isclose(normalised.mean(), 0.0)
    tiny = load_yaml_config(CONFIG, TINY)
    tiny["arms"][0]["advantage_estimator"] = "group_median"
    validate_config(tiny)  # the embedded engine trains it


def test_an_estimator_without_an_openrlhf_name_is_refused_under_the_cluster_engine(throwaway):
    paper = load_yaml_config(CONFIG)
    arm = next(i for i, a in enumerate(paper["arms"]) if a.get("enabled", True))
    paper["arms"][arm]["advantage_estimator"] = "group_median"
    name = paper["arms"][arm]["name"]
    with pytest.raises(ConfigError) as info:
        validate_config(paper)
    text = str(info.value)
    assert f"'arms[{arm}].advantage_estimator' (arm '{name}')" in text
    assert "the cluster engine (OpenRLHF) cannot train it" in text
