"""Messages of the workflow's onstart / onsuccess / onerror hooks (workflow/rules/hooks.smk), and their optional
delivery to a webhook and a mail address (docs/cluster.md#notifications).

Building a message is pure (``failed_jobs``, ``start_message``, ``success_message``, ``error_message``); ``send``
delivers one where the environment asks for it (BRORL_NOTIFY_WEBHOOK, BRORL_NOTIFY_MAIL; unset = nothing is sent).
A notification that cannot be delivered is a warning on stderr, never an error: the run's outcome stays the run's.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

WEBHOOK_ENV = "BRORL_NOTIFY_WEBHOOK"
MAIL_ENV = "BRORL_NOTIFY_MAIL"
WEBHOOK_TIMEOUT_S = 10.0
SENDMAIL_PATHS = ("/usr/sbin/sendmail", "/usr/lib/sendmail")  # outside PATH on many hosts
SLURM_LOGDIR = "results/logs/slurm"  # slurm-logdir of profiles/slurm/config.yaml


@dataclass(frozen=True)
class FailedJob:
    """One `Error in rule ...` block of a Snakemake log."""

    rule: str
    wildcards: str = ""
    logs: tuple[str, ...] = ()
    external_jobid: str = ""
    message: str = ""
    outputs: tuple[str, ...] = ()


_BLOCK = re.compile(r"^Error in rule (\w+):\n((?:[ \t]+.*\n?)*)", flags=re.M)


def _field(body: str, name: str) -> str:
    match = re.search(rf"^\s+{name}: (.*)$", body, flags=re.M)
    return match[1].strip() if match else ""


def _paths(value: str) -> tuple[str, ...]:
    value = re.sub(r"\s*\(check log file\(s\) for error details\)\s*$", "", value)
    return tuple(p for p in (s.strip() for s in value.split(",")) if p)


_JOB_START = re.compile(r"^(?:local)?rule (\w+):\n((?:[ \t]+.*\n?)*)", flags=re.M)


def failed_jobs(log_text: str) -> list[FailedJob]:
    """The failed jobs of a Snakemake run, from its log (one entry per `Error in rule` block; a job that failed on
    several attempts appears once per attempt, in the order of the log). Wildcards come from the job's start block
    (the error block does not repeat them)."""
    wildcards = {_field(m[2], "jobid"): _field(m[2], "wildcards") for m in _JOB_START.finditer(log_text)}
    jobs = []
    for match in _BLOCK.finditer(log_text):
        body = match[2]
        message = _field(body, "message")
        jobs.append(
            FailedJob(
                rule=match[1],
                wildcards=_field(body, "wildcards") or wildcards.get(_field(body, "jobid"), ""),
                logs=_paths(_field(body, "log")),
                external_jobid=_field(body, "external_jobid"),
                message="" if message == "None" else message,
                outputs=_paths(_field(body, "output")),
            )
        )
    return jobs


def _unique(jobs: Sequence[FailedJob]) -> list[FailedJob]:
    """The last attempt of each (rule, wildcards)."""
    last: dict[tuple[str, str], FailedJob] = {}
    for job in jobs:
        last.pop((job.rule, job.wildcards), None)
        last[(job.rule, job.wildcards)] = job
    return list(last.values())


def log_paths(log: str | Sequence[str] | None) -> list[str]:
    """The Snakemake log file(s) a hook receives (Snakemake 9 passes a list), as a list."""
    if not log:
        return []
    return [str(log)] if isinstance(log, (str, Path)) else [str(p) for p in log]


def read_logs(log: str | Sequence[str] | None) -> str:
    """The text of the run's log file(s); "" where there is none or it cannot be read."""
    texts = []
    for path in log_paths(log):
        try:
            texts.append(Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(texts)


def _log_line(log: str | Sequence[str] | None) -> str:
    return f"Snakemake log: {', '.join(log_paths(log)) or 'none (no log file)'}"


def rerun_command(argv: Sequence[str], python: str) -> str:
    """The command that reruns this run as it was started: `make submit SUBMIT_ARGS=...` for a run of the slurm
    profile (the `snakemake` on PATH, .venv's, has no slurm executor plugin), else the same Snakemake executable
    with the same arguments (`python -m snakemake` where it was started that way)."""
    head = [python, "-m", "snakemake"] if argv[0].endswith("__main__.py") else [argv[0]]
    args = list(argv[1:])
    for i in range(len(args) - 1):
        if args[i] == "--profile" and args[i + 1] == "slurm":
            rest = args[:i] + args[i + 2 :]
            return f"make submit SUBMIT_ARGS={shlex.quote(shlex.join(rest))}" if rest else "make submit"
    return shlex.join([*head, *args])


def start_message(workdir: str, command: str, log: str | Sequence[str] | None) -> str:
    """`onstart`: where the run works and logs, and its command line."""
    return "\n".join(
        [
            f"BroRL workflow started in {workdir}",
            f"command: {command}",
            _log_line(log),
        ]
    )


def success_message(workdir: str, log: str | Sequence[str] | None) -> str:
    """`onsuccess`: where the outputs are."""
    root = Path(workdir)
    return "\n".join(
        [
            f"BroRL workflow finished successfully in {workdir}",
            f"tables: {root / 'results/tables'}  figures: {root / 'results/figures'}  "
            f"summary: {root / 'results/SUMMARY.md'}",
            f"per-job logs: {root / 'results/logs'}  timings: {root / 'results/timings'}",
            _log_line(log),
        ]
    )


def error_message(workdir: str, log: str | Sequence[str] | None, log_text: str, rerun: str) -> str:
    """`onerror`: which jobs failed, where their logs are, how to rerun."""
    jobs = _unique(failed_jobs(log_text))
    lines = [f"BroRL workflow FAILED in {workdir}: {len(jobs)} failed job(s)"]
    for job in jobs:
        where = f" [{job.wildcards}]" if job.wildcards else ""
        slurm = ""
        if job.external_jobid:
            slurm = f", Slurm job {job.external_jobid} (sbatch log under {SLURM_LOGDIR}/{job.rule}/)"
        lines.append(f"  - {job.rule}{where}{slurm}")
        if job.message:
            lines.append(f"      message: {job.message}")
        lines.append(f"      log: {', '.join(job.logs) or '(the rule has no log: see the Snakemake log)'}")
    if not jobs:
        lines.append("  (no `Error in rule` block in the log: the run stopped before or between jobs)")
    lines += [
        _log_line(log),
        f"rerun (finished jobs are kept; incomplete outputs are redone): {rerun} --rerun-incomplete",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- delivery
def _warn(what: str, err: object) -> None:
    print(f"warning: could not send the notification by {what}: {err}", file=sys.stderr)


def post_webhook(url: str, subject: str, text: str, timeout_s: float = WEBHOOK_TIMEOUT_S) -> bool:
    """POST {"text": ...} as JSON (Slack, Mattermost, Teams and ntfy-style webhooks read `text`)."""
    data = json.dumps({"text": f"{subject}\n{text}"}).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (the site's own URL)
            response.read()
        return True
    except Exception as err:  # any failure to notify is a warning only
        _warn(f"webhook {url.split('?')[0]}", err)
        return False


def send_mail(address: str, subject: str, text: str, timeout_s: float = 30.0) -> bool:
    """Mail with the host's `mail` (or `sendmail`), when one is installed."""
    if mail := shutil.which("mail"):
        cmd, stdin = [mail, "-s", subject, address], text
    elif sendmail := shutil.which("sendmail") or next((p for p in SENDMAIL_PATHS if Path(p).is_file()), None):
        cmd, stdin = [sendmail, "-t"], f"To: {address}\nSubject: {subject}\n\n{text}\n"
    else:
        _warn(f"mail to {address}", "neither `mail` nor `sendmail` is installed on this host")
        return False
    try:
        subprocess.run(cmd, input=stdin, text=True, check=True, timeout=timeout_s, capture_output=True)
        return True
    except (OSError, subprocess.SubprocessError) as err:
        _warn(f"mail to {address}", err)
        return False


def send(subject: str, text: str, env: Mapping[str, str]) -> list[str]:
    """Deliver a message where `env` asks for it; the channels that took it."""
    sent = []
    if (url := env.get(WEBHOOK_ENV, "").strip()) and post_webhook(url, subject, text):
        sent.append("webhook")
    if (address := env.get(MAIL_ENV, "").strip()) and send_mail(address, subject, text):
        sent.append("mail")
    return sent


def notify(subject: str, text: str, env: Mapping[str, str]) -> None:
    """Print the message (stderr, beside Snakemake's own output) and deliver it where `env` asks."""
    print(f"\n{subject}\n{text}\n", file=sys.stderr)
    send(subject, text, env)
