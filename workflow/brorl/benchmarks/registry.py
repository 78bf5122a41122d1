"""The benchmark registry: one YAML file per benchmark under workflow/benchmarks/, checked against
workflow/schemas/benchmark.schema.yaml.

A benchmark is data (source, field mapping, prompt template, scorer, samples, expected size), not code: adding one
is adding a file. ``load_registry()`` reads and checks every file and names the file and key of each problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

from ..cli import load_yaml

REGISTRY_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "benchmark.schema.yaml"
MATH_SUFFIX = "Let's think step by step and output the final answer within \\boxed{}."


class RegistryError(ValueError):
    """A malformed registry entry; the message names the file and the key."""


@dataclass(frozen=True)
class Source:
    """One place the items can come from (see the schema's $defs/source)."""

    kind: str
    path: str | None = None
    repo_id: str | None = None
    revision: str | None = None
    filename: str | None = None
    split: str | None = None
    license: str | None = None
    fields: dict = field(default_factory=dict)
    filter: dict = field(default_factory=dict)
    choices: dict | None = None
    strip_suffix: str | None = None
    generator: str | None = None
    seed: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class BenchmarkSpec:
    """A checked registry entry."""

    name: str
    family: str
    version: int
    description: str
    sources: tuple[Source, ...]
    prompt_template: str
    scorer: str
    n_samples: int
    expected_rows: int | None
    category: str | None = None
    tasks: int | None = None  # Reasoning Gym: tasks of the category (the workflow counts problems without the library)
    path: Path | None = None

    def source(self, kind: str) -> Source | None:
        """The first source of this kind, None when the entry has none."""
        return next((s for s in self.sources if s.kind == kind), None)

    def render_prompt(self, problem: str) -> str:
        """The prompt for one problem: plain replacement, so braces in the template stay as written."""
        text = self.prompt_template
        if "{rg_system_prompt}" in text:
            from reasoning_gym.utils import SYSTEM_PROMPTS

            text = text.replace("{rg_system_prompt}", SYSTEM_PROMPTS["default"].rstrip("\n"))
        return text.replace("{problem}", problem)


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


@lru_cache(maxsize=1)
def _schema() -> dict:
    return load_yaml(SCHEMA_PATH.read_text(encoding="utf-8"))


def _semantic_problems(entry: dict, stem: str) -> list[str]:
    """Checks across keys that the schema cannot express."""
    problems = []
    if entry["name"] != stem:
        problems.append(f"key 'name': {entry['name']!r} differs from the file name {stem!r}")
    if entry["scorer"] != entry["family"]:
        problems.append(f"key 'scorer': {entry['scorer']!r} does not score family {entry['family']!r}")
    if entry["family"] == "math" and MATH_SUFFIX not in entry["prompt_template"]:
        problems.append(f"key 'prompt_template': a math prompt must end with {MATH_SUFFIX!r}")
    if entry["family"] == "reasoning_gym":
        if "category" not in entry:
            problems.append("key 'category': required for a reasoning_gym benchmark")
        if "tasks" not in entry:
            problems.append("key 'tasks': required for a reasoning_gym benchmark (tasks of its category)")
        if [s["kind"] for s in entry["sources"]] != ["reasoning_gym"]:
            problems.append("key 'sources': a reasoning_gym benchmark has exactly one source of kind reasoning_gym")
    kinds = [s["kind"] for s in entry["sources"]]
    if "synthetic" in kinds:
        if kinds != ["synthetic"]:
            problems.append("key 'sources': a synthetic benchmark has exactly one source of kind synthetic")
        if entry["expected_rows"] is None:
            problems.append("key 'expected_rows': a synthetic benchmark needs its item count")
    need = {
        "local": ("path", "fields"),
        "hub": ("repo_id", "filename", "fields"),
        "reasoning_gym": (),
        "synthetic": ("generator", "seed"),
    }
    target = {"math": "answer", "code": "tests", "stem": "answer"}.get(entry["family"])
    for i, src in enumerate(entry["sources"]):
        for key in need[src["kind"]]:
            if key not in src:
                problems.append(f"key 'sources[{i}].{key}': required for a {src['kind']} source")
        fields = src.get("fields", {})
        if "choices" in src and "answer" in fields:
            problems.append(f"key 'sources[{i}].fields.answer': a multiple-choice source's answer is the letter")
        if target and "fields" in src and target not in fields and not (target == "answer" and "choices" in src):
            problems.append(f"key 'sources[{i}].fields.{target}': required for family {entry['family']!r}")
        if entry["family"] == "instruction_following" and "fields" in src:
            for key in ("instruction_id_list", "kwargs"):  # the IFEval checker's inputs, read from metadata
                if key not in fields.get("metadata", []):
                    problems.append(f"key 'sources[{i}].fields.metadata': must list {key!r} (instruction following)")
    return problems


def load_entry(path: Path | str) -> BenchmarkSpec:
    """Read and check one registry file; RegistryError names the file and every offending key."""
    path = Path(path)
    try:
        entry = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise RegistryError(f"{path}: cannot read the benchmark entry: {e}") from e
    if not isinstance(entry, dict):
        raise RegistryError(f"{path}: top level must be a mapping of keys, not {type(entry).__name__}")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(entry), key=lambda e: _key(e.absolute_path))
    problems = [f"key '{_key(e.absolute_path)}': {e.message}" for e in errors]
    if not problems:
        problems = _semantic_problems(entry, path.stem)
    if problems:
        raise RegistryError(f"{path}: invalid benchmark entry:\n" + "\n".join(f"  - {p}" for p in problems))
    sources = tuple(Source(**s) for s in entry.pop("sources"))
    return BenchmarkSpec(sources=sources, path=path, **entry)


def load_registry(directory: Path | str = REGISTRY_DIR) -> dict[str, BenchmarkSpec]:
    """Every benchmark entry of ``directory`` by name, each checked; RegistryError on the first bad file."""
    directory = Path(directory)
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise RegistryError(f"{directory}: no benchmark entries (*.yaml) found")
    return {spec.name: spec for spec in map(load_entry, files)}


def benchmark_names(directory: Path | str = REGISTRY_DIR) -> list[str]:
    """Names of the registered benchmarks (file stems; cheap, no validation)."""
    return sorted(p.stem for p in Path(directory).glob("*.yaml"))
