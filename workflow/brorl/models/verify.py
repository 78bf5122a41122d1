"""``verify_model_dir``: the check every stage runs before it uses a staged model folder.

A folder written by ``download_base_model`` or ``extend_context`` carries ``brorl_manifest.json``, written last, with
the sha256 and size of every file. Verification requires that manifest (a folder without one is an unfinished or
foreign copy), the folder's structure (config, tokenizer, weights, safetensors lengths; ``check_model_dir``), every
listed file with its size and sha256, and no file the manifest does not list (Snakemake's marker aside).
Standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path

from .check import MANIFEST_NAME, ModelError, check_model_dir

# Bookkeeping that tools add to a finished folder and that is no part of the model: Snakemake marks every
# directory() output with this file after the job.
FOREIGN_MARKERS = frozenset({".snakemake_timestamp"})


def verify_model_dir(path: Path | str, architectures: tuple[str, ...] | None = ()) -> dict:
    """Check ``path`` against its manifest (sha256 of every file) and return the manifest; ModelError otherwise.

    ``architectures``: accepted ``config.json`` architectures (empty: any; None: those the pinned vLLM serves).
    """
    folder = Path(path)
    if folder.is_dir() and not (folder / MANIFEST_NAME).is_file():
        raise ModelError(
            f"{folder}: missing {MANIFEST_NAME}: not a completed model stage output (an interrupted "
            "download or copy?); rerun the rule that writes it"
        )
    check_model_dir(folder, architectures)  # structure, JSON files, safetensors lengths, sizes and sha256
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    listed = set(manifest["files"])
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    present -= {MANIFEST_NAME, *FOREIGN_MARKERS}
    unlisted = sorted(present - listed)
    if unlisted:
        raise ModelError(
            f"{folder}: file(s) not in {MANIFEST_NAME}: {', '.join(unlisted)} (model folders are written "
            "once; something added files after the manifest)"
        )
    return manifest
