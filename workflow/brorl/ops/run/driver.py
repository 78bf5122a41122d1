"""What a plain `snakemake --profile slurm` checks and says in its main process, while it reads the Snakefile
(workflow/rules/hooks.smk):

- the site: each partition and request against `sinfo`, where it answers (brorl.ops.plan.site), on `-n` too;
- the software route: a submission (not `-n`) is refused while its jobs would run vLLM's CPU build, or a `python`
  without the engines, or Snakemake would build the training environment on the login node (software_route);
- the end of a dry run: one line per rule with the sbatch requests of its jobs, the route, and the run's warnings
  again (brorl.ops.plan.dry_run), printed when the process exits (onsuccess never runs under `-n`).

None of it runs inside jobs (they read the Snakefile again), nor for `--lint`, `--rulegraph`, `--report` or any
other command that lists or draws instead of running, nor under another executor than slurm.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..plan import dry_run, site
from . import software_route
from .notify import JOB_INFO
from .run_profile import ROOT

GROUP_INFO = "group_info"  # Snakemake's LogEvent.GROUP_INFO: a group job of the dry run (its members follow)
# Snakemake options (argparse names) under which it reads the Snakefile without running or dry-running the jobs.
NOT_A_RUN = (
    "lint",
    "list_rules",
    "list_target_rules",
    "print_compilation",
    "containerize",
    "reporter",
    "generate_unit_tests",
    "dag",
    "rulegraph",
    "filegraph",
    "d3dag",
    "unlock",
    "cleanup_metadata",
    "conda_cleanup_envs",
    "conda_create_envs_only",
    "list_conda_envs",
    "cleanup_shadow",
    "container_cleanup_images",
    "list_changes",
    "list_input_changes",
    "list_params_changes",
    "list_untracked",
    "summary",
    "detailed_summary",
    "archive",
    "delete_all_output",
    "delete_temp_output",
    "touch",
)
_WARNINGS: list[str] = []


class DriverError(Exception):
    """A check that stops the run before any job; its text says what to do."""


def warn(text: str) -> None:
    """Print a warning of the run now, and keep it for the end of a dry run."""
    print(f"warning: {text}", file=sys.stderr)
    _WARNINGS.append(text)


def command_line() -> argparse.Namespace | None:
    """Snakemake's parsed command line, profiles applied, from the frame of `snakemake.cli.args_to_api` that is
    reading this Snakefile (snakemake 9.27.1, cli.py); None when Snakemake runs from its Python API."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "args_to_api" and frame.f_globals.get("__name__") == "snakemake.cli":
            args = frame.f_locals.get("args")
            return args if isinstance(args, argparse.Namespace) else None
        frame = frame.f_back
    return None


def mode(args: argparse.Namespace) -> str:
    """Which command this is: "run", "dry-run" or "other" (it lints, lists, draws or reports instead)."""
    if any(getattr(args, name, None) for name in NOT_A_RUN):
        return "other"
    return "dry-run" if getattr(args, "dryrun", False) else "run"


def profile_dir(args: argparse.Namespace) -> Path:
    """The profile that sizes the jobs: the first --profile with set-resources (profiles/slurm by default)."""
    from snakemake.cli import get_profile_dir

    from ..plan.profile import read_profile

    for name in getattr(args, "profile", None) or []:
        found = get_profile_dir(str(name))
        if found and "set-resources" in read_profile(found[0]):
            return Path(found[0])
    return ROOT / "profiles" / "slurm"


def route_of(args: argparse.Namespace) -> set[str]:
    """The software deployment methods of the command line and profile (`--sdm conda apptainer`: both)."""
    return {
        str(method).lower().rsplit(".", 1)[-1] for method in getattr(args, "software_deployment_method", None) or ()
    }


def submission_args(argv: list[str], workdir: Path) -> list[str]:
    """The command's arguments with its working directory made absolute (a nested Snakemake starts elsewhere)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--directory", "-d"):
            skip = True
        elif not arg.startswith("--directory="):
            out.append(arg)
    return [*out, "--directory", str(workdir)]


def check_site(args: argparse.Namespace, config: Mapping[str, Any]) -> None:
    """Refuse a request the site cannot grant, where `sinfo` answers; say what was checked."""
    problems, line = site.check(profile_dir(args), config)
    if problems:
        raise DriverError(site.refusal(problems))
    print(line, file=sys.stderr)


def check_route(route: set[str]) -> None:
    """Refuse a submission whose jobs would run the wrong software (software_route), or none."""
    problem = software_route.route_problem(
        submission_args(sys.argv[1:], Path.cwd()), [sys.executable, "-m", "snakemake"], route=route
    )
    if problem:
        raise DriverError(f"not submitted: {problem}")


class DryRunJobs(logging.Handler):
    """The jobs a dry run prints, from Snakemake's log events: each job's rule and resources, each group job."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: list[tuple[str, dict[str, Any]]] = []
        self.groups: Counter = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        event = str(getattr(record, "event", ""))
        if event == JOB_INFO:
            resources = getattr(record, "resources", None)
            items = dict(resources.items()) if hasattr(resources, "items") else {}
            self.jobs.append((str(getattr(record, "rule_name", "?")), items))
        elif event == GROUP_INFO:
            self.groups[str(getattr(record, "group_id", "?"))] += 1

    def print_summary(self, software: str) -> None:
        """The end of the dry run's output (nothing when no job was listed: an error stopped it first)."""
        if self.jobs:
            sys.stdout.flush()
            print("\n".join(dry_run.summary(self.jobs, self.groups, _WARNINGS, software)), flush=True)


def start(config: Mapping[str, Any], is_main_process: bool) -> None:
    """The checks of this command line: the site (run and dry run), the route (run), the dry run's ending."""
    args = command_line()
    if not is_main_process or args is None or getattr(args, "executor", None) != "slurm":
        return
    run_mode = mode(args)
    if run_mode == "other":
        return
    check_site(args, config)
    route = route_of(args)
    if run_mode == "run":
        check_route(route)
        return
    problem = software_route.engines_problem(route)
    if problem:
        warn(f"a submission would stop here: {problem}")
    jobs = DryRunJobs()
    logging.getLogger("snakemake.logging").addHandler(jobs)
    atexit.register(jobs.print_summary, software_route.describe(route))
