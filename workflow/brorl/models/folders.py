"""Writing model folders safely: a partial folder beside the target, renamed into place only when complete, and
hard links for large files (weights are never duplicated on disk when source and target share a file system)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def partial_folder(out: Path) -> Path:
    """A fresh, empty work folder beside ``out`` (hidden; a leftover from a killed run is removed first)."""
    tmp = out.with_name(f".{out.name}.partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def replace_folder(tmp: Path, out: Path) -> Path:
    """Rename the complete ``tmp`` to ``out``, replacing an older ``out``; a reader never sees a half-written one."""
    os.chmod(tmp, 0o755)
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)
    return out


def link_or_copy(src: Path, dst: Path, link: bool = True) -> str:
    """Hard-link ``src`` (symlinks resolved, as in the hub cache) to ``dst``, or copy it when linking is off or not
    possible (another file system); return "hardlink" or "copy"."""
    src = src.resolve()
    dst.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(src, dst)
            return "hardlink"
        except OSError:  # EXDEV (another file system), EPERM (protected_hardlinks), ...: copy instead
            pass
    shutil.copyfile(src, dst)
    return "copy"


def staged_base_model(config: dict) -> Path:
    """Where download_base_model stages the hub start checkpoint, relative to the working directory:
    resources/models/<repo name> (workflow/rules/common.smk, base_model_dir)."""
    return Path("resources") / "models" / str(config["base_model"]["repo_id"]).split("/")[-1]
