"""`make status` (`python -m brorl.ops.run.status`): where a run stands, read from its own records in a few seconds.

  per arm    the last committed step, segments done, the job holding its lease (results/train/<arm>/: run/metrics.jsonl,
             segment<s>.json, run/lease.json, train.json), and whether it was trained by code that has changed since
  per stage  jobs done (Snakemake's metadata: .snakemake/metadata, one record per output), in progress
             (.snakemake/incomplete), and from Slurm's accounting (sacct, jobs whose working directory is this one)
             pending, running and failed, with where each failed job's logs are

Nothing is submitted or changed. Without Slurm (the local profile) the Slurm part is left out, saying so.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ACTIVE = {"PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "SUSPENDED", "RESIZING"}
FAILED = {"FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


@dataclass
class Stage:
    """One rule's jobs."""

    done: int = 0
    in_progress: int = 0
    pending: int = 0
    running: int = 0
    failed: list[str] = field(default_factory=list)  # "job <id> <state>: <log>"
    missing: list[str] = field(default_factory=list)  # outputs made before and deleted since


# ----------------------------------------------------------------------------------------- pure: parsing
def rule_of_comment(comment: str) -> str | None:
    """The rule of a job from the Slurm plugin's job comment (`rule_<name>_wildcards_...`, `group_<name>_...`)."""
    if comment.startswith("rule_"):
        return comment[len("rule_") :].split("_wildcards_")[0]
    if comment.startswith("group_"):
        return "group " + comment[len("group_") :].split("_", 1)[0]
    return None


def slurm_stages(rows: Iterable[list[str]], workdir: str, log_dir: Path) -> dict[str, Stage]:
    """Per rule, the active and failed jobs of sacct rows (JobIDRaw, State, WorkDir, Comment) from `workdir`; the
    newest attempt of a job id counts (a requeued job appears once)."""
    stages: dict[str, Stage] = defaultdict(Stage)
    for job_id, state, where, comment in rows:
        rule = rule_of_comment(comment)
        if where != workdir or rule is None:
            continue
        state = state.split()[0]  # "CANCELLED by 0"
        if state == "PENDING":
            stages[rule].pending += 1
        elif state in ACTIVE:
            stages[rule].running += 1
        elif state in FAILED:
            logs = sorted(str(p) for p in log_dir.glob(f"*/**/{job_id}.log")) or ["(no Slurm log kept)"]
            stages[rule].failed.append(f"job {job_id} {state}: {', '.join(logs)}")
    return stages


def decode_marker(name: str) -> str:
    """An output path from Snakemake's record file name (urlsafe base64, long names split in '@'-prefixed parts)."""
    joined = name.replace("/@", "").lstrip("@").replace("/", "")
    return base64.urlsafe_b64decode(joined + "=" * (-len(joined) % 4)).decode(errors="replace")


# ----------------------------------------------------------------------------------------------------- I/O
def snakemake_stages(root: Path) -> tuple[dict[str, Stage], list[str]]:
    """Per rule, outputs Snakemake recorded as done (and those of them missing now); and the outputs marked in
    progress (or left by a dead driver)."""
    stages: dict[str, Stage] = defaultdict(Stage)
    done: Counter = Counter()
    metadata = root / ".snakemake" / "metadata"
    for record in metadata.rglob("*"):
        if record.is_file():
            try:
                rule = json.loads(record.read_text()).get("rule", "?")
            except ValueError:
                continue
            done[rule] += 1
            output = decode_marker(str(record.relative_to(metadata)))
            if not (root / output).exists():
                stages[rule].missing.append(output)
    for rule, count in done.items():
        stages[rule].done = count
    incomplete_dir = root / ".snakemake" / "incomplete"
    incomplete = [decode_marker(str(p.relative_to(incomplete_dir))) for p in incomplete_dir.rglob("*") if p.is_file()]
    return stages, sorted(incomplete)


def sacct_rows(since_days: int = 30) -> list[list[str]] | None:
    """This user's jobs of the last `since_days` days from Slurm's accounting (None without sacct)."""
    if shutil.which("sacct") is None:
        return None
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - since_days * 86400))
    proc = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", start, "-o", "JobIDRaw,State,WorkDir%400,Comment%300"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        return None
    return [line.split("|", 3) for line in proc.stdout.splitlines() if line.count("|") >= 3]


