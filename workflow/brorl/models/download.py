"""``download_base_model``: stage the start checkpoint as ``resources/models/<name>/`` with a manifest.

One path for every source: the hub (``hub_snapshot``: huggingface_hub's ``snapshot_download`` of the needed files at
a revision, into a cache that resumes an interrupted download), a local folder (``base_model.local_path`` on an
offline cluster) or the tiny model built offline. Each is then staged by ``stage_model``: the needed files
(brorl.models.files) go into a partial folder (weights hard-linked when possible, other files copied), its structure
is checked (config, tokenizer, every shard of the index, safetensors lengths: a partial download stops here), the
manifest with the sha256 and size of every file, the source and provenance is written last, and the folder is
renamed into place.
Later stages call ``verify_model_dir`` on it. HF_TOKEN is read from the environment only.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from ..hub.pins import UnpinnedRevisionError, is_pinned, require_pinned
from ..hub.retry import call_hub
from .check import MANIFEST_NAME, ModelError, check_model_dir, manifest_hash, write_manifest
from .files import ALLOW_PATTERNS, select_files
from .folders import link_or_copy, partial_folder, replace_folder
from .verify import FOREIGN_MARKERS


def hub_snapshot(repo_id: str, revision: str, cache_dir: Path | str | None, retries: int = 3) -> tuple[Path, str]:
    """Download the needed files of ``repo_id`` at ``revision`` into the hub cache; return the snapshot folder and
    the resolved commit. ``retries`` tries in all (brorl.hub.retry: the only retry layer, with backoff; a missing
    repository, revision or token and an offline hub fail at once); huggingface_hub resumes partial files."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as e:
        raise ModelError("hub downloads need the huggingface_hub package (pip install huggingface_hub)") from e

    def download() -> str:
        return snapshot_download(
            repo_id=repo_id,
            revision=revision,
            cache_dir=cache_dir,
            allow_patterns=list(ALLOW_PATTERNS),
            token=os.environ.get("HF_TOKEN") or None,
        )

    path = Path(call_hub(download, f"{repo_id}@{revision}", retries, ModelError))
    return path, path.name  # the cache keeps a snapshot as .../snapshots/<commit>/


def _source_files(source: Path) -> list[str]:
    """Every file under ``source`` (relative POSIX paths), except its manifest, Snakemake's marker and hub-cache
    bookkeeping."""
    names, skip = [], {MANIFEST_NAME, *FOREIGN_MARKERS}
    for p in sorted(source.rglob("*")):
        rel = p.relative_to(source).as_posix()
        if (p.is_file() or p.is_symlink()) and rel not in skip and not rel.startswith(".cache/"):
            names.append(rel)
    return names


def stage_model(source: Path | str, out: Path | str, origin: dict, link: bool = True) -> dict:
    """Stage the needed files of the model folder ``source`` as ``out`` with a manifest; return the manifest.

    A source with its own manifest (the tiny build, an earlier stage) is verified first, so a corrupt copy is never
    propagated. ``origin`` (repo, revision, resolved commit, kind) goes into the manifest's ``source``.
    """
    from tqdm import tqdm

    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise ModelError(f"{source}: model source folder does not exist")
    source_info = {**origin, "path": str(source)}
    if (source / MANIFEST_NAME).is_file():
        check_model_dir(source, architectures=())  # every file its manifest lists, with its sha256
        source_manifest = json.loads((source / MANIFEST_NAME).read_text(encoding="utf-8"))
        source_info["manifest_hash"] = manifest_hash(source)
        source_info["manifest"] = {k: v for k, v in source_manifest.items() if k != "files"}
    kept, excluded = select_files(_source_files(source))
    if "config.json" not in kept:
        raise ModelError(f"{source}: no config.json: not a Hugging Face model folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_folder(out)
    try:
        methods = set()
        for name in tqdm(kept, desc=f"staging {out.name}", unit="file", file=sys.stderr):
            # weights are hard-linked (never duplicated on disk); small files copied, so no edit reaches the source
            methods.add(link_or_copy(source / name, tmp / name, link=link and name.endswith(".safetensors")))
        try:
            check_model_dir(tmp, architectures=())  # missing shard, truncated weights, corrupt JSON: never used
        except ModelError as e:
            raise ModelError(f"{source}: incomplete or corrupt model ({e}); nothing was written to {out}") from e
        manifest = write_manifest(
            tmp,
            {
                "stage": "download_base_model",
                "source": source_info,
                "excluded_files": excluded,
                "materialized": "+".join(sorted(methods)),
            },
        )
        replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename; a failed attempt leaves nothing behind
    return manifest


def download_base_model(
    out: Path | str,
    repo_id: str,
    revision: str,
    local_path: Path | str | None = None,
    cache_dir: Path | str | None = None,
    retries: int = 3,
    link: bool = True,
    allow_unpinned: bool = False,
    config_key: str = "base_model.revision",
) -> dict:
    """The start checkpoint (or a checkpoint of evaluation.models) at ``out``: from ``local_path`` when given, else
    ``repo_id``@``revision`` from the hub (refused unless ``revision`` is a commit hash or ``allow_unpinned``:
    brorl.hub.pins; the refusal names ``config_key``)."""
    if local_path is not None:
        origin = {"kind": "local", "repo_id": repo_id, "revision": revision, "resolved_commit": None}
        return stage_model(local_path, out, origin, link=link)
    try:
        warning = require_pinned(
            repo_id, revision, repo_type="model", config_key=config_key, allow_unpinned=allow_unpinned
        )
    except UnpinnedRevisionError as e:
        raise ModelError(str(e)) from e
    if warning:
        print(warning, file=sys.stderr)
    folder, commit = hub_snapshot(repo_id, revision, cache_dir, retries)
    if is_pinned(revision) and commit != revision:
        raise ModelError(f"{repo_id}@{revision}: the hub returned commit {commit}, not the pinned one")
    origin = {
        "kind": "hub",
        "repo_id": repo_id,
        "revision": revision,
        "resolved_commit": commit,
        "revision_pinned": warning is None,
    }
    return stage_model(folder, out, origin, link=link)


def manifest_summary(manifest: dict) -> str:
    """One line for logs: files, bytes, source."""
    files = manifest["files"]
    src = manifest.get("source", {})
    where = src.get("resolved_commit") or src.get("path")
    return (
        f"{len(files)} files, {sum(f['bytes'] for f in files.values()) / 2**20:.1f} MiB, "
        f"from {src.get('kind')} {src.get('repo_id')} ({where})"
        + (f", excluded {len(manifest['excluded_files'])}" if manifest.get("excluded_files") else "")
    )


__all__ = ["download_base_model", "hub_snapshot", "is_pinned", "stage_model", "manifest_summary"]
