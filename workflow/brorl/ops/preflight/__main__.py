"""`python -m brorl.ops.preflight`: the table of checks of this node (see checks.py); exit status 1 when any fails.

  --scope train|eval    train (default): everything a training job needs (flash-attn, FusedAdam, vLLM sleep mode,
                        NCCL, Ray, the sandbox); eval: only what generation needs (driver, GPUs, vLLM's GPU build
                        generating, disk, hub token), importing nothing that envs/eval.yaml lacks
  --configfile FILE...  config files merged over config.yaml (the disk estimate and pending downloads come from it)
  --profile DIR         the SLURM profile whose partition and account are checked (default profiles/slurm)
  --out FILE            also write the checks as JSON (the preflight rule's output)
  --no-slurm            skip the Slurm settings (a node outside the cluster)
  --need-gb GB          disk the checkpoints need (default: the plan's estimate for the config)
  --results DIR         where the checkpoints go (default results/)
On a CPU machine it runs too: the checks that apply pass, the GPU checks fail with their reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def run_checks(
    need_gb: float,
    download_pending: bool,
    profile: dict | None,
    results: Path,
    config: dict | None = None,
    model_dir: Path | None = None,
    scope: str = "train",
) -> list:
    """Every check of `scope` on this machine, in table order: what is installed, then the GPU paths run once, then
    the site."""
    from . import checks, gpu_paths

    if scope == "eval":
        return eval_checks(need_gb, download_pending, profile, results)
    allowed = bool(config and config["training"]["cluster"].get("allow_unsandboxed_code"))
    rows = [
        checks.driver_check(),
        checks.torch_gpus_check(),
        gpu_paths.compute_mode_check(),
        checks.vllm_check(),
        gpu_paths.vllm_engine_check(sleep=True),
        checks.flash_attn_check(),
        gpu_paths.flash_varlen_check(),
        checks.fused_adam_check(),
        gpu_paths.nccl_check(),
        gpu_paths.weight_sync_check(),
        checks.disk_check(results, need_gb),
        checks.sandbox_check(),
        checks.bubblewrap_check(),
        gpu_paths.sandbox_isolation_check(allowed),
        checks.instructions_check(),
        checks.ray_check(),
        checks.hub_token_check(download_pending),
        gpu_paths.chat_template_check(model_dir),
    ]
    own = None
    if config is not None:
        from brorl.training.job_shape import train_job_resources

        own = train_job_resources(config)
    return rows + site_checks(profile, "train_ppo", own)


def eval_checks(need_gb: float, download_pending: bool, profile: dict | None, results: Path) -> list:
    """The evaluation preflight: what generation, the probe and the throughput benchmark use (envs/eval.yaml or the
    image), nothing of the training stack, so evaluating a checkpoint never waits on compiling it."""
    from . import checks, gpu_paths

    rows = [
        checks.driver_check(),
        checks.torch_gpus_check(),
        checks.vllm_check(),
        gpu_paths.vllm_engine_check(sleep=False),
        checks.disk_check(results, need_gb),
        checks.hub_token_check(download_pending),
    ]
    return rows + site_checks(profile, "generate_samples")


def site_checks(profile: dict | None, rule: str, own: dict | None = None) -> list:
    """The GPU partition and account of the profile, and its limits against `rule`'s request (`own`: what the rule
    asks for itself, e.g. train_ppo's nodes from training.cluster; none without Slurm)."""
    if profile is None:
        return []
    from brorl.ops.plan.profile import rule_resources

    from . import checks, gpu_paths

    site = profile.get("__variables__", {})
    partition = str(site.get("gpu_partition", "h100"))
    return [
        checks.slurm_check(partition, str(site.get("account", ""))),
        gpu_paths.partition_limits_check(partition, rule_resources(profile, rule, own)),
    ]


def eval_needs(config: dict) -> tuple[float, bool]:
    """(GB of disk the evaluation preflight asks for: each checkpoint of evaluation.models staged and extended, as
    exports of the 1.5B model; whether one of them comes from the hub)."""
    from brorl.ops.plan.profile import read_estimates

    estimates = read_estimates(ROOT / "profiles" / "slurm" / "estimates.yaml")
    models = config["evaluation"]["models"]
    gb = estimates.hf_export_gb * 2 * max(1, len(models))  # staged + context-extended copy
    return gb, any(not model.get("local_path") for model in models)


def config_needs(config: dict) -> tuple[float, bool]:
    """(GB of disk the run's training needs, whether the start checkpoint still has to be downloaded)."""
    from brorl.ops.plan.cli import disk_per_arm
    from brorl.ops.plan.profile import read_estimates
    from brorl.training.recipe import training_engine

    cluster = training_engine(config) == "cluster"
    estimates = read_estimates(ROOT / "profiles" / "slurm" / "estimates.yaml")  # the 1.5B model's sizes
    need = sum(d["peak_gb"] for d in disk_per_arm(config, estimates).values()) if cluster else 1.0  # tiny: MBs
    from brorl.models.folders import staged_base_model

    staged = ROOT / staged_base_model(config)
    return need, cluster and not config["base_model"].get("local_path") and not staged.is_dir()


def render(rows: list) -> str:
    """The table: one line per check, the fix under each failure."""
    width = max(len(r.name) for r in rows)
    lines = [f"{'check':<{width}}  result  detail"]
    for r in rows:
        lines.append(f"{r.name:<{width}}  {'pass' if r.ok else 'FAIL':<6}  {r.detail}")
        if not r.ok and r.fix:
            lines.append(f"{'':<{width}}          fix: {r.fix}")
    failed = [r.name for r in rows if not r.ok]
    lines.append(
        f"{len(rows) - len(failed)} of {len(rows)} checks pass" + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from brorl.config import load_yaml_config
    from brorl.ops.plan.profile import read_profile

    parser = argparse.ArgumentParser(prog="python -m brorl.ops.preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scope", choices=["train", "eval"], default="train")
    parser.add_argument("--configfile", nargs="*", type=Path, default=[])
    parser.add_argument("--profile", type=Path, default=ROOT / "profiles" / "slurm")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--no-slurm", action="store_true")
    parser.add_argument("--need-gb", type=float, default=None, help="disk the run needs (default: from the config)")
    parser.add_argument("--results", default=str(ROOT / "results"), help="where checkpoints will be written")
    args = parser.parse_args(argv)
    config = load_yaml_config(ROOT / "config.yaml", *args.configfile)
    need, pending = eval_needs(config) if args.scope == "eval" else config_needs(config)
    if args.need_gb is not None:
        need = args.need_gb
    profile = None if args.no_slurm else read_profile(args.profile)
    from brorl.models.folders import staged_base_model

    staged = ROOT / staged_base_model(config)
    rows = run_checks(
        need, pending, profile, Path(args.results), config, staged if staged.is_dir() else None, args.scope
    )
    print(render(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=2) + "\n")
    sys.exit(0 if all(r.ok for r in rows) else 1)


if __name__ == "__main__":
    main()
