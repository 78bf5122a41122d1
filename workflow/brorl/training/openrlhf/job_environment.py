"""What a training job's environment must give before its Ray cluster starts (checks, each returning the problem in
words or None): an interpreter for the code verifier that can judge modern programs, and no container around the
launcher, which drives Slurm."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping


def sandbox_python_problem(python: str, minimum: tuple[int, int] = (3, 8)) -> str | None:
    """Why the code verifier's interpreter (brorl.scoring.sandbox.Limits.python, the node's system Python) cannot
    judge modern solutions, or None: an old system Python would score every such program 0 without a trace."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        )
        version = tuple(int(x) for x in out.stdout.split())
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        return f"{python} does not run ({error})"
    if version < minimum:
        return f"{python} is Python {'.'.join(map(str, version))}, older than {'.'.join(map(str, minimum))}"
    return None


def container_problem(env: Mapping[str, str]) -> str | None:
    """Why a training job cannot run in this process's container, or None: the launcher drives Slurm (squeue,
    scontrol, srun node steps), which `apptainer exec` hides, and its node steps would run outside the image."""
    image = env.get("APPTAINER_CONTAINER") or env.get("SINGULARITY_CONTAINER")
    if not image:
        return None
    return (
        f"train_ppo runs inside the container {image}, where the Slurm client and the srun node steps of its Ray "
        "cluster are not available: run training in its conda environment (--sdm conda apptainer: the rule has no "
        "container) or with the engines on PATH (docs/gpu-software.md#two-ways-to-get-it)"
    )
