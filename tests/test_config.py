"""The config: config.yaml and the tiny preset validate, the schema documents every key, bad configs are named."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from brorl.config import ConfigError, deep_merge, load_schema, load_yaml_config, validate_config

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config.yaml"
TINY = ROOT / "workflow" / "presets" / "tiny.yaml"
PRESETS = ROOT / "workflow" / "presets"


def raw_config() -> dict:
    """config.yaml as written, before defaults are filled."""
    return yaml.safe_load(CONFIG.read_text())


def resolve(node: dict, root: dict) -> dict:
    """Follow local $refs; sibling keys win."""
    while "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


# --------------------------------------------------------------------------------------------------- shipped files
def test_shipped_config_validates():
    cfg = load_yaml_config(CONFIG)
    assert cfg["engine"] == "cluster"
    assert [(a["name"], a["n"], a["prompts_per_step"]) for a in cfg["arms"] if a["enabled"]] == [
        ("prorl_n16", 16, 512),
        ("brorl_n512", 512, 128),
    ]


def test_default_path_is_config_yaml():
    assert load_yaml_config() == load_yaml_config(CONFIG)


def test_tiny_preset_validates_and_keeps_simulation_at_paper_scale():
    paper, tiny = load_yaml_config(CONFIG), load_yaml_config(CONFIG, TINY)
    assert tiny["engine"] == "embedded"
    assert all(a["continued_steps"] <= 20 for a in tiny["arms"])
    # paper scale; only the sensitivity study runs one seed of the paper config's five (the demo's time budget)
    assert tiny["simulation"]["sensitivity"]["seeds"] == [0] and paper["simulation"]["sensitivity"]["seeds"] == [
        *range(5)
    ]
    tiny["simulation"]["sensitivity"]["seeds"] = paper["simulation"]["sensitivity"]["seeds"]
    assert tiny["simulation"] == paper["simulation"]
    # merged key by key, not replaced: keys the preset leaves alone keep the paper's values
    assert tiny["training"]["clip_eps_high"] == paper["training"]["clip_eps_high"]
    assert tiny["training"]["kl"] == paper["training"]["kl"]


def test_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(load_schema())


def undocumented(schema: dict) -> list[str]:
    """Properties, at any depth (also inside $defs and list items), that lack a description or a default."""
    missing = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                # written on the property itself: a $ref target's description would say nothing about this key
                missing.extend(f"{where}.{key}: {field}" for field in ("description", "default") if field not in sub)
            for key, sub in node.items():
                walk(sub, f"{where}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}[{i}]")

    walk(schema, "#")
    return missing


def test_every_schema_property_has_description_and_default():
    assert not undocumented(load_schema())


def test_undocumented_finds_a_planted_gap():
    schema = load_schema()
    del schema["$defs"]["arm"]["properties"]["seed"]["default"]
    del schema["properties"]["simulation"]["properties"]["theory"]["properties"]["seed"]["description"]
    del schema["$defs"]["arm"]["properties"]["name"]["description"]  # its $ref target has one: still a gap
    assert set(undocumented(schema)) == {
        "#.$defs.arm.seed: default",
        "#.$defs.arm.name: description",
        "#.properties.simulation.properties.theory.seed: description",
    }


def test_every_object_rejects_unknown_keys():
    schema, open_objects = load_schema(), []

    def walk(node, where):
        if isinstance(node, dict):
            if "properties" in node and node.get("additionalProperties") is not False:
                open_objects.append(where)
            for key, sub in node.items():
                walk(sub, f"{where}.{key}")

    walk(schema, "#")
    assert not open_objects, open_objects


def test_every_key_of_config_yaml_is_in_the_schema():
    schema, unknown = load_schema(), []

    def walk(value, node, where):
        node = resolve(node, schema)
        if isinstance(value, dict):
            props = node.get("properties", {})
            for key, sub in value.items():
                if key not in props:
                    unknown.append(f"{where}.{key}")
                else:
                    walk(sub, props[key], f"{where}.{key}")
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for i, item in enumerate(value):
                walk(item, node["items"], f"{where}[{i}]")

    for path in (CONFIG, TINY):
        walk(yaml.safe_load(path.read_text()), schema, path.name)
    assert not unknown, unknown


def test_each_default_lives_in_one_place():
    """The schema file holds no default for a key config.yaml writes: config.yaml's value is that default
    (brorl.config.load_schema reads it), so an empty config is config.yaml's experiment."""
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    twice = []

    def walk(values: dict, node: dict, where: str) -> None:
        node = resolve(node, schema)
        for key, value in values.items():
            sub = resolve(node["properties"][key], schema)
            if isinstance(value, dict) and value:
                walk(value, sub, f"{where}{key}.")
            elif "default" in sub:
                twice.append(f"{where}{key}")

    walk(raw_config(), schema, "")
    assert not twice, f"defaults in both config.yaml and the schema: {twice}"
    assert validate_config({}) == load_yaml_config(CONFIG)


