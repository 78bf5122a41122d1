"""`python -m brorl.training segment|export|finish|warm-start|...`: the train stage's commands (rules in train.smk)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

from brorl.cli import run_command, text_or_file

from .metrics import MetricsError
from .recipe import RecipeError, arm_plan, load_job_config
from .segments import CheckpointError, SegmentJob
from .tracking import TRACKING_ENV, Tracking, TrackingError, check_key

# config `engine` (and --engine) -> the module that trains one segment: it defines
#   run_segment(config, job: SegmentJob) -> (the segment's metrics records, extra fields of its manifest)
#   ERRORS: the exceptions that end a job with one `error: ...` line
# Imported on use: the engines import torch, vLLM or OpenRLHF. A new engine is a subpackage and a line here.
ENGINES = {"embedded": "brorl.training.embedded.run", "cluster": "brorl.training.openrlhf.run"}


def engine(name: str) -> ModuleType:
    """The module of engine `name` (ENGINES)."""
    return importlib.import_module(ENGINES[name])


def cmd_segment(args: argparse.Namespace) -> None:
    from brorl.reporting.code_record import training_code

    from .layout import record_layout
    from .lease import Lease
    from .segments import write_segment_manifest
    from .stop import Stopped, StopRequests

    code = training_code()  # the code this job runs, recorded in its manifest (brorl.ops.reruns.stale_code)
    config = load_job_config(text_or_file(args.config))
    plan = arm_plan(config, args.arm)  # the one derivation of the arm's plan in this job: the engine gets it
    if not 0 <= args.segment < len(plan.segments):
        raise RecipeError(f"arm {args.arm!r} has segments 0..{len(plan.segments) - 1}, not {args.segment}")
    tracking = Tracking.from_json(args.tracking or os.environ.get(TRACKING_ENV))
    check_key(tracking.wandb)  # before any training: online W&B without its key fails here
    out_dir = Path(args.out_dir)
    # one trainer per run folder (brorl.training.lease): taken before any engine starts, given back once the segment
    # is done
    with Lease(out_dir / "run", args.segment) as lease, StopRequests() as stop:
        job = SegmentJob(
            plan,
            args.segment,
            Path(args.start_model),
            Path(args.train_data),
            out_dir,
            stop_after=args.stop_after,
            ray_emulated=args.ray_emulated,
            tracking=tracking,
            stop=stop,
        )
        record_layout(config, args.arm, job.out_dir)  # the arm's segment length, frozen from its first job on
        records, extra = engine(args.engine).run_segment(config, job)
        unfinished = not records or records[-1]["step"] < job.segment.last_step
        if unfinished:
            lease.keep()  # a requeue (same job id) keeps it; the retry of a stopped job takes it over
        else:
            lease.wait_for_contenders()  # a refused job's cleanup must not delete the manifest (brorl.training.lease)
            write_segment_manifest(
                Path(args.manifest), plan, job.segment, records, job.out_dir / "run", {**extra, "code": code}
            )
    if unfinished and stop.reason:
        last = records[-1]["step"] if records else job.segment.first_step - 1
        raise Stopped(f"{args.arm} stopped after step {last} on {stop.reason}; step {last} is saved: the retry resumes")
    if unfinished:
        return  # --stop-after: stopped early on purpose, no manifest, the job is not finished
    rewards = [r["reward_mean"] for r in records if r["reward_mean"] is not None]  # null where OpenRLHF lacks it
    mean = f"{sum(rewards) / len(rewards):.4f}" if rewards else "not logged"
    print(
        f"segment {args.segment} of {args.arm}: steps {records[0]['step']}..{records[-1]['step']}, mean reward {mean}"
    )


def exit_on_stop(args: argparse.Namespace) -> None:
    """cmd_segment; a stop request answered at a step boundary ends the job with STOP_EXIT (brorl.training.stop), and
    an error the engine expects with one `error: ...` line, as run_command ends the others. Only this subcommand
    imports an engine: export and finish need neither torch nor OpenRLHF."""
    from .stop import STOP_EXIT, Stopped

    try:
        cmd_segment(args)
    except Stopped as stopped:
        print(f"stopped: {stopped}", file=sys.stderr, flush=True)
        sys.exit(STOP_EXIT)
    except engine(args.engine).ERRORS as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


def cmd_export(args: argparse.Namespace) -> None:
    from .segments import export_checkpoint

    export_checkpoint(Path(args.manifest), Path(args.run_dir), args.step, Path(args.out))


def cmd_finish(args: argparse.Namespace) -> None:
    from .segments import write_train_summary

    config = load_job_config(text_or_file(args.config))
    write_train_summary(
        Path(args.out),
        arm_plan(config, args.arm),
        [Path(m) for m in args.manifests],
        Path(args.metrics),
        Path(args.metrics_out),
    )


def cmd_warm_start(args: argparse.Namespace) -> None:
    from brorl.benchmarks.synthetic import sums

    from .embedded.warm_start import warm_start

    items = sums(args.items, args.seed, benchmark="warm_start")
    summary = warm_start(
        Path(args.model),
        items,
        Path(args.out),
        steps=args.steps,
        lr=args.lr,
        batch_size=args.batch_size,
        seed=args.seed,
    )
    print(f"warm start: loss {summary['loss_first']:.3f} -> {summary['loss_last']:.3f} over {args.steps} steps")


def _add_segment_command(sub: argparse._SubParsersAction) -> None:
    """Register `segment` (one training job of one arm) on `python -m brorl.training`'s subparsers."""
    p = sub.add_parser("segment", help="run one training segment (job) of one arm")
    p.add_argument("--config", required=True, help="the recipe config as JSON text, or @file")
    p.add_argument("--arm", required=True)
    p.add_argument("--segment", type=int, required=True)
    p.add_argument("--engine", choices=list(ENGINES), required=True)
    p.add_argument("--start-model", required=True, help="the model folder training starts from")
    p.add_argument("--train-data", required=True, help="the prepared train mix (jsonl)")
    p.add_argument("--out-dir", required=True, help="results/train/<arm>")
    p.add_argument("--manifest", required=True, help="where the segment manifest goes")
    p.add_argument("--stop-after", type=int, default=None, help="end after this step, without a manifest (tests)")
    p.add_argument(
        "--ray-emulated",
        choices=["auto", "0", "1"],
        default=None,
        help="cluster: the launcher's RAY_SLURM_EMULATED (the slurm profile passes 0)",
    )
    p.add_argument(
        "--tracking",
        default=None,
        help="config `logging` as JSON (W&B and TensorBoard; default: $BRORL_TRACKING, which the workflow sets, "
        "else off); the W&B key comes from WANDB_API_KEY only",
    )
    p.set_defaults(func=exit_on_stop)


