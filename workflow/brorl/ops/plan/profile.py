"""Read the SLURM profile (resources per rule) and the plan's estimates, the way Snakemake reads the profile.

The profile is a YTE template (site settings in __variables__, BRORL_SLURM_<NAME> overrides); it is rendered
with yte like Snakemake does, and each resource is evaluated for the first attempt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ...evaluation.job_sizes import EvalPrior
from .estimate import Estimates, Resources


class ProfileError(ValueError):
    """A profile or estimates file that cannot be read (names the file and the key)."""


def read_profile(profile_dir: Path) -> dict[str, Any]:
    """The rendered profile mapping of profile_dir/config.yaml (as Snakemake sees it)."""
    import yte

    path = Path(profile_dir) / "config.yaml"
    if not path.is_file():
        raise ProfileError(f"no profile at {path} (expected a Snakemake profile folder with config.yaml)")
    with path.open(encoding="utf-8") as f:
        try:
            rendered = yte.process_yaml(f, require_use_yte=True)
        except Exception as err:  # yte raises several types; all mean the same here
            raise ProfileError(f"{path}: cannot render the profile: {err}") from err
    if not isinstance(rendered, dict):
        raise ProfileError(f"{path}: a profile must be a mapping of options")
    return rendered


def at_attempt(value: Any, where: str, attempt: int = 1) -> Any:
    """A resource value as Snakemake evaluates it for ``attempt`` (strings may be Python expressions)."""
    if not isinstance(value, str):
        return value
    try:
        return eval(value, {"__builtins__": {"min": min, "max": max}}, {"attempt": attempt})  # noqa: S307 (our profile)
    except (NameError, SyntaxError):
        return value  # a plain string such as a partition name
    except Exception as err:
        raise ProfileError(f"{where}: cannot evaluate {value!r}: {err}") from err


def rule_resources(
    profile: Mapping[str, Any], rule: str, own: Mapping[str, Any] | None = None, attempt: int = 1
) -> dict[str, Any]:
    """default-resources, then the rule's `own` resources (what the Snakefile asks, e.g. train_ppo's nodes), then
    set-resources[rule], each evaluated for ``attempt`` (Snakemake's order; the last is the profile's retries + 1)."""
    merged = dict(profile.get("default-resources") or {})
    merged.update(own or {})
    merged.update((profile.get("set-resources") or {}).get(rule) or {})
    return {k: at_attempt(v, f"set-resources {rule}.{k}", attempt) for k, v in merged.items()}


def job_resources(
    profile: Mapping[str, Any], rule: str, threads: int = 1, own: Mapping[str, Any] | None = None
) -> Resources:
    """Nodes, GPUs and CPU cores of one job of `rule` under this profile (`own`: the rule's own resources)."""
    res = rule_resources(profile, rule, own)
    nodes = int(res.get("nodes") or 1)
    gpus = int(res.get("gpu") or 0)
    gres = str(res.get("gres") or "")
    match = re.fullmatch(r"gpu(?::[\w.]+)?:(\d+)", gres)
    if match:
        gpus = int(match[1]) * nodes  # gres is per node
    threads = int((profile.get("set-threads") or {}).get(rule, threads))
    if gpus and res.get("cpus_per_gpu"):
        cpus = int(res["cpus_per_gpu"]) * gpus
    else:
        cpus = int(res.get("cpus_per_task") or threads) * int(res.get("tasks") or 1)  # cores are per task
    return Resources(nodes=nodes, gpus=gpus, cpus=cpus)


def _eval_prior(block: Mapping[str, Any]) -> EvalPrior:
    return EvalPrior(
        samples_per_s=float(block["samples_per_s"]),
        reference_gpus=int(block["reference_gpus"]),
        mean_response_tokens=float(block["mean_response_tokens"]),
        job_overhead_hours=float(block["job_overhead_hours"]),
        target_job_hours=float(block["target_job_hours"]),
    )


def read_estimates(path: Path) -> Estimates:
    """The plan's per-rule hour estimates (profiles/slurm/estimates.yaml)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ProfileError(f"no estimates file at {path}") from err
    try:
        train = data["training"]
        est = Estimates(
            step_hours_fixed=float(train["step_hours_fixed"]),
            step_hours_per_sample=float(train["step_hours_per_sample"]),
            reference_nodes=int(train["reference_nodes"]),
            segment_overhead_hours=float(train["segment_overhead_hours"]),
            reference_budget_tokens=int(train.get("reference_budget_tokens", 16384)),
            rule_hours={str(k): float(v) for k, v in (data.get("rules") or {}).items()},
            hf_export_gb=float((data.get("disk") or {}).get("hf_export_gb", 0.0)),
            full_state_gb=float((data.get("disk") or {}).get("full_state_gb", 0.0)),
            evaluation=_eval_prior(data["evaluation"]) if "evaluation" in data else None,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ProfileError(f"{path}: missing or bad key {err}") from err
    prior = est.evaluation
    if (
        prior
        and min(prior.samples_per_s, prior.reference_gpus, prior.mean_response_tokens, prior.target_job_hours) <= 0
    ):
        raise ProfileError(
            f"{path}: evaluation: samples_per_s, reference_gpus, mean_response_tokens, target_job_hours > 0"
        )
    if prior and prior.job_overhead_hours < 0:
        raise ProfileError(f"{path}: evaluation.job_overhead_hours must be >= 0")
    bad = [k for k, v in est.rule_hours.items() if v < 0]
    if bad or est.step_hours_fixed < 0 or est.step_hours_per_sample < 0 or est.reference_nodes < 1:
        raise ProfileError(f"{path}: hours must be >= 0 and reference_nodes >= 1 (bad: {bad or 'training'})")
    return est


def checkpoint_sizes(model_dir: Path) -> tuple[float, float] | None:
    """(HF export GB, DeepSpeed full-state GB) of one saved step of the model in `model_dir`, from its safetensors
    (bf16: 2 bytes per parameter; the full state adds an fp32 master copy and Adam's two fp32 moments, 12 bytes per
    parameter), or None when the folder holds no weights yet (the plan then keeps estimates.yaml's)."""
    weights = sum(p.stat().st_size for p in Path(model_dir).glob("*.safetensors")) if Path(model_dir).is_dir() else 0
    if not weights:
        return None
    extra = sum(p.stat().st_size for p in Path(model_dir).iterdir() if p.is_file() and p.suffix != ".safetensors")
    return (weights + extra) / 1e9, weights * (2 + 12) / 2 / 1e9
