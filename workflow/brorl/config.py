"""Load, default-fill and validate the workflow config (config.yaml + workflow/schemas/config.schema.yaml).

The Snakefile calls ``validate_config(config)`` on Snakemake's global ``config`` before any job starts. We do not use
``snakemake.utils.validate``: it stops at the first error, words it as jsonschema's dump of schema and instance, and
fills defaults into required keys too, which hides a missing arm name. Here every problem is collected and named by
its config key (``arms[1].n``), and checks a JSON schema cannot express run as well: unique names here, each section's
cross-key checks by its stage (``brorl.<stage>.config_checks``, none of which imports this module back).
"""

from __future__ import annotations

import copy
import difflib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema

from .analysis import config_checks as analysis
from .benchmarks import config_checks as benchmarks
from .cli import load_yaml
from .evaluation import config_checks as evaluation
from .models import config_checks as models
from .probe import config_checks as probe
from .simulation import config_checks as simulation
from .throughput import config_checks as throughput
from .training import config_checks as training
from .training.estimators import NAMES as ESTIMATOR_NAMES
from .training.recipe import training_engine

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"
# the paper's values, which are also the defaults of the keys it writes (load_schema)
DEFAULT_CONFIG_PATH = Path(__file__).resolve().parents[2] / "config.yaml"


class ConfigError(ValueError):
    """An invalid config; ``problems`` lists one plain-words line per offending key."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid config ({len(self.problems)} problem(s)):\n{lines}")


def load_schema(path: Path | str = SCHEMA_PATH, values: Path | str | None = DEFAULT_CONFIG_PATH) -> dict:
    """Return the config schema as a dict, with the advantage estimators' choices filled in from their one list and
    the defaults of the keys config.yaml writes taken from it (`values`), so each default lives in one place."""
    with open(path, encoding="utf-8") as f:
        schema = load_yaml(f)
    defs = schema.get("$defs", {})
    if "estimator" in defs:
        defs["estimator"]["enum"] = list(ESTIMATOR_NAMES)
        defs["estimator_or_null"]["enum"] = [*ESTIMATOR_NAMES, None]
    if values is not None and Path(values).is_file():
        with open(values, encoding="utf-8") as f:
            _written_defaults(schema, load_yaml(f) or {}, schema)
    return schema


def _written_defaults(node: dict, values: dict, root: dict) -> None:
    """Each value of `values` becomes the default of its property (a shared $ref is copied before it is changed)."""
    properties = node.get("properties") or {}
    for key, value in values.items():
        if key not in properties:
            continue  # an unknown key: the validation names it
        if isinstance(value, dict) and value:
            if "$ref" in properties[key]:
                properties[key] = copy.deepcopy(_resolve(properties[key], root))
            _written_defaults(properties[key], value, root)
        else:
            properties[key]["default"] = copy.deepcopy(value)


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
            loaded = load_yaml(f)
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
    combined = training.append_extra_arms(config)
    _fill_defaults(config.get("arms"), schema["properties"]["arms"], schema)  # the appended arms' own defaults
    analysis.switch_on_sweep(config)
    training.expand_replicates(config)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: _key(e.absolute_path))
    problems = combined + [_describe(e) for e in errors] + _semantic_problems(config)
    if not problems and training_engine(config) == "cluster":
        problems = training.cluster_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


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


def _unique_arms(cfg: dict) -> list[str]:
    return _duplicates(_names(cfg["arms"]), "arms", ".name")


def _unique_entries(cfg: dict) -> list[str]:
    layouts = [(x.get("prompts"), x.get("n")) if isinstance(x, dict) else None for x in cfg["throughput"]["layouts"]]
    return (
        _duplicates(_names(cfg["train_data"]["sources"]), "train_data.sources", ".name")
        + _duplicates(layouts, "throughput.layouts", "")
        + _duplicates(_names(cfg["simulation"]["sensitivity"]["variants"]), "simulation.sensitivity.variants", ".name")
    )


def _unique_models(cfg: dict) -> list[str]:
    return _duplicates(_names(cfg["evaluation"]["models"]), "evaluation.models", ".name")


# Each stage checks its own section (brorl.<stage>.config_checks, none of which imports this module); the order is
# the order of the problems in the message.
_CHECKS = (
    _unique_arms,
    training.check_arms,
    training.check_training,
    models.check_lengths,
    models.check_embedded_model,
    training.check_embedded_engine,
    training.check_cluster_estimators,
    throughput.check_layouts,
    _unique_entries,
    analysis.check_analysis,
    analysis.check_decision,
    simulation.check_simulation,
    benchmarks.check_benchmarks,
    probe.check_probe,
    probe.check_in_batch,
    _unique_models,
    evaluation.check_models,
    training.check_logging,
)
