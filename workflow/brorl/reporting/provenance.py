"""Where a result came from: git commit, package versions, python, machine, time.

Light on purpose: only the standard library is imported (package versions come from importlib.metadata, so
torch, numpy and friends are never imported just to read their version). Nothing here raises: a missing git,
a non-git checkout or an unreadable /proc yields None for that field.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

# Distributions whose versions decide the numbers of some stage (missing ones are reported as None).
PACKAGES = (
    "torch",
    "numpy",
    "pandas",
    "scipy",
    "pyarrow",
    "matplotlib",
    "seaborn",
    "snakemake",
    "vllm",
    "openrlhf",
    "transformers",
    "math-verify",
    "reasoning-gym",
    "brorl-repro",
)


def sha256_file(path: Path | str) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks (manifests and checksums across stages)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _git(args: list[str], cwd: Path) -> str | None:
    """Output of one git command run in ``cwd``, or None when git is absent or the command fails."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_state(path: Path | None = None) -> dict:
    """Commit and dirty flag of the git checkout holding ``path`` (default: this file); None when not one."""
    here = (path or Path(__file__)).resolve()
    cwd = here if here.is_dir() else here.parent
    commit = _git(["rev-parse", "HEAD"], cwd)
    if not commit:
        return {"commit": None, "dirty": None, "root": None}
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return {
        "commit": commit,
        "dirty": None if status is None else bool(status),
        "root": _git(["rev-parse", "--show-toplevel"], cwd),
    }


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution, None when it is not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
        except Exception:  # a broken install must not break a run's provenance
            versions[name] = None
    return versions


def _cpu_model() -> str | None:
    """The CPU model name from /proc/cpuinfo (Linux), else platform.processor(), else None."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict:
    """Platform string, architecture, CPU model, usable CPU count and host name."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "hostname": platform.node() or None,
    }


def provenance(extra: dict | None = None) -> dict:
    """JSON-serialisable record of code version, package versions, python, machine and UTC time, plus ``extra``."""
    record = {
        "git": git_state(),
        "packages": package_versions(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "machine": machine(),
        "timestamp_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if extra:
        record.update(extra)
    return record