# --------------------------------------------------------------------------------------------------- defaults
def test_missing_keys_get_schema_defaults_in_place():
    schema = load_schema()
    cfg = raw_config()
    del cfg["training"]["clip_eps_high"]
    del cfg["arms"][1]["seed"]
    del cfg["simulation"]["optimizer"]["eps"]
    del cfg["evaluation"]
    out = validate_config(cfg)
    assert out is cfg
    assert (
        cfg["training"]["clip_eps_high"]
        == schema["properties"]["training"]["properties"]["clip_eps_high"]["default"]
        == 0.27
    )
    assert cfg["arms"][1]["seed"] == schema["$defs"]["arm"]["properties"]["seed"]["default"] == 1
    assert cfg["simulation"]["optimizer"]["eps"] == 1.0e-8
    assert cfg["evaluation"] == load_yaml_config(CONFIG)["evaluation"]


def test_list_items_get_defaults():
    cfg = raw_config()
    cfg["arms"].append({"name": "extra", "n": 8, "prompts_per_step": 128, "continued_steps": 10})
    validate_config(cfg)
    assert cfg["arms"][-1]["enabled"] is True and cfg["arms"][-1]["report_steps"] == []


def test_variant_overrides_inherit_instead_of_getting_optimizer_defaults():
    cfg = raw_config()
    cfg["simulation"]["sensitivity"]["variants"] = [
        {"name": "eps_only", "optimizer": {"eps": 1.0e-6}},
        {"name": "all_inherited"},
    ]
    validate_config(cfg)
    first, second = cfg["simulation"]["sensitivity"]["variants"]
    assert first["optimizer"] == {"name": None, "lr": None, "betas": None, "eps": 1.0e-6, "weight_decay": None}
    assert set(second["optimizer"].values()) == {None}


def test_required_keys_are_not_filled_from_defaults():
    cfg = raw_config()
    del cfg["arms"][1]["name"]
    with pytest.raises(ConfigError, match=r"'arms\[1\]\.name': required but missing"):
        validate_config(cfg)


# --------------------------------------------------------------------------------------------------- merging
def test_merge_matches_snakemake_configfile_merge(tmp_path):
    from snakemake.utils import update_config

    override = {
        "training": {"lr0": 3.0e-6, "kl": {"coef": 0.0}},
        "arms": [{"name": "only", "n": 8, "prompts_per_step": 64, "continued_steps": 5}],
        "simulation": {"n_values": [4]},
        "analysis": {"n_sweep": {"arms": []}, "comparison": {"treatment": "only", "control": "only2"}},
    }
    ours, theirs = deep_merge(raw_config(), override), raw_config()
    update_config(theirs, copy.deepcopy(override))
    assert ours == theirs
    assert ours["training"]["kl"]["estimator"] == "k2" and ours["simulation"]["n_values"] == [4]

    path = tmp_path / "override.yaml"
    path.write_text(yaml.safe_dump(override))
    with pytest.raises(ConfigError, match=r"'analysis\.comparison\.control': 'only2' is not the name of an arm"):
        load_yaml_config(CONFIG, path)


