"""What a training job's environment must give before its Ray cluster starts (a check returning the problem in words
or None): no container around the launcher, which drives Slurm. The code verifier's interpreter is checked by
brorl.scoring.sandbox.sandbox_python_problem."""

from __future__ import annotations

from collections.abc import Mapping


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
