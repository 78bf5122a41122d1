"""envs/train.post-deploy.sh's DeepSpeed line, run as it stands in the file, really rebuilds DeepSpeed with its ops.

DeepSpeed 0.19.6 is an sdist. `conda env create` builds it once from envs/train.yaml's pip section with no torch and no
DS_* variables, so without ops, and pip caches that wheel; a later install of the same file takes the cached wheel,
--force-reinstall or not. Here a stand-in sdist of the same name records DS_ACCELERATOR and DS_BUILD_FUSED_ADAM when
it is built (an in-tree PEP 517 backend, so it builds in a bare venv without setuptools), served from a local
directory as the only index; it is first built and cached as environment creation would, then the script's line runs
in the same environment with the same cache."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

from helpers import ROOT

BACKEND = textwrap.dedent(
    """
    import base64, hashlib, os, zipfile

    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        accelerator = os.environ.get("DS_ACCELERATOR", "cpu")  # what DeepSpeed's setup.py records, at build time
        ops = {"fused_adam": os.environ.get("DS_BUILD_FUSED_ADAM") == "1"}
        info = "deepspeed-0.19.6.dist-info"
        files = {
            "deepspeed/__init__.py": "",
            "deepspeed/git_version_info.py": f"accelerator_name = {accelerator!r}\\ninstalled_ops = {ops!r}\\n",
            info + "/METADATA": "Metadata-Version: 2.1\\nName: deepspeed\\nVersion: 0.19.6\\n",
            info + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
        }
        name = "deepspeed-0.19.6-py3-none-any.whl"
        record = []
        with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
            for path, text in files.items():
                wheel.writestr(path, text)
                digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
                record.append(f"{path},sha256={digest},{len(text)}")
            wheel.writestr(info + "/RECORD", "\\n".join([*record, info + "/RECORD,,"]) + "\\n")
        return name
    """
)


def _sdist(folder: Path) -> Path:
    source = folder / "src" / "deepspeed-0.19.6"
    source.mkdir(parents=True)
    (source / "backend.py").write_text(BACKEND)
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (source / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: deepspeed\nVersion: 0.19.6\n")
    dist = folder / "dist"
    dist.mkdir()
    with tarfile.open(dist / "deepspeed-0.19.6.tar.gz", "w:gz") as tar:
        tar.add(source, arcname="deepspeed-0.19.6")
    return dist


def _built_record(python: Path) -> str:
    code = "import deepspeed.git_version_info as g; print(g.accelerator_name, g.installed_ops['fused_adam'])"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_post_deploy_rebuilds_deepspeed_past_pips_cached_wheel(tmp_path):
    line = next(
        text
        for text in (ROOT / "envs" / "train.post-deploy.sh").read_text().splitlines()
        if "deepspeed==0.19.6" in text and not text.lstrip().startswith("#")
    )
    dist = _sdist(tmp_path)
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", env_dir], check=True, timeout=120)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "DS_", "VIRTUAL_ENV"))},
        "PATH": os.pathsep.join([str(env_dir / "bin"), os.environ["PATH"]]),
        "PIP_CACHE_DIR": str(tmp_path / "pip-cache"),  # pip's persistent cache, shared by both installs
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(dist),  # the only index: the stand-in sdist
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    # environment creation: built once without the DS_* variables, cached
    first = ["python", "-m", "pip", "install", "--no-build-isolation", "deepspeed==0.19.6"]
    subprocess.run(first, env=env, capture_output=True, text=True, check=True, timeout=300)
    assert _built_record(env_dir / "bin" / "python") == "cpu False"
    assert list((tmp_path / "pip-cache").rglob("deepspeed-0.19.6-*.whl")), "the first build was not cached"
    # the post-deploy's line, as the script has it
    run = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _built_record(env_dir / "bin" / "python") == "cuda True", f"{line!r} reinstalled the cached wheel"


def test_max_jobs_follows_the_build_hosts_memory(tmp_path):
    """flash-attn's compile needs ~9 GB per job (its setup.py): MAX_JOBS is one per 9 GB available, at least one
    and at most the cores, unless set; 8 fixed jobs were killed on a 64 GB build host."""
    script = (ROOT / "envs" / "train.post-deploy.sh").read_text()
    block = script.split("# --- MAX_JOBS", 1)[1].split("# --- end MAX_JOBS", 1)[0]
    meminfo = tmp_path / "meminfo"

    def max_jobs(available_kb: int, preset: str | None = None, cores: int = 64) -> str:
        meminfo.write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available_kb} kB\n")
        nproc = tmp_path / "bin" / "nproc"
        nproc.parent.mkdir(exist_ok=True)
        nproc.write_text(f"#!/bin/sh\necho {cores}\n")
        nproc.chmod(0o755)
        env = {"PATH": f"{nproc.parent}:{os.environ['PATH']}", "BRORL_MEMINFO": str(meminfo)}
        if preset is not None:
            env["MAX_JOBS"] = preset
        proc = subprocess.run(["bash", "-c", block + 'echo "$MAX_JOBS"'], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    gib = 1024 * 1024
    assert max_jobs(64 * gib) == "7"  # a 64 GB host: 7 jobs, not 8
    assert max_jobs(4 * gib) == "1"  # never below one
    assert max_jobs(1000 * gib, cores=16) == "16"  # never above the cores
    assert max_jobs(64 * gib, preset="3") == "3"  # a site's own setting wins