def test_merge_recurses_into_dicts_replaces_the_rest_and_shares_nothing():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 5, "c": {"k": 1}, "d": "text"}
    override = {"a": {"y": [3], "z": {"deep": True}}, "b": {"now": "a dict"}, "c": 7, "e": [{"n": 1}]}
    merged = deep_merge(base, override)
    assert merged is base
    assert base == {
        "a": {"x": 1, "y": [3], "z": {"deep": True}},
        "b": {"now": "a dict"},
        "c": 7,
        "d": "text",
        "e": [{"n": 1}],
    }
    base["a"]["y"].append(4)
    base["e"][0]["n"] = 2
    assert override["a"]["y"] == [3] and override["e"] == [{"n": 1}]  # the override is copied, not aliased


def test_empty_override_file_changes_nothing(tmp_path):
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    assert load_yaml_config(CONFIG, tmp_path / "empty.yaml") == load_yaml_config(CONFIG)


def test_non_mapping_file_is_rejected(tmp_path):
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_yaml_config(CONFIG, tmp_path / "list.yaml")


# --------------------------------------------------------------------------------------------------- bad configs
def _set(cfg: dict, path: list, value) -> None:
    for part in path[:-1]:
        cfg = cfg[part]
    cfg[path[-1]] = value


def _dup_arm(cfg):
    cfg["arms"][1]["name"] = cfg["arms"][0]["name"]


def _append_benchmark(cfg):
    cfg["evaluation"]["benchmarks"].append("gsm8k")


def _dup_variant(cfg):
    cfg["simulation"]["sensitivity"]["variants"][1]["name"] = "adam_eps1e-6"


def _report_late(cfg):
    cfg["arms"][1]["report_steps"] = [191, 400]


def _model(**fields) -> dict:
    return {"name": "released", "repo_id": "org/model", "revision": "a" * 40, **fields}