def _add_arm_commands(sub: argparse._SubParsersAction) -> None:
    """Register `export`, `finish` and `warm-start` on `python -m brorl.training`'s subparsers."""
    p = sub.add_parser("export", help="link a saved step's export into results/train/<arm>/step<k>/")
    p.add_argument("--manifest", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--step", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("finish", help="write train.json once every segment of an arm is done")
    p.add_argument("--config", required=True)
    p.add_argument("--arm", required=True)
    p.add_argument("--manifests", nargs="+", required=True)
    p.add_argument("--metrics", required=True, help="the live metrics of the run (run/metrics.jsonl)")
    p.add_argument("--out", required=True)
    p.add_argument("--metrics-out", required=True, help="where the arm's complete metrics.jsonl goes")
    p.set_defaults(func=cmd_finish)

    p = sub.add_parser("warm-start", help="supervised warm start of the tiny model on synthetic sums")
    p.add_argument("--model", required=True, help="the built tiny model")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--items", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.set_defaults(func=cmd_warm_start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m brorl.training", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_segment_command(sub)
    _add_arm_commands(sub)

    from .openrlhf.cli import add_cluster_commands

    add_cluster_commands(sub)
    args = parser.parse_args(argv)
    from brorl.models.check import ModelError

    from .lease import LeaseHeld

    run_command(
        args,
        (
            RecipeError,
            MetricsError,
            CheckpointError,
            ModelError,
            TrackingError,
            FileNotFoundError,
            LeaseHeld,
        ),
    )