def arm_lines(train_dir: Path, now: float) -> list[str]:
    """One line per arm folder under results/train."""
    from ...training.lease import read_lease
    from ...training.refill import step_time_text

    lines = []
    for arm_dir in sorted(p for p in train_dir.iterdir() if p.is_dir()) if train_dir.is_dir() else []:
        metrics = arm_dir / "run" / "metrics.jsonl"
        records = (
            [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()] if metrics.is_file() else []
        )
        last = records[-1]["step"] if records else 0
        segments = sorted(int(p.stem[len("segment") :]) for p in arm_dir.glob("segment*.json"))
        plan = {}
        if segments:
            plan = json.loads((arm_dir / f"segment{segments[-1]}.json").read_text()).get("plan", {})
        total = plan.get("continued_steps", "?")
        holder = read_lease(arm_dir / "run")
        state = (
            "done"
            if (arm_dir / "train.json").is_file()
            else ("training: " + holder.describe(now) if holder else "idle")
        )
        split = step_time_text(records[-10:])  # the last ten steps: how a step's time splits now
        lines.append(
            f"{arm_dir.name}: step {last}/{total}, segments done {len(segments)}; {state}"
            + (f"; last {min(len(records), 10)} steps: {split}" if split else "")
        )
    return lines


def stale_code_lines(root: Path) -> list[str]:
    """The arms trained, and the other exempt rules' outputs made, by code that has changed since
    (brorl.ops.reruns.stale_code): a code edit never reruns them."""
    from ...reporting.code_record import training_code
    from ..reruns.rerun_policy import current_code
    from ..reruns.stale_code import kept_commands, stale_lines, stale_output_lines, stale_outputs, stale_training

    train_dir = root / "results" / "train"
    arms = sorted(p.name for p in train_dir.iterdir() if p.is_dir()) if train_dir.is_dir() else []
    commands = {rule: c for rule, c in kept_commands(root).items() if rule != "train_ppo"}
    lines = stale_lines(stale_training(train_dir, arms, training_code()))
    return lines + stale_output_lines(stale_outputs(root, current_code(commands)))


def report(root: Path, rows: list[list[str]] | None) -> str:
    """The status text of the run in `root`."""
    now = time.time()
    out = ["Arms (results/train):"]
    out += ["  " + line for line in arm_lines(root / "results" / "train", now)] or ["  none started"]
    stale = stale_code_lines(root)
    if stale:
        out += ["Made by code that has changed since (docs/cluster.md#rerun-policy):"] + ["  " + line for line in stale]
    stages, incomplete = snakemake_stages(root)
    if rows is not None:
        for rule, stage in slurm_stages(rows, str(root), root / "results" / "logs" / "slurm").items():
            mine = stages[rule]
            mine.pending, mine.running, mine.failed = stage.pending, stage.running, stage.failed
    out.append("Stages (done: Snakemake's records; pending, running, failed: Slurm's accounting):")
    for rule in sorted(stages):
        s = stages[rule]
        counts = f"{s.done} done" + (f", {s.pending} pending, {s.running} running" if rows is not None else "")
        out.append(
            f"  {rule}: {counts}"
            + (f", {len(s.failed)} failed" if s.failed else "")
            + (f", {len(s.missing)} missing (the plain command remakes them)" if s.missing else "")
        )
        out += [f"    {line}" for line in s.failed]
        out += [f"    missing: {path}" for path in sorted(s.missing)[:5]]
        out += [f"    ... and {len(s.missing) - 5} more" for _ in [0] if len(s.missing) > 5]
    if rows is None:
        out.append("  (no Slurm accounting here: pending, running and failed jobs are not shown)")
    if incomplete:
        out.append("Outputs in progress, or left by a driver that stopped (the next run redoes them):")
        out += [f"  {path}" for path in incomplete]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.run.status", description=__doc__)
    parser.add_argument("--directory", default=".", help="the run's working directory (default: here)")
    args = parser.parse_args(argv)
    root = Path(args.directory).resolve()
    print(report(root, sacct_rows()))


if __name__ == "__main__":
    main()
