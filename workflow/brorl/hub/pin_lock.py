"""The pin lock: `make pin` (python -m brorl.hub.pin_resolve) asks the hub which commit each branch of the run's
hub sources points at now and writes pins.lock.yaml beside config.yaml; the workflow, the plan and the preflight
read it, so the config's branch names download at those commits and the pin gate (brorl.hub.pins) opens.

Only config keys are locked (base_model.revision, evaluation.models[*].revision,
train_data.sources[*].revision): a benchmark's hub revision
lives in its registry YAML, a project file, and is pinned there. The lock's keys name the repository and the
branch it replaced, so editing a config revision (another branch or a commit) makes its entry inert, never wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from .pins import HubSource, is_pinned

LOCK_NAME = "pins.lock.yaml"
ROOT = Path(__file__).resolve().parents[3]


def lock_key(repo_type: str, repo_id: str, revision: str | None) -> str:
    return f"{repo_type}/{repo_id}@{revision or 'main'}"


def read_lock(path: Path) -> dict[str, str]:
    """The lock's commit per `lock_key`; {} when there is no lock file."""
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    pins = data.get("pins") or {}
    bad = [k for k, v in pins.items() if not is_pinned(str(v))]
    if bad:
        raise ValueError(f"{path}: not a 40-hex commit for {bad}; rerun `make pin`")
    return {str(k): str(v) for k, v in pins.items()}


def read_lock_data(path: Path) -> dict[str, Any]:
    """The whole lock file ({"pins": ..., "identity": ...}); {} without one."""
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def read_identity(path: Path) -> dict[str, dict]:
    """The lock's `identity:` records (brorl.hub.checkpoint_identity) per model commit; {} without a lock."""
    return dict(read_lock_data(path).get("identity") or {})


def apply_lock(config: dict[str, Any], lock: Mapping[str, str]) -> list[str]:
    """Set each unpinned config revision that the lock resolves (in place); returns the config keys it pinned."""
    applied = []
    base = config["base_model"]
    key = lock_key("model", base.get("repo_id") or "", base.get("revision"))
    if base.get("repo_id") and not is_pinned(base.get("revision")) and key in lock:
        base["revision"] = lock[key]
        applied.append("base_model.revision")
    for i, model in enumerate(config["evaluation"].get("models", [])):
        key = lock_key("model", model.get("repo_id") or "", model.get("revision"))
        if model.get("repo_id") and not is_pinned(model.get("revision")) and key in lock:
            model["revision"] = lock[key]
            applied.append(f"evaluation.models[{i}].revision")
    for src in config["train_data"]["sources"]:
        key = lock_key("dataset", src["dataset"], src.get("revision"))
        if not is_pinned(src.get("revision")) and key in lock:
            src["revision"] = lock[key]
            applied.append(f"train_data.sources[{src['name']}].revision")
    return applied


def apply_lock_file(config: dict[str, Any], root: Path = ROOT) -> list[str]:
    """apply_lock with <root>/pins.lock.yaml (nothing when it does not exist)."""
    return apply_lock(config, read_lock(root / LOCK_NAME))


def resolve(sources: list[HubSource], commit_of: Callable[[str, str | None, str], str]) -> dict[str, str]:
    """The commit of every unpinned config source (benchmarks' registry revisions are left to their YAML)."""
    return {
        lock_key(s.repo_type, s.repo_id, s.revision): commit_of(s.repo_id, s.revision, s.repo_type)
        for s in sources
        if not is_pinned(s.revision) and not s.config_key.endswith("(sources: kind hub: revision)")
    }


def hub_commit(repo_id: str, revision: str | None, repo_type: str) -> str:
    """The commit `revision` of `repo_id` points at now (HF_ENDPOINT and HF_TOKEN are honoured)."""
    from huggingface_hub import HfApi

    api = HfApi()
    info = api.model_info if repo_type == "model" else api.dataset_info
    return info(repo_id, revision=revision or "main").sha
