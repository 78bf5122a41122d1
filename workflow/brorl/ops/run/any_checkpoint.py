"""`make evaluate MODEL=<folder|owner/name@revision>`: one checkpoint on the paper's benchmarks with the paper's
protocol, through the same rules as every evaluation (python -m brorl.ops.run.any_checkpoint).

It writes a config overlay, <workdir>/results/evaluate/<name>.yaml (merged over config.yaml, the profile's config
files and those of --configfile, make's CONFIG=): the checkpoint as the only entry of
evaluation.models, every arm off (nothing trains), the start checkpoint left out unless --base
(evaluation.steps.include_start), the benchmarks narrowed by --benchmarks. It prints the plan of that run (the slurm
profile: `make plan`'s table), then runs Snakemake with the profile's config files and the overlay: a dry run when the
Snakemake arguments hold -n, otherwise only when confirmed (--confirm, or yes at a terminal's prompt).
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[4]
HUB_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class EvaluateError(ValueError):
    """A MODEL, NAME or BENCHMARKS that cannot be evaluated; the message says why."""


@dataclass(frozen=True)
class Checkpoint:
    """The checkpoint to evaluate: a local folder (absolute) or a hub repository at a revision."""

    name: str
    path: str | None = None
    repo_id: str | None = None
    revision: str | None = None

    @property
    def where(self) -> str:
        return self.path or f"{self.repo_id}@{self.revision}"


def slug(text: str) -> str:
    """A name usable as the {arm} wildcard and a folder: lower case letters, digits and underscores."""
    name = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return name if re.match(r"^[a-z]", name) else f"model_{name}"


def parse_model(spec: str, cwd: Path, name: str | None = None) -> Checkpoint:
    """MODEL as given: an existing folder (relative to cwd), else owner/name@revision on the hub."""
    if not spec.strip():
        raise EvaluateError("MODEL is empty: MODEL=<folder> or MODEL=<owner/name>@<revision>")
    folder = Path(spec).expanduser()
    folder = folder if folder.is_absolute() else (cwd / folder)
    if folder.is_dir():
        return Checkpoint(slug(name or folder.resolve().name), path=str(folder.resolve()))
    repo, _, revision = spec.partition("@")
    if not HUB_REPO.match(repo):
        raise EvaluateError(f"MODEL={spec}: no folder {folder} and not a hub repository (owner/name@revision)")
    if not revision:
        raise EvaluateError(
            f"MODEL={spec}: no folder {folder}; for a hub repository name the revision, MODEL={repo}@<commit> "
            "(a branch works once `make pin` locks it)"
        )
    return Checkpoint(slug(name or repo.split("/", 1)[1]), repo_id=repo, revision=revision)


def paper_row(config: dict, model: Checkpoint) -> str | None:
    """The paper's Table 1 row a checkpoint is shown beside: the start repository's released weights (`brorl`) beside
    BroRL +191 (compared by gain: their step is not known), its start model (v2, or the config's start pin) beside
    the Baseline; None for any other checkpoint."""
    from ...hub.checkpoint_identity import PAPER_START_BRANCH, PAPER_START_REPO

    if model.repo_id != PAPER_START_REPO:
        return None
    if model.revision == "brorl":
        return "treatment@191"
    if model.revision in (PAPER_START_BRANCH, config["base_model"]["revision"]):
        return "base@0"
    return None


def overlay(config: dict, model: Checkpoint, benchmarks: list[str] | None, base: bool) -> dict:
    """The config overlay (merged over config.yaml and the profile's presets) that evaluates `model` alone."""
    evaluation: dict = {
        "models": [
            {
                "name": model.name,
                "label": f"{model.name} ({model.where})",
                "description": f"evaluated with `make evaluate MODEL={model.where}`",
                "repo_id": model.repo_id,
                "revision": model.revision,
                "path": model.path,
                "step": 0,
                "continued_steps": None,
                "paper_row": paper_row(config, model),
            }
        ],
        "steps": {"include_start": base},  # the start checkpoint only when asked (BASE=1)
    }
    if benchmarks:
        known = _benchmark_names()
        unknown = sorted(set(benchmarks) - set(known))
        if unknown:
            raise EvaluateError(f"BENCHMARKS: {', '.join(unknown)} unknown (known: {', '.join(sorted(known))})")
        evaluation["benchmarks"] = list(benchmarks)
    return {
        "evaluation": evaluation,
        "arms": [{**arm, "enabled": False} for arm in config["arms"]],  # nothing trains
        "throughput": {"enabled": False},
        "simulation": {"enabled": False},
        "probe": {"enabled": False},
        "analysis": {"n_sweep": {"arms": [], "controls": []}},
    }


def _benchmark_names() -> list[str]:
    from ...benchmarks.registry import load_registry

    return list(load_registry())


def _confirmed(confirm: bool) -> bool:
    if confirm:
        return True
    if not sys.stdin.isatty():
        return False
    return input("submit these jobs? [y/N] ").strip().lower() in ("y", "yes")


def main(argv: list[str] | None = None) -> int:
    from ...config import ConfigError, load_yaml_config
    from ...models.architectures import folder_architecture_problem
    from .run_profile import PROFILES, absolute_directory, is_dry_run, run_configfiles, workdir_of
    from .software_route import route_problem

    parser = argparse.ArgumentParser(prog="python -m brorl.ops.run.any_checkpoint", description=__doc__)
    parser.add_argument("--model", required=True, help="a checkpoint folder, or owner/name@revision on the hub")
    parser.add_argument("--name", default=None, help="its name in results/eval/<name>/ and the tables")
    parser.add_argument("--benchmarks", default="", help="comma-separated benchmarks (default: the paper's)")
    parser.add_argument("--base", action="store_true", help="also evaluate the start checkpoint")
    parser.add_argument("--profile", default="slurm", help="slurm, local or a profile folder")
    parser.add_argument(
        "--configfile", nargs="*", default=[], help="config files merged after the profile's, before the overlay"
    )
    parser.add_argument("--snakemake", default="snakemake", help="the Snakemake executable")
    parser.add_argument("--confirm", action="store_true", help="submit without asking")
    parser.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: Snakemake's own arguments")
    args = parser.parse_args(argv)
    cwd = Path.cwd()
    extra = absolute_directory([a for a in args.snakemake_args if a != "--"], cwd)
    profile = PROFILES.get(args.profile, args.profile)
    try:
        presets = run_configfiles(profile, args.configfile, cwd)
        model = parse_model(args.model, cwd, args.name)
        problem = model.path and folder_architecture_problem(model.path)
        if problem:
            raise EvaluateError(problem)
        config = load_yaml_config(ROOT / "config.yaml", *presets)
        benchmarks = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
        out = workdir_of(extra, cwd) / "results" / "evaluate" / f"{model.name}.yaml"
        out.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(overlay(config, model, benchmarks, args.base), sort_keys=False)
        out.write_text(f"# written by `make evaluate MODEL={args.model}`: merged over {profile}'s config\n{text}")
        load_yaml_config(ROOT / "config.yaml", *presets, out)  # the overlay is a valid config (names, benchmarks)
    except (EvaluateError, ConfigError, OSError) as error:
        print(f"make evaluate: {error}", file=sys.stderr)
        return 2
    configs = [str(p) for p in (*presets, out)]
    print(f"evaluating {model.where} as `{model.name}` (config overlay {out})", flush=True)
    if profile == "slurm":  # the cost first: jobs and GPU-hours of exactly this run
        plan = subprocess.run([sys.executable, "-m", "brorl.ops.plan", "--configfile", *configs], cwd=ROOT)
        if plan.returncode != 0:
            return plan.returncode
    cmd = [args.snakemake, "--profile", profile, "--configfile", *configs, *extra]
    route = route_problem(cmd[1:], args.snakemake) if profile == "slurm" else ""
    if route:  # GPU jobs from the CPU build, or a conda build on this machine: refused before any confirmation
        print(f"make evaluate: not submitted: {route}", file=sys.stderr)
        return 2
    if not is_dry_run(extra) and not _confirmed(args.confirm):
        print(f"not submitted: add CONFIRM=1 (or SUBMIT_ARGS=-n for a dry run) to run\n  {shlex.join(cmd)}")
        return 0
    print(f"running: {shlex.join(cmd)}", flush=True)
    status = subprocess.run(cmd, cwd=ROOT).returncode
    if status == 0 and not is_dry_run(extra):
        where = workdir_of(extra, cwd)
        report = ["make", "report", f"PROFILE={args.profile}", f"CONFIG={' '.join([*args.configfile, str(out)])}"]
        report += [f"SUBMIT_ARGS=--directory {where}"] if where != cwd else []
        print(f"the run's report: {shlex.join(report)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