BAD = [
    # (id, mutation, config key named, words that must appear)
    (
        "model-named-base",
        lambda c: _set(c, ["evaluation", "models"], [_model(name="base")]),
        "'evaluation.models[0].name'",
        "is taken",
    ),
    (
        "model-named-like-an-arm",
        lambda c: _set(c, ["evaluation", "models"], [_model(name="prorl_n16")]),
        "'evaluation.models[0].name'",
        "is taken",
    ),
    (
        "model-two-sources",
        lambda c: _set(c, ["evaluation", "models"], [_model(path="ckpt/")]),
        "'evaluation.models[0]'",
        "exactly one of repo_id",
    ),
    (
        "model-no-revision",
        lambda c: _set(c, ["evaluation", "models"], [_model(revision=None)]),
        "'evaluation.models[0].revision'",
        "needs a revision",
    ),
    (
        "model-unknown-paper-row",
        lambda c: _set(c, ["evaluation", "models"], [_model(paper_row="treatment@200")]),
        "'evaluation.models[0].paper_row'",
        "is not a row of the paper's Table 1",
    ),
    (
        "model-duplicate",
        lambda c: _set(c, ["evaluation", "models"], [_model(), _model()]),
        "'evaluation.models[1].name'",
        "duplicate",
    ),
    ("unknown-top-level", lambda c: _set(c, ["shedule"], 1), "'shedule'", "unknown key"),
    ("unknown-nested", lambda c: _set(c, ["training", "kl", "beta"], 0.1), "'training.kl.beta'", "unknown key ("),
    ("unknown-arm-key", lambda c: _set(c, ["arms", 0, "N"], 16), "'arms[0].N'", "unknown key: did you mean 'n'?"),
    (
        "misspelt-key",
        lambda c: _set(c, ["evaluation", "n_sample"], 8),
        "'evaluation.n_sample'",
        "unknown key: did you mean 'n_samples'?",
    ),
    (
        "wrong-type",
        lambda c: _set(c, ["evaluation", "n_samples"], "sixteen"),
        "'evaluation.n_samples'",
        "is not of type 'integer'",
    ),
    ("yaml-exponent-string", lambda c: _set(c, ["training", "lr0"], "2e-6"), "'training.lr0'", "write 1.0e-6"),
    ("arm-n-negative", lambda c: _set(c, ["arms", 1, "n"], -3), "'arms[1].n'", "-3 is less than the minimum of 1"),
    ("arm-n-zero", lambda c: _set(c, ["arms", 0, "n"], 0), "'arms[0].n'", "less than the minimum of 1"),
    (
        "refill-unknown",
        lambda c: _set(c, ["training", "dynamic_sampling", "refill"], "batch"),
        "'training.dynamic_sampling.refill'",
        "not an allowed value 'batch' (allowed: rounds, serial)",
    ),
    (
        "refill-max-rounds-zero",
        lambda c: _set(c, ["training", "dynamic_sampling", "max_rounds"], 0),
        "'training.dynamic_sampling.max_rounds'",
        "less than the minimum of 1",
    ),
    ("arm-n-not-integer", lambda c: _set(c, ["arms", 0, "n"], 16.5), "'arms[0].n'", "is not of type 'integer'"),
    ("unknown-benchmark", _append_benchmark, "'evaluation.benchmarks[21]'", "unknown benchmark 'gsm8k'"),
    ("duplicate-arm-name", _dup_arm, "'arms[1].name'", "duplicate 'prorl_n16'"),
    (
        "negative-lr",
        lambda c: _set(c, ["training", "lr0"], -1.0e-6),
        "'training.lr0'",
        "less than or equal to the minimum of 0",
    ),
    (
        "sim-correct-ge-vocab",
        lambda c: _set(c, ["simulation", "correct"], 128000),
        "'simulation.correct'",
        "must be less than simulation.vocab",
    ),
    (
        "bad-arm-name",
        lambda c: _set(c, ["arms", 0, "name"], "prorl n16/a"),
        "'arms[0].name'",
        "does not match the pattern",
    ),
    (
        "top-p-above-one",
        lambda c: _set(c, ["evaluation", "top_p"], 1.5),
        "'evaluation.top_p'",
        "1.5 is greater than the maximum of 1",
    ),
    (
        "temperature-negative",
        lambda c: _set(c, ["evaluation", "temperature"], -0.1),
        "'evaluation.temperature'",
        "-0.1 is less than the minimum of 0",
    ),
    (
        "unknown-optimizer",
        lambda c: _set(c, ["simulation", "optimizer", "name"], "lion"),
        "'simulation.optimizer.name'",
        "not an allowed value 'lion'",
    ),
    (
        "duplicate-seeds",
        lambda c: _set(c, ["simulation", "seeds"], [0, 1, 0]),
        "'simulation.seeds'",
        "duplicate values 0",
    ),
    (
        "duplicate-n-values",
        lambda c: _set(c, ["simulation", "n_values"], [4, 4]),
        "'simulation.n_values'",
        "duplicate values 4",
    ),
    ("empty-arms", lambda c: _set(c, ["arms"], []), "'arms'", "is empty"),
    ("duplicate-variant", _dup_variant, "'simulation.sensitivity.variants[1].name'", "duplicate 'adam_eps1e-6'"),
    (
        "unknown-override-key",
        lambda c: _set(c, ["simulation", "sensitivity", "variants", 0, "optimizer", "momentum"], 0.9),
        "'simulation.sensitivity.variants[0].optimizer.momentum'",
        "unknown key",
    ),
    (
        "beta-out-of-range",
        lambda c: _set(c, ["simulation", "optimizer", "betas"], [0.9, 1.0]),
        "'simulation.optimizer.betas[1]'",
        "greater than or equal to the maximum of 1",
    ),
    (
        "bad-revision",
        lambda c: _set(c, ["base_model", "revision"], "v 2"),
        "'base_model.revision'",
        "does not match the pattern",
    ),
    ("bad-engine", lambda c: _set(c, ["engine"], "slurm"), "'engine'", "not an allowed value 'slurm'"),
    # N changed in one place: the arm's name and Table 2's layouts still say the old N
    ("n-but-not-its-name", lambda c: _set(c, ["arms", 1, "n"], 256), "'arms[1].n'", "'brorl_n512' says N = 512"),
    (
        "n-without-its-layout",
        lambda c: _set(c, ["throughput", "layouts"], [{"prompts": 8, "n": 16}]),
        "'throughput.layouts'",
        "no layout has n = 512, the N of brorl_n512 (analysis.comparison.treatment)",
    ),
    ("report-step-too-late", _report_late, "'arms[1].report_steps'", "exceed(s) continued_steps"),
    (
        "mini-batches-do-not-divide",
        lambda c: _set(c, ["training", "mini_batches_per_step"], 3),
        "'arms[0]'",
        "not divisible by training.mini_batches_per_step = 3",
    ),
    (
        "clip-high-below-low",
        lambda c: _set(c, ["training", "clip_eps_high"], 0.1),
        "'training.clip_eps_high'",
        "Clip-Higher",
    ),
    (
        "eval-tokens-beyond-context",
        lambda c: _set(c, ["evaluation", "max_tokens"], 65536),
        "'evaluation.max_tokens'",
        "exceeds context.eval_max_len",
    ),
    (
        "comparison-unknown-arm",
        lambda c: _set(c, ["analysis", "comparison", "treatment"], "brorl_n64"),
        "'analysis.comparison.treatment'",
        "is not the name of an arm",
    ),
    (
        "reset-not-on-checkpoint",
        lambda c: (
            _set(c, ["training", "reference_reset", "resets"], None),
            _set(c, ["training", "reference_reset", "period_steps"], 210),
        ),
        "'training.reference_reset.period_steps'",
        "not a multiple of training.checkpoint_every",
    ),
    (
        "wandb-group-without-arm",
        lambda c: _set(c, ["logging", "wandb", "group"], "paper"),
        "'logging.wandb.group'",
        "must contain {arm}",
    ),
    (
        "wandb-group-other-field",
        lambda c: _set(c, ["logging", "wandb", "group"], "{arm}-{seed}"),
        "'logging.wandb.group'",
        "found ['arm', 'seed']",
    ),
    (
        "wandb-group-broken",
        lambda c: _set(c, ["logging", "wandb", "group"], "{arm"),
        "'logging.wandb.group'",
        "not a template",
    ),
    (
        "wandb-mode",
        lambda c: _set(c, ["logging", "wandb", "mode"], "cloud"),
        "'logging.wandb.mode'",
        "not an allowed value 'cloud'",
    ),
    (
        "wandb-key-in-config",
        lambda c: _set(c, ["logging", "wandb", "key"], "abc"),
        "'logging.wandb.key'",
        "unknown key",
    ),
    (
        "reset-both-ways",
        lambda c: _set(c, ["training", "reference_reset", "period_steps"], 200),
        "'training.reference_reset.resets'",
        "give exactly one of resets",
    ),
]


