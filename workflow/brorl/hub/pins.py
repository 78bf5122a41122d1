"""Pinned hub revisions: a paper run downloads the start checkpoint and every dataset at a 40-hex commit hash.

A branch or tag (``main``) can move between the day a run starts and the day someone reruns it, so an unpinned
download is refused unless the config says ``allow_unpinned: true``. The workflow checks every hub source of a run
before it submits anything (`hub_sources`, `unpinned_report`: workflow/rules/hooks.smk stops the run at its start;
`snakemake -n` and `make plan` print the same list as a warning and stay usable for planning). Pure: no network,
no files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

COMMIT_RE = re.compile(r"[0-9a-f]{40}")


class UnpinnedRevisionError(ValueError):
    """A hub download asked for a branch, tag or nothing instead of a commit hash."""


def is_pinned(revision: str | None) -> bool:
    """True when ``revision`` is a full 40-hex commit hash (a branch or tag can move under a finished run)."""
    return revision is not None and COMMIT_RE.fullmatch(revision) is not None


def how_to_pin(repo_id: str, revision: str | None, repo_type: str) -> str:
    """One command that prints the commit a branch resolves to now, and where the hub lists the commits."""
    kind = "model" if repo_type == "model" else "dataset"
    prefix = "" if repo_type == "model" else "datasets/"
    rev = revision or "main"
    return (
        f"python -c \"from huggingface_hub import HfApi; print(HfApi().{kind}_info('{repo_id}', "
        f"revision='{rev}').sha)\" (or the commit list at https://huggingface.co/{prefix}{repo_id}/commits/{rev})"
    )


def require_pinned(
    repo_id: str, revision: str | None, *, repo_type: str, config_key: str, allow_unpinned: bool
) -> str | None:
    """None for a pinned revision; a warning to print when unpinned but allowed; UnpinnedRevisionError otherwise."""
    if is_pinned(revision):
        return None
    shown = revision or "main (no revision given)"
    if not allow_unpinned:
        raise UnpinnedRevisionError(
            f"{repo_id}@{shown} is not pinned to a 40-hex commit hash, so a rerun could get other "
            f"{'weights' if repo_type == 'model' else 'data'}. Set {config_key} to the commit: "
            f"{how_to_pin(repo_id, revision, repo_type)}. To download it unpinned anyway (the commit it resolves to "
            "is recorded in the manifest), set allow_unpinned: true in the config."
        )
    return (
        f"WARNING: {repo_id}@{shown} is not pinned (allow_unpinned: true): the branch or tag can move, so a "
        f"rerun may get other {'weights' if repo_type == 'model' else 'data'}. The commit it resolves to is "
        f"recorded in the manifest; pin {config_key} to it for a paper run."
    )


@dataclass(frozen=True)
class HubSource:
    """One hub download a run would make: where the config names it, what, at which revision."""

    config_key: str
    repo_id: str
    revision: str | None
    repo_type: str  # "model" or "dataset"


def hub_sources(
    config: Mapping[str, Any],
    benchmarks: Mapping[str, Any],
    uses_hub: Callable[[str], bool],
    training: bool,
    base_model: bool = True,
) -> list[HubSource]:
    """The hub downloads of a run of `config`: the start checkpoint (cluster engine, no local copy; when
    `base_model`), the training mix's hub datasets (when `training`), each hub checkpoint of evaluation.models, and
    each evaluated benchmark that `uses_hub`
    (its registry entry in `benchmarks`; a local copy, when present, is used instead)."""
    sources = []
    base = config["base_model"]
    if base_model and config["engine"] != "embedded" and not base.get("local_path") and base.get("repo_id"):
        sources.append(HubSource("base_model.revision", base["repo_id"], base.get("revision"), "model"))
    if training:
        for src in config["train_data"]["sources"]:
            if src["dataset"] != "reasoning_gym" and not src["dataset"].startswith("synthetic:"):
                key = f"train_data.sources[{src['name']}].revision"
                sources.append(HubSource(key, src["dataset"], src.get("revision"), "dataset"))
    for i, model in enumerate(config["evaluation"].get("models", [])):
        if model.get("repo_id") and not model.get("path"):
            key = f"evaluation.models[{i}].revision"
            sources.append(HubSource(key, model["repo_id"], model.get("revision"), "model"))
    for name in config["evaluation"]["benchmarks"]:
        hub = benchmarks[name].source("hub")
        if hub is not None and uses_hub(name):
            key = f"{benchmarks[name].path} (sources: kind hub: revision)"
            sources.append(HubSource(key, hub.repo_id, hub.revision, "dataset"))
    return sources


def unpinned_report(sources: list[HubSource]) -> str:
    """The unpinned ones of `sources`, one paragraph each with how to pin it (empty when all are pinned)."""
    lines = [
        f"  - {s.repo_id}@{s.revision or 'main (no revision given)'} ({s.config_key}): "
        + how_to_pin(s.repo_id, s.revision, s.repo_type)
        for s in sources
        if not is_pinned(s.revision)
    ]
    if not lines:
        return ""
    return (
        f"{len(lines)} hub source(s) of this run are not pinned to a 40-hex commit (a rerun could get other weights "
        "or data):\n"
        + "\n".join(lines)
        + "\nPin each (the printed command resolves a branch to its commit; `make pin` "
        "resolves every config key at once into pins.lock.yaml, which the workflow reads), or "
        "set allow_unpinned: true to download them as they are now (the commits are then recorded in the manifests)."
    )
