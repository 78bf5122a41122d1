"""Load, default-fill and validate the workflow config (config.yaml + workflow/schemas/config.schema.yaml).

The Snakefile calls ``validate_config(config)`` on Snakemake's global ``config`` before any job starts. We do not use
``snakemake.utils.validate``: it stops at the first error, words it as jsonschema's dump of schema and instance, and
fills defaults into required keys too, which hides a missing arm name. Here every problem is collected and named by
its config key (``arms[1].n``), and checks a JSON schema cannot express (unique arm names, cross-key constraints) run
as well.
"""

from __future__ import annotations

import copy
import difflib
import string
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .training.recipe import EMBEDDED_ESTIMATORS

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"
DEFAULT_CONFIG_PATH = Path(__file__).resolve().parents[2] / "config.yaml"


class ConfigError(ValueError):
    """An invalid config; ``problems`` lists one plain-words line per offending key."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid config ({len(self.problems)} problem(s)):\n{lines}")


def load_schema(path: Path | str = SCHEMA_PATH) -> dict:
    """Return the config schema as a dict."""
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def deep_merge(base: dict, override: dict) -> dict:
    """Merge a copy of ``override`` into ``base`` in place and return it: Snakemake's own --configfile merge
    (``snakemake.utils.update_config``: dicts recurse, lists and scalars replace), so ``make plan`` and the
    preflight read the config exactly as Snakemake does. Imported here, not at the top: brorl.config is also
    imported in job environments, which have no Snakemake (and only these command-line tools merge files)."""
    from snakemake.utils import update_config

    update_config(base, copy.deepcopy(override))  # the copy: no list or dict of ``override`` is shared with base
    return base


def load_yaml_config(*paths: Path | str) -> dict:
    """Load config.yaml (or ``paths[0]``), merge each later file over it, validate, and return the result."""
    paths = paths or (DEFAULT_CONFIG_PATH,)
    config: dict = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f)
        if loaded is None:  # an empty override file changes nothing
            continue
        if not isinstance(loaded, dict):
            raise ConfigError([f"{path}: top level must be a mapping of config keys, not {type(loaded).__name__}"])
        deep_merge(config, loaded)
    config = validate_config(config)
    # pins.lock.yaml beside the first file (`make pin`), read as the Snakefile reads it
    from .hub.pin_lock import apply_lock_file

    apply_lock_file(config, Path(paths[0]).parent)
    return config


def validate_config(config: dict, schema: dict | None = None) -> dict:
    """Fill schema defaults into ``config`` in place, validate it, run semantic checks; return the same dict.

    Raises ConfigError naming every offending key as a dotted path (``arms[1].n``).
    """
    schema = load_schema() if schema is None else schema
    if not isinstance(config, dict):
        raise ConfigError([f"the config must be a mapping of keys, not {type(config).__name__}"])
    _fill_defaults(config, schema, schema)
    switch_on_sweep(config)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: _key(e.absolute_path))
    problems = [_describe(e) for e in errors] + _semantic_problems(config)
    if not problems and training_engine(config) == "cluster":
        problems = _cluster_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


def _cluster_problems(config: dict) -> list[str]:
    """What OpenRLHF 0.11.2 would refuse for the enabled arms (batch arithmetic, layout, recipe), checked here so
    that a dry run or a submission refuses in milliseconds what a 64-GPU job would refuse after its queue wait."""
    from .training.openrlhf.validate import ClusterConfigError, validate_cluster_config

    try:
        validate_cluster_config(config)
    except ClusterConfigError as error:
        return str(error).split("\n  - ")[1:]
    return []


# ----------------------------------------------------------------------------------------------------------- defaults
def _resolve(node: dict, root: dict) -> dict:
    """Follow local ``$ref``s (``#/$defs/x``); sibling keys of the ref win over the target's."""
    while "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _fill_defaults(instance: Any, node: dict, root: dict) -> None:
    """Insert defaults for missing, non-required properties, recursing into objects and list items."""
    node = _resolve(node, root)
    if isinstance(instance, dict) and "properties" in node:
        required = set(node.get("required", ()))
        for key, sub in node["properties"].items():
            sub = _resolve(sub, root)
            if key not in instance and key not in required and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                _fill_defaults(instance[key], sub, root)
    elif isinstance(instance, list) and isinstance(node.get("items"), dict):
        for item in instance:
            _fill_defaults(item, node["items"], root)


# ------------------------------------------------------------------------------------------------------------ messages
def _key(path: Iterable[Any]) -> str:
    """Render a jsonschema path as a config key: ``arms[1].n``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _where(path: Iterable[Any]) -> str:
    key = _key(path)
    return f"config key '{key}'" if key else "the config"


def _did_you_mean(key: str, allowed: list[str]) -> str:
    """`: did you mean 'x'?` for the allowed key closest to a misspelt one (case ignored), or nothing."""
    by_lower = {a.lower(): a for a in allowed}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    return f": did you mean '{by_lower[close[0]]}'?" if close else ""


def _describe(error: jsonschema.ValidationError) -> str:
    """Turn one jsonschema error into one plain-words line naming the config key."""
    path = list(error.absolute_path)
    kind, value = error.validator, error.instance
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(allowed))
        return "; ".join(
            f"{_where(path + [k])}: unknown key{_did_you_mean(str(k), allowed)} (allowed here: {', '.join(allowed)})"
            for k in extra
        )
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        return "; ".join(f"{_where(path + [k])}: required but missing" for k in missing)
    if kind == "enum":
        allowed = ", ".join("null" if v is None else str(v) for v in error.validator_value)
        return f"{_where(path)}: not an allowed value {value!r} (allowed: {allowed})"
    if kind == "uniqueItems":
        dups = [v for v, c in Counter(map(repr, value)).items() if c > 1]
        return f"{_where(path)}: has duplicate values {', '.join(dups)}; each value may appear once"
    if kind == "pattern":
        hint = (
            " (names: letters, digits, '_', '.', '-', starting with a letter or digit)"
            if path[-1] in ("name", "treatment", "control") or "arms" in path[:-1]
            else ""
        )
        return f"{_where(path)}: {value!r} does not match the pattern {error.validator_value}{hint}"
    if kind == "minItems" and error.validator_value == 1:
        return f"{_where(path)}: is empty; give at least one entry"
    if kind == "type" and isinstance(value, str):
        hint = ""
        try:
            float(value)
            hint = " (YAML reads 1e-6 as text: write 1.0e-6)"
        except ValueError:
            pass
        return f"{_where(path)}: {error.message}{hint}"
    return f"{_where(path)}: {error.message}"


# ----------------------------------------------------------------------------------------------------------- semantics
def _duplicates(items: list, label: str, what: str) -> list[str]:
    """One problem per repeated value (None = missing, skipped), naming the repeat and the first occurrence."""
    seen: dict[Any, int] = {}
    problems = []
    for i, value in enumerate(items):
        if value is None:
            continue
        if value in seen:
            problems.append(
                f"config key '{label}[{i}]{what}': duplicate {value!r} (also at {label}[{seen[value]}]); must be unique"
            )
        else:
            seen[value] = i
    return problems


def _names(entries: list) -> list:
    """The ``name`` of each list entry, None where an entry is malformed (the schema reports it)."""
    return [e.get("name") if isinstance(e, dict) else None for e in entries]


def _semantic_problems(cfg: dict) -> list[str]:
    """Checks across keys that the schema cannot express.

    Each check runs on its own: one that meets a malformed section (already reported by the schema) is skipped,
    so that the other checks still report.
    """
    problems: list[str] = []
    for check in _CHECKS:
        try:
            problems += check(cfg)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            pass
    return problems


def _check_arms(cfg: dict) -> list[str]:
    arms, train = cfg["arms"], cfg["training"]
    problems = _duplicates(_names(arms), "arms", ".name")
    for i, arm in enumerate(arms):
        try:
            problems += _check_arm(i, arm, train)
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # a malformed arm is reported by the schema
    return problems


def _check_arm(i: int, arm: dict, train: dict) -> list[str]:
    counts = (arm["n"], arm["prompts_per_step"], arm["continued_steps"], train["mini_batches_per_step"])
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in counts):
        return []  # the schema already reports bad counts; arithmetic on them would repeat it
    problems = []
    late = [s for s in arm["report_steps"] if s > arm["continued_steps"]]
    if late:
        problems.append(
            f"config key 'arms[{i}].report_steps': {late} exceed(s) continued_steps ({arm['continued_steps']})"
        )
    # equal PPO mini-batches per step (paper) needs a whole number of samples per mini-batch
    samples, mb = arm["n"] * arm["prompts_per_step"], train["mini_batches_per_step"]
    if samples % mb:
        problems.append(
            f"config key 'arms[{i}]': n x prompts_per_step = {samples} samples is not divisible by "
            f"training.mini_batches_per_step = {mb}"
        )
    if train["dynamic_sampling"]["enabled"] and arm["n"] < 2:
        problems.append(
            f"config key 'arms[{i}].n': dynamic sampling needs at least 2 rollouts per prompt, got {arm['n']}"
        )
    return problems


def _check_training(cfg: dict) -> list[str]:
    train, problems = cfg["training"], []
    if train["clip_eps_high"] < train["clip_eps_low"]:
        problems.append(
            f"config key 'training.clip_eps_high': {train['clip_eps_high']} is below "
            f"training.clip_eps_low = {train['clip_eps_low']} (Clip-Higher needs high >= low)"
        )
    low, high = train["dynamic_sampling"]["score_range"]
    if not low < high:
        problems.append(f"config key 'training.dynamic_sampling.score_range': low {low} must be below high {high}")
    reset = train["reference_reset"]
    if reset["enabled"] and (reset["resets"] is None) == (reset["period_steps"] is None):
        problems.append(
            "config key 'training.reference_reset.resets': give exactly one of resets (resets per arm, at the same "
            "fractions of training) and period_steps (every so many steps), and null for the other"
        )
    # a reset restarts from an exported checkpoint, so one must exist at every reset step
    elif reset["enabled"] and reset["period_steps"] and reset["period_steps"] % train["checkpoint_every"]:
        problems.append(
            f"config key 'training.reference_reset.period_steps': {reset['period_steps']} is not a "
            f"multiple of training.checkpoint_every = {train['checkpoint_every']}"
        )
    return problems


def _check_lengths(cfg: dict) -> list[str]:
    ctx, problems = cfg["context"], []
    if ctx["train_max_len"] < ctx["base_max_len"]:
        problems.append(
            f"config key 'context.train_max_len': {ctx['train_max_len']} is below "
            f"context.base_max_len = {ctx['base_max_len']}"
        )
    if cfg["evaluation"]["max_tokens"] > ctx["eval_max_len"]:
        problems.append(
            f"config key 'evaluation.max_tokens': {cfg['evaluation']['max_tokens']} exceeds "
            f"context.eval_max_len = {ctx['eval_max_len']}"
        )
    if cfg["engine"] == "embedded":  # the tiny model cannot attend beyond its positions
        model = cfg["base_model"]["embedded_model"]
        need = ctx["prompt_max_len"] + max(ctx["train_max_len"], ctx["eval_max_len"])
        if need > model["max_position_embeddings"]:
            problems.append(
                f"config key 'context.prompt_max_len': prompt_max_len + the longest response budget = "
                f"{need} tokens exceeds base_model.embedded_model.max_position_embeddings = "
                f"{model['max_position_embeddings']} (engine is embedded)"
            )
    return problems


def _check_embedded_model(cfg: dict) -> list[str]:
    model = cfg["base_model"]["embedded_model"]
    if model["num_heads"] % model["num_kv_heads"]:
        return [
            f"config key 'base_model.embedded_model.num_kv_heads': {model['num_kv_heads']} does not divide "
            f"num_heads = {model['num_heads']}"
        ]
    return []


def training_engine(cfg: dict) -> str:
    """The engine that trains the arms: training.engine, or the top-level engine when it is null."""
    return cfg["training"].get("engine") or cfg["engine"]


def _check_embedded_engine(cfg: dict) -> list[str]:
    """Training keys the embedded engine cannot honour: refused by name, never silently trained another way (the
    cluster engine, OpenRLHF, takes them all)."""
    train = cfg["training"]
    if training_engine(cfg) != "embedded" or not any(a.get("enabled", True) for a in cfg["arms"]):
        return []
    unsupported = {
        "loss_aggregation": (train["loss_aggregation"], "token-mean"),
        "length_penalty": (train["length_penalty"], False),
    }
    problems = [
        f"config key 'training.{key}': {value!r} is not implemented by the embedded engine (it trains {only!r} "
        "only); use training.engine: cluster (OpenRLHF) for it"
        for key, (value, only) in unsupported.items()
        if value != only
    ]
    estimators = [("training.advantage_estimator", train["advantage_estimator"])] + [
        (f"arms[{i}].advantage_estimator", a["advantage_estimator"])
        for i, a in enumerate(cfg["arms"])
        if a.get("enabled", True) and a.get("advantage_estimator")
    ]
    problems += [
        f"config key '{key}': {value!r} is not implemented by the embedded engine (it trains {EMBEDDED_ESTIMATORS}); "
        "use training.engine: cluster (OpenRLHF) for it"
        for key, value in estimators
        if value not in EMBEDDED_ESTIMATORS
    ]
    if not train["kl"]["use_loss"] and train["kl"]["coef"]:
        problems.append(
            "config key 'training.kl.use_loss': false (KL folded into the reward, OpenRLHF's default) is not "
            "implemented by the embedded engine, which adds the KL to the loss only; use true or training.engine: "
            "cluster"
        )
    return problems


def _check_unique_entries(cfg: dict) -> list[str]:
    layouts = [(x.get("prompts"), x.get("n")) if isinstance(x, dict) else None for x in cfg["throughput"]["layouts"]]
    return (
        _duplicates(_names(cfg["train_data"]["sources"]), "train_data.sources", ".name")
        + _duplicates(layouts, "throughput.layouts", "")
        + _duplicates(_names(cfg["simulation"]["sensitivity"]["variants"]), "simulation.sensitivity.variants", ".name")
    )


def switch_on_sweep(cfg: dict) -> None:
    """analysis.n_sweep.enabled: true enables every arm of the sweep and its controls (one key for the whole N
    sweep), and analysis.algorithms.enabled every arm of its pairs; unknown names are left to _check_analysis, which
    names them."""
    sweep = (cfg.get("analysis") or {}).get("n_sweep") or {}
    if not sweep.get("enabled"):
        sweep = {}
    wanted = set(sweep.get("arms", [])) | set(sweep.get("controls", []))
    algorithms = (cfg.get("analysis") or {}).get("algorithms") or {}
    if algorithms.get("enabled"):
        wanted |= {p.get(k) for p in algorithms.get("pairs", []) if isinstance(p, dict) for k in ("n16", "n512")}
    for arm in cfg.get("arms", []):
        if isinstance(arm, dict) and arm.get("name") in wanted:
            arm["enabled"] = True


def _check_analysis(cfg: dict) -> list[str]:
    arms = {a["name"]: a for a in cfg["arms"] if isinstance(a, dict) and "name" in a}
    comparison, sweep, problems = cfg["analysis"]["comparison"], cfg["analysis"]["n_sweep"], []
    for role in ("treatment", "control"):
        if comparison[role] not in arms:
            problems.append(
                f"config key 'analysis.comparison.{role}': {comparison[role]!r} is not the name of an "
                f"arm (arms: {', '.join(arms)})"
            )
    if comparison["treatment"] == comparison["control"]:
        problems.append("config key 'analysis.comparison.control': must differ from analysis.comparison.treatment")
    algorithms = cfg["analysis"]["algorithms"]
    for j, pair in enumerate(algorithms["pairs"] if algorithms["enabled"] else []):  # presets replace the arms
        for role in ("n16", "n512"):
            arm = arms.get(pair[role])
            key = f"analysis.algorithms.pairs[{j}].{role}"
            if arm is None:
                problems.append(f"config key '{key}': {pair[role]!r} is not the name of an arm")
            elif (arm.get("advantage_estimator") or cfg["training"]["advantage_estimator"]) != pair["estimator"]:
                problems.append(
                    f"config key '{key}': arm {pair[role]!r} trains with "
                    f"{arm.get('advantage_estimator') or cfg['training']['advantage_estimator']!r}, not the pair's "
                    f"estimator {pair['estimator']!r}"
                )
    first = cfg["training"]["cluster"]["first_arm"]
    if first is not None and not (first in arms and arms[first].get("enabled", True)):
        problems.append(
            f"config key 'training.cluster.first_arm': {first!r} is not an enabled arm "
            f"(enabled: {', '.join(n for n, a in arms.items() if a.get('enabled', True))})"
        )
    for j, name in enumerate(sweep["controls"]):
        if name not in arms:
            problems.append(f"config key 'analysis.n_sweep.controls[{j}]': {name!r} is not the name of an arm")
    for j, name in enumerate(sweep["arms"]):
        if name not in arms:
            problems.append(f"config key 'analysis.n_sweep.arms[{j}]': {name!r} is not the name of an arm")
        elif arms[name]["continued_steps"] < sweep["step"]:
            problems.append(
                f"config key 'analysis.n_sweep.step': {sweep['step']} is beyond the continued_steps "
                f"({arms[name]['continued_steps']}) of sweep arm {name!r}"
            )
        else:  # the figure plots the evaluated checkpoints of that step: another step draws an empty plot
            evaluated = _evaluated_steps(cfg, name)
            if evaluated is not None and sweep["step"] not in evaluated:
                problems.append(
                    f"config key 'analysis.n_sweep.step': step {sweep['step']} of sweep arm {name!r} is not "
                    f"evaluated (its evaluated steps: {list(evaluated)}), so the N-sweep figure would be empty"
                )
    return problems


def _evaluated_steps(cfg: dict, name: str) -> tuple[int, ...] | None:
    """The arm's evaluated steps, or None where the recipe cannot be built (reported by the other checks)."""
    from .training.recipe import RecipeError, evaluation_steps

    try:
        return evaluation_steps(cfg, name)
    except (RecipeError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _check_simulation(cfg: dict) -> list[str]:
    sim = cfg["simulation"]
    if sim["correct"] >= sim["vocab"]:
        return [
            f"config key 'simulation.correct': {sim['correct']} must be less than simulation.vocab = "
            f"{sim['vocab']} (token 0, the anchor, is incorrect)"
        ]
    return []


def _check_probe(cfg: dict) -> list[str]:
    """A probe chosen by the start's pass rate needs the start's evaluation of its benchmark."""
    probe = cfg["probe"]
    if not probe["enabled"] or probe["select"] != "start_pass_rate":
        return []
    problems = []
    if probe["benchmark"] not in cfg["evaluation"]["benchmarks"]:
        problems.append(
            f"config key 'probe.benchmark': {probe['benchmark']!r} is not in evaluation.benchmarks, but probe.select "
            "start_pass_rate chooses the probes by the start checkpoint's evaluation of it: add it there, or set "
            "probe.select: first"
        )
    low, high = probe["pass_rate_band"]
    if not low < high:
        problems.append(f"config key 'probe.pass_rate_band': {[low, high]} must be [low, high] with low < high")
    return problems


def _check_in_batch(cfg: dict) -> list[str]:
    """Every in-batch probed step must exist in every arm that trains (a step beyond an arm's end is refused, not
    skipped: the between-arm test pairs the arms step by step)."""
    probe = cfg["probe"]
    steps = probe["in_batch"]["steps"] if probe["enabled"] else []
    return [
        f"config key 'probe.in_batch.steps': step {step} is beyond arm {arm['name']!r}'s "
        f"{arm['continued_steps']} continued steps: lower it or leave it out"
        for arm in cfg["arms"]
        if arm["enabled"]
        for step in steps
        if step > arm["continued_steps"]
    ]


def _check_benchmarks(cfg: dict) -> list[str]:
    """Each benchmark named (evaluation.benchmarks, probe.benchmark) must have its registry entry
    (workflow/benchmarks/<name>.yaml): the registry, not the schema, is the list of benchmarks, so adding one is adding
    its file."""
    from .benchmarks.registry import REGISTRY_DIR, benchmark_names

    known = benchmark_names()
    named = [(f"evaluation.benchmarks[{i}]", name) for i, name in enumerate(cfg["evaluation"]["benchmarks"])]
    named.append(("probe.benchmark", cfg["probe"]["benchmark"]))
    return [
        f"config key '{key}': unknown benchmark {name!r}: no registry entry "
        f"{REGISTRY_DIR / name}.yaml (registered: {', '.join(known)})"
        for key, name in named
        if isinstance(name, str) and name not in known
    ]


def _check_models(cfg: dict) -> list[str]:
    """evaluation.models: names unique among arms and models (they share the {arm} wildcard), not the start
    checkpoint's `base`; one source each (a hub repo with its revision, or a local path); a paper row that exists."""
    from .analysis.paper import checkpoint_key, load_paper, paper_checkpoints

    models, problems = cfg["evaluation"]["models"], []
    problems += _duplicates(_names(models), "evaluation.models", ".name")
    arms = set(_names(cfg["arms"]))
    rows = sorted(checkpoint_key(role, step) for role, step in paper_checkpoints(load_paper()))
    for i, m in enumerate(models):
        where = f"config key 'evaluation.models[{i}]"
        if m["name"] == "base" or m["name"] in arms:
            problems.append(f"{where}.name': {m['name']!r} is taken (by the start checkpoint `base` or an arm)")
        if bool(m["repo_id"]) == bool(m["path"]):
            problems.append(f"{where}': give exactly one of repo_id (the hub, with revision) or path (a local folder)")
        elif m["repo_id"] and not m["revision"]:
            problems.append(
                f"{where}.revision': {m['repo_id']} needs a revision (a commit, or a branch `make pin` locks)"
            )
        if m["paper_row"] is not None and m["paper_row"] not in rows:
            problems.append(
                f"{where}.paper_row': {m['paper_row']!r} is not a row of the paper's Table 1 ({', '.join(rows)})"
            )
    return problems


def _check_logging(cfg: dict) -> list[str]:
    """logging.wandb.group is a template with exactly the field {arm} (one group per arm)."""
    group, where = cfg["logging"]["wandb"]["group"], "config key 'logging.wandb.group'"
    try:
        fields = sorted({name for _, name, _, _ in string.Formatter().parse(group) if name is not None})
    except ValueError as error:
        return [f"{where}: {group!r} is not a template ({error}); write e.g. 'paper-{{arm}}'"]
    if fields != ["arm"]:
        return [
            f"{where}: {group!r} must contain {{arm}} and no other field (found {fields or 'none'}): "
            "each arm needs its own group"
        ]
    return []


_CHECKS = (
    _check_arms,
    _check_training,
    _check_lengths,
    _check_embedded_model,
    _check_embedded_engine,
    _check_unique_entries,
    _check_analysis,
    _check_simulation,
    _check_benchmarks,
    _check_probe,
    _check_in_batch,
    _check_models,
    _check_logging,
)