@pytest.mark.parametrize("mutate, key, words", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_malformed_config_is_named(mutate, key, words):
    cfg = raw_config()
    mutate(cfg)
    with pytest.raises(ConfigError) as info:
        validate_config(cfg)
    message = str(info.value)
    line = next((p for p in info.value.problems if f"config key {key}" in p), None)
    assert line is not None, message
    assert words in line, message


def test_a_benchmark_is_registered_by_its_yaml_alone(monkeypatch):
    """The schema does not list benchmark names: a name is known when workflow/benchmarks/<name>.yaml exists."""
    from brorl.benchmarks import registry

    cfg = raw_config()
    _append_benchmark(cfg)
    with pytest.raises(
        ConfigError, match=r"'evaluation.benchmarks\[21\]': unknown benchmark 'gsm8k': no registry entry"
    ):
        validate_config(copy.deepcopy(cfg))
    known = registry.benchmark_names()
    monkeypatch.setattr(registry, "benchmark_names", lambda: [*known, "gsm8k"])  # as if gsm8k.yaml were added
    assert "gsm8k" in validate_config(cfg)["evaluation"]["benchmarks"]


def test_config_yaml_is_the_papers_two_arms_and_the_n_sweep_preset_adds_its_own():
    assert [a["name"] for a in validate_config(raw_config())["arms"]] == ["prorl_n16", "brorl_n512"]
    sweep = load_yaml_config(CONFIG, PRESETS / "n_sweep.yaml")
    on = {a["name"]: a for a in sweep["arms"] if a["enabled"]}
    assert set(on) == {
        "prorl_n16",
        "brorl_n512",
        "control_n16_p4096",
        "sweep_eq_n64",
        "sweep_eq_n256",
        "sweep_eq_n1024",
        "control_n16_p128",
    }
    equal = [on[name] for name in sweep["analysis"]["n_sweep"]["arms"]]
    assert {a["n"] * a["prompts_per_step"] for a in equal} == {65536}  # equal samples per step
    assert [a["n"] for a in equal] == [16, 64, 256, 512, 1024]
    bad = raw_config()
    bad["analysis"] = {"n_sweep": {"enabled": True, "controls": ["no_such_arm"]}}
    with pytest.raises(ConfigError, match=r"'analysis.n_sweep.controls\[0\]': 'no_such_arm' is not the name"):
        validate_config(bad)


def test_extension_presets_combine_and_a_pair_adding_the_same_arm_is_refused_naming_both(tmp_path):
    from helpers import EXTENSIONS

    names = [a["name"] for a in load_yaml_config(CONFIG, *EXTENSIONS)["arms"]]
    assert len(names) == len(set(names)) == 19 and names[:2] == ["prorl_n16", "brorl_n512"]
    again = yaml.safe_load((PRESETS / "lr_ablation.yaml").read_text())["extra_arms"]["lr_ablation"]
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"extra_arms": {"mine": again}}))
    with pytest.raises(
        ConfigError,
        match=r"'extra_arms.mine\[0\]': arm 'brorl_n512_lr_const' is already added by "
        r"extra_arms.lr_ablation: these two presets cannot be combined",
    ):
        load_yaml_config(CONFIG, PRESETS / "lr_ablation.yaml", mine)
    again[0]["name"] = "brorl_n512"
    mine.write_text(yaml.safe_dump({"extra_arms": {"mine": again}}))
    with pytest.raises(ConfigError, match=r"'extra_arms.mine\[0\]': arm 'brorl_n512' is already added by arms"):
        load_yaml_config(CONFIG, mine)


