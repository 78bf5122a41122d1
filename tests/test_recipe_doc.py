"""docs/recipe.md, the provenance of every recipe value, kept in step with config.yaml and the extension presets: each
row's value is the one a run gets (config.yaml over the schema's defaults, or the preset the key names), and every
value written in config.yaml or an extension preset's arms has a row."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from brorl.config import load_yaml_config

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "recipe.md"
PRESETS = ROOT / "workflow" / "presets"
ROW = re.compile(r"^\| `([^`]+)` \| ?(?:`(.*)`)? ?\| (.*) \|$")


def rows() -> dict[str, str | None]:
    """key -> the value column's YAML text (None for a section's row)."""
    out = {}
    for line in RECIPE.read_text().splitlines():
        match = ROW.match(line)
        if match:
            out[match[1]] = match[2].replace("\\|", "|") if match[2] is not None else None
    return out


def tokens(path: str) -> list[str | int]:
    """`a.b[1].c` -> ["a", "b", 1, "c"]."""
    return [int(t[1:-1]) if t.startswith("[") else t for t in re.findall(r"\[\d+\]|[^.\[\]]+", path)]


def lookup(node: Any, path: str) -> Any:
    for token in tokens(path):
        node = node[token]
    return node


def leaves(node: Any, path: str = "") -> list[str]:
    """Every scalar's path, through mappings and lists of mappings (a list of scalars is one value)."""
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        return [leaf for i, x in enumerate(node) for leaf in leaves(x, f"{path}[{i}]")]
    return [path]


def written_values() -> dict[str, Any]:
    """What config.yaml and the extension presets' arms write, by key."""
    written = {"": yaml.safe_load((ROOT / "config.yaml").read_text())}
    for preset in sorted(PRESETS.glob("*.yaml")):
        extra = (yaml.safe_load(preset.read_text()) or {}).get("extra_arms") or {}
        if preset.stem in extra:
            written[f"extra_arms.{preset.stem}"] = extra[preset.stem]
    return written


def test_the_path_grammar():
    assert tokens("train_data.sources[2].revision") == ["train_data", "sources", 2, "revision"]
    assert leaves({"a": [{"b": 1}, {"c": [1, 2]}], "d": {"e": None}}) == ["a[0].b", "a[1].c", "d.e"]


def test_each_rows_value_is_what_a_run_gets():
    """As written where config.yaml or the preset writes it; else the schema's default a run gets."""
    config = load_yaml_config(ROOT / "config.yaml")
    written = written_values()
    wrong = []
    for key, text in rows().items():
        if text is None:
            continue
        head = next((p for p in written if p and key.startswith(p + "[")), "")
        try:
            actual = lookup(written[head], key[len(head) :])
        except (KeyError, IndexError):
            actual = lookup(config, key)
        if yaml.safe_load(text) != actual:
            wrong.append(f"{key}: docs/recipe.md says {text}, the run gets {actual!r}")
    assert not wrong, "\n".join(wrong)


def test_every_written_value_has_a_row():
    keys = set(rows())
    missing = []
    for prefix, node in written_values().items():
        for leaf in leaves(node):
            path = f"{prefix}{leaf}" if leaf.startswith("[") or not prefix else f"{prefix}.{leaf}"
            covered = path in keys or any(path.startswith(k + "[") or path.startswith(k + ".") for k in keys)
            if not covered:
                missing.append(path)
    assert not missing, f"values without a row in docs/recipe.md: {missing}"


def test_config_yaml_stays_short_and_its_comments_fit_100_characters():
    lines = (ROOT / "config.yaml").read_text().splitlines()
    assert len(lines) <= 300
    assert [line for line in lines if len(line) > 100] == []
