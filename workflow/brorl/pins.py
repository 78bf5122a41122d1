"""Pinned hub revisions: a paper run downloads the start checkpoint and every dataset at a 40-hex commit hash.

A branch or tag (``main``) can move between the day a run starts and the day someone reruns it, so an unpinned
download is refused unless the config says ``allow_unpinned: true``; planning (``snakemake -n``) never downloads
and is not affected. Pure: no network, no files.
"""

from __future__ import annotations

import re

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