def test_all_problems_are_reported_at_once():
    cfg = raw_config()
    cfg["arms"][0]["n"] = -3
    cfg["arms"][1]["name"] = "prorl_n16"
    cfg["simulation"]["correct"] = 200000
    cfg["evaluation"]["top_p"] = 2
    cfg["nonsense"] = True
    with pytest.raises(ConfigError) as info:
        validate_config(cfg)
    text = str(info.value)
    for key in ("'arms[0].n'", "'arms[1].name'", "'simulation.correct'", "'evaluation.top_p'", "'nonsense'"):
        assert key in text, text


def test_config_module_imports_no_heavy_libraries():
    code = (
        "import sys, brorl.config; heavy = [m for m in ('torch', 'numpy', 'pandas', 'snakemake') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_n_sweep_step_must_be_an_evaluated_step_of_its_arms():
    """The tiny preset once asked for step 2 of arms evaluated at steps 3 and 6: an empty N-sweep figure."""
    cfg = load_yaml_config(CONFIG, ROOT / "workflow" / "presets" / "tiny.yaml")
    cfg["analysis"]["n_sweep"]["step"] = 2
    with pytest.raises(
        ConfigError, match=r"step 2 of sweep arm 'prorl_n4' is not evaluated \(its evaluated steps: \[16\]\)"
    ):
        validate_config(cfg)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("advantage_estimator", "reinforce", "'reinforce' is not implemented by the embedded engine"),
        ("loss_aggregation", "seq-mean-token-mean", "'seq-mean-token-mean' is not implemented"),
        ("length_penalty", True, "True is not implemented by the embedded engine"),
    ],
)
def test_the_embedded_engine_refuses_what_it_cannot_train(key, value, words):
    """The tiny preset trains with the embedded engine: a key it would silently ignore is refused by name."""
    tiny = load_yaml_config(CONFIG, TINY)
    tiny["training"][key] = value
    with pytest.raises(ConfigError, match=rf"'training.{key}': {words}"):
        validate_config(tiny)
    paper = load_yaml_config(CONFIG)  # the cluster engine (OpenRLHF) takes it, but for the length penalty
    paper["training"][key] = value
    if key == "length_penalty":  # which its command cannot express: refused at once, not inside the 64-GPU job
        with pytest.raises(
            ConfigError, match="'training.length_penalty': the cosine length penalty is not implemented"
        ):
            validate_config(paper)
    else:
        validate_config(paper)


