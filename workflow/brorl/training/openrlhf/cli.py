"""Cluster-engine subcommands of `python -m brorl.training` (hooked in by cli.py: `add_cluster_commands(sub)`).

  cluster-check    validate the config for OpenRLHF 0.11.2 and parse every segment's command of the given arms
                   (default: the enabled ones) with OpenRLHF's real parser; prints one line per arm
  cluster-command  print the full `python -m openrlhf.cli.train_ppo_ray ...` argv of one segment (JSON list)
  prompts          write an arm's OpenRLHF prompt file before its first GPU job (rule prepare_prompts), and a copy of
                   its summary at --out
Training itself runs through `segment --engine cluster` (brorl.training.openrlhf.run.run_segment).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _paths(args: argparse.Namespace):
    from .command import ClusterPaths
    from .launch import REWARD_SCRIPT

    return ClusterPaths(Path(args.start_model), Path(args.train_data), Path(args.out_dir), REWARD_SCRIPT)


def _config(args: argparse.Namespace) -> dict:
    from brorl.cli import text_or_file

    from ..recipe import load_job_config

    return load_job_config(text_or_file(args.config))


def cmd_cluster_check(args: argparse.Namespace) -> None:
    from ..recipe import arm_plan, enabled_arms
    from .command import openrlhf_flags
    from .parse import parse_argv
    from .validate import validate_cluster_config

    config = _config(args)
    arms = args.arms or enabled_arms(config)
    validate_cluster_config(config, arms)
    for arm in arms:
        plan = arm_plan(config, arm)
        for index in range(len(plan.segments)):
            parse_argv(openrlhf_flags(config, plan, index, _paths(args)))
        print(
            f"{arm}: {len(plan.segments)} segment command(s) accepted by OpenRLHF's parser "
            f"(N {plan.n} x {plan.prompts_per_step} prompts, train.batch_size {plan.mini_batch_samples}, lr {plan.lr:.4g})"
        )


def cmd_cluster_command(args: argparse.Namespace) -> None:
    from ..recipe import arm_plan
    from .command import build_command

    config = _config(args)
    print(json.dumps(build_command(config, arm_plan(config, args.arm), args.segment, _paths(args))))


def cmd_prompts(args: argparse.Namespace) -> None:
    from ..recipe import arm_plan
    from ..run_folder import atomic_json
    from .run import ensure_prompts

    config = _config(args)
    summary = ensure_prompts(config, arm_plan(config, args.arm), _paths(args))
    atomic_json(Path(args.out), summary)
    print(f"{args.arm}: {summary['prompts']} prompts ({summary['passes']} pass(es) of the mix) for OpenRLHF")


def _common_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments cluster-check and cluster-command share."""
    p.add_argument("--config", required=True, help="the recipe config as JSON text, or @file")
    p.add_argument("--start-model", default="resources/models/start", help="the model training starts from")
    p.add_argument("--train-data", default="resources/train/mix.jsonl", help="the prepared train mix")
    p.add_argument("--out-dir", default="results/train/ARM", help="results/train/<arm>")


def add_cluster_commands(sub: argparse._SubParsersAction) -> None:
    """Register cluster-check, cluster-command and prompts on `python -m brorl.training`'s subparsers (each bound
    with set_defaults(func=...), which the rerun derivation reads: brorl.reporting.source_closure)."""
    p = sub.add_parser("cluster-check", help="validate the config and parse every OpenRLHF command")
    _common_arguments(p)
    p.add_argument("--arms", nargs="*", default=None, help="arms to check (default: the enabled ones)")
    p.set_defaults(func=cmd_cluster_check)
    p = sub.add_parser("cluster-command", help="print one segment's OpenRLHF command")
    _common_arguments(p)
    p.add_argument("--arm", required=True)
    p.add_argument("--segment", type=int, required=True)
    p.set_defaults(func=cmd_cluster_command)
    p = sub.add_parser("prompts", help="write an arm's OpenRLHF prompt file (before its first GPU job)")
    p.add_argument("--config", required=True, help="the recipe config as JSON text, or @file")
    p.add_argument("--arm", required=True)
    p.add_argument("--start-model", required=True, help="the model training starts from (its chat template)")
    p.add_argument("--train-data", required=True, help="the prepared train mix")
    p.add_argument("--out-dir", required=True, help="results/train/<arm>")
    p.add_argument("--out", required=True, help="where the summary goes (the rule's output)")
    p.set_defaults(func=cmd_prompts)
