"""Which model architectures generation can serve: the text-generation models of the pinned vLLM's registry
(vllm/model_executor/models/registry.py, `_TEXT_GENERATION_MODELS`, read from the installed release by
``registry_architectures`` and kept in vllm_architectures.txt so that the Snakemake driver, which has no vLLM, can
check a checkpoint before any GPU job; tests/models/test_architectures.py compares the two)."""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

LIST = Path(__file__).with_name("vllm_architectures.txt")
VLLM_VERSION = "0.29.0"  # the release the list was read from (envs/eval.yaml's pin)


@cache
def served_architectures() -> frozenset[str]:
    """The architectures (config.json `architectures`) vLLM VLLM_VERSION generates text with."""
    lines = LIST.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def registry_architectures(registry_py: Path) -> set[str]:
    """The keys of `_TEXT_GENERATION_MODELS` in a vLLM registry.py, read without importing vLLM."""
    tree = ast.parse(Path(registry_py).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        target = getattr(node, "target", None)
        if isinstance(target, ast.Name):
            targets.append(target.id)
        if "_TEXT_GENERATION_MODELS" in targets and isinstance(node.value, ast.Dict):
            return {ast.literal_eval(key) for key in node.value.keys if key is not None}
    raise ValueError(f"{registry_py}: no _TEXT_GENERATION_MODELS mapping")


def architecture_problem(config: dict, where: str) -> str | None:
    """Why vLLM cannot generate with a checkpoint of this config.json, or None."""
    archs = config.get("architectures") or []
    if not archs:
        return f"{where}: config.json names no architecture, so vLLM cannot choose a model class for it"
    if not set(archs) & served_architectures():
        return (
            f"{where}: architecture {', '.join(archs)} is not a text-generation model of vLLM {VLLM_VERSION} "
            f"({len(served_architectures())} are, e.g. Qwen2ForCausalLM, LlamaForCausalLM; list: {LIST.name})"
        )
    return None


def folder_architecture_problem(folder: Path | str) -> str | None:
    """architecture_problem of a local checkpoint folder's config.json (a missing file is the download's to report)."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"{folder}: config.json cannot be read ({error})"
    return architecture_problem(config, str(folder))