def test_the_embedded_engine_refuses_an_arms_own_estimator_it_cannot_train_and_takes_the_four_it_computes():
    tiny = load_yaml_config(CONFIG, TINY)
    for estimator in ("reinforce_baseline", "group_norm", "rloo", "dr_grpo"):
        tiny["arms"][0]["advantage_estimator"] = estimator
        validate_config(tiny)
    tiny["arms"][0]["advantage_estimator"] = "reinforce"
    name = tiny["arms"][0]["name"]
    with pytest.raises(
        ConfigError, match=rf"'arms\[0\].advantage_estimator' \(arm '{name}'\): 'reinforce' is not impl"
    ):
        validate_config(tiny)
    tiny["arms"][0]["enabled"] = False  # an arm that is not trained is not refused
    validate_config(tiny)


def test_the_embedded_engine_refuses_kl_in_the_reward():
    tiny = load_yaml_config(CONFIG, TINY)
    tiny["training"]["kl"]["use_loss"] = False
    with pytest.raises(ConfigError, match="'training.kl.use_loss': false"):
        validate_config(tiny)


def test_the_released_preset_validates_and_evaluates_without_training():
    cfg = load_yaml_config(ROOT / "config.yaml", ROOT / "workflow" / "presets" / "released.yaml")
    (model,) = cfg["evaluation"]["models"]
    assert model["repo_id"] == cfg["base_model"]["repo_id"] and model["revision"] == "brorl"  # pinned by make pin
    assert model["paper_row"] == "treatment@191" and not any(arm["enabled"] for arm in cfg["arms"])
    assert len(cfg["evaluation"]["benchmarks"]) == 21 and cfg["evaluation"]["n_samples"] == 16  # the paper's protocol


def test_the_first_arm_must_be_an_enabled_arm(tmp_path):
    """training.cluster.first_arm orders a run's GPU jobs after one arm's training: a name that is not an enabled
    arm is refused before any job exists (a disabled one would make every other GPU job wait forever)."""
    path = tmp_path / "first.yaml"
    for name, why in (("nope", "'nope' is not an enabled arm"), ("sweep_n32", "'sweep_n32' is not an enabled arm")):
        path.write_text(yaml.safe_dump({"training": {"cluster": {"first_arm": name}}}))
        with pytest.raises(ConfigError, match=rf"'training\.cluster\.first_arm': {why}"):
            load_yaml_config(CONFIG, path)
    path.write_text(yaml.safe_dump({"training": {"cluster": {"first_arm": "brorl_n512"}}}))
    assert load_yaml_config(CONFIG, path)["training"]["cluster"]["first_arm"] == "brorl_n512"


def test_openrlhfs_batch_arithmetic_is_checked_with_the_config(tmp_path):
    """An arm of N = 16 x 150 prompts: 2,400 samples in 8 mini-batches of 300, not a multiple of 64 GPUs, which
    DeepSpeed refuses inside the 64-GPU job; the config is refused when it is read (dry run, plan, submission)."""
    path = tmp_path / "bad_arm.yaml"
    arms = [{"name": "prorl_n16", "n": 16, "prompts_per_step": 150, "continued_steps": 10}]
    arms.append({"name": "brorl_n512", "n": 512, "prompts_per_step": 128, "continued_steps": 191})
    path.write_text(yaml.safe_dump({"arms": arms, "analysis": {"n_sweep": {"arms": [], "controls": []}}}))
    with pytest.raises(ConfigError, match=r"prorl_n16's mini-batch of 300 samples \(2400 / 8\) is not a multiple"):
        load_yaml_config(CONFIG, path)
