"""The site, checked before the first sbatch where `sinfo` answers (`make plan`, `snakemake --profile slurm`): both
partitions of the profile exist, and each rule's request fits its partition (nodes against the partition's nodes and
MaxNodes, MaxTime, memory, CPUs and GRES per node), with the preflight's partition-limit code. Without `sinfo` (a
laptop, the CI's dry runs) nothing is checked and the output says so; BRORL_SITE_CHECK=0 turns it off.

    python -m brorl.ops.plan.site [--profile profiles/slurm] [-- SNAKEMAKE_ARGS...]   (their --configfile presets)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..preflight.gpu_paths import partition_limit_problems
from ..run.run_profile import option_values
from ..run.submission import GROUPS, group_requests
from .profile import ProfileError, read_profile, rule_resources

ROOT = Path(__file__).resolve().parents[4]
Sinfo = Callable[[list[str]], str | None]  # sinfo's output for these arguments, None when it cannot answer


def slurm_command(name: str) -> Sinfo:
    """A Slurm client command (sinfo, scontrol) as a function of its arguments: its output, None where the command
    is missing or fails."""

    def run(args: list[str]) -> str | None:
        if shutil.which(name) is None:
            return None
        proc = subprocess.run([name, *args], capture_output=True, text=True, timeout=60)
        return proc.stdout if proc.returncode == 0 else None

    return run


def max_nodes(scontrol_partition: str) -> int | None:
    """MaxNodes of `scontrol show partition P -o` (None: unlimited or unknown)."""
    match = re.search(r"\bMaxNodes=(\d+)", scontrol_partition)
    return int(match[1]) if match else None


def requests(profile: Mapping[str, Any], own: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each submission the profile sizes, first attempt: a rule's (its set-resources, with the rule's own resources
    under them), or a group's in place of its members' (`group <name>`: runtimes added, brorl.ops.run.submission)."""
    rules = set(profile.get("set-resources") or {}) | set(own)
    asked = {rule: rule_resources(profile, rule, own.get(rule)) for rule in sorted(rules)}
    groups = group_requests(asked)
    return {
        **{rule: r for rule, r in asked.items() if GROUPS.get(rule) not in groups},
        **{f"group {name}": r for name, r in groups.items()},
    }


def site_problems(
    profile: Mapping[str, Any], own: Mapping[str, Mapping[str, Any]], sinfo: Sinfo, scontrol: Sinfo | None = None
) -> list[str] | None:
    """Every request the site cannot grant (None: no sinfo, nothing checked)."""
    listed = sinfo(["-h", "-o", "%P"])
    if listed is None:
        return None
    partitions = [p.strip().rstrip("*") for p in listed.split() if p.strip()]
    default_partition = (profile.get("default-resources") or {}).get("slurm_partition")
    asked = requests(profile, own)
    partition_of = {rule: str(r.get("slurm_partition") or default_partition or "") for rule, r in asked.items()}
    problems, limits = [], {}
    wanted = (set(partition_of.values()) | {str(default_partition or "")}) - {""}
    for partition in sorted(wanted - set(partitions)):
        users = [rule for rule, p in partition_of.items() if p == partition]
        problems.append(
            f"partition {partition!r} ({', '.join(users[:3])}{', ...' if len(users) > 3 else ''}) does not exist "
            f"here (sinfo lists: {', '.join(partitions) or 'none'}): set gpu_partition / cpu_partition in the "
            "profile's settings (or BRORL_SLURM_GPU_PARTITION / BRORL_SLURM_CPU_PARTITION)"
        )
    for rule, request in asked.items():
        partition = partition_of[rule]
        if partition not in partitions:
            continue
        if partition not in limits:  # one query of each kind per partition
            limits[partition] = (
                sinfo(["-h", "-p", partition, "-o", "%l|%m|%c|%G"]) or "",
                sinfo(["-h", "-p", partition, "-o", "%D"]),
                max_nodes(scontrol(["show", "partition", partition, "-o"]) or "") if scontrol else None,
            )
        shape, count, limit = limits[partition]
        found = [f"{rule} on {partition}: {p}" for p in partition_limit_problems(shape, request)]
        nodes = int(request.get("nodes") or 1)
        available = sum(int(n) for n in (count or "").split() if n.isdigit())
        if count is not None and nodes > available:
            found.append(f"{rule} on {partition}: the job asks {nodes} nodes, the partition has {available}")
        if limit is not None and nodes > limit:
            found.append(f"{rule} on {partition}: the job asks {nodes} nodes, MaxNodes is {limit}")
        problems += found
    return problems


def refusal(problems: list[str]) -> str:
    """The message that stops a submission the site cannot run."""
    return "not submitted: the site cannot run these jobs as the profile asks:\n  - " + "\n  - ".join(problems)


def check(profile_dir: Path, config: Mapping[str, Any]) -> tuple[list[str] | None, str]:
    """(problems or None, one line saying what was checked) for this profile and config."""
    if os.environ.get("BRORL_SITE_CHECK", "1") == "0":
        return None, "site: not checked (BRORL_SITE_CHECK=0)"
    from ...training.job_shape import train_job_resources

    problems = site_problems(
        read_profile(profile_dir),
        {"train_ppo": train_job_resources(config)},
        slurm_command("sinfo"),
        slurm_command("scontrol"),
    )
    if problems is None:
        return None, "site: not checked (no sinfo here)"
    return problems, "site: every partition and request checked against sinfo" if not problems else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.plan.site", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, default=ROOT / "profiles" / "slurm")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then Snakemake's arguments (their --configfile)")
    a = parser.parse_args(argv)
    from ...config import ConfigError, load_yaml_config

    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    try:
        config = load_yaml_config(ROOT / "config.yaml", *option_values(args, ("--configfile", "--configfiles")))
        problems, line = check(a.profile, config)
    except (ConfigError, ProfileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if problems:
        print(refusal(problems), file=sys.stderr)
        return 2
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
