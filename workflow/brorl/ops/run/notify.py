"""Messages of the workflow's onstart / onsuccess / onerror hooks (workflow/rules/hooks.smk), and their optional
delivery to a webhook and a mail address (docs/cluster.md#notifications).

The failed jobs come from Snakemake's own structured log events (``JobEvents``, a handler on its logger that the
hooks file installs: job errors with their rule, log files and Slurm job id), never from parsing its text log.
Building a message is pure (``failed_job``, ``start_message``, ``success_message``, ``error_message``); ``send``
delivers one where the environment asks for it (BRORL_NOTIFY_WEBHOOK, BRORL_NOTIFY_MAIL; unset = nothing is sent).
A notification that cannot be delivered is a warning on stderr, never an error: the run's outcome stays the run's.
"""

from __future__ import annotations

import json
import logging
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


# Snakemake's structured log events (snakemake_interface_logger_plugins.common.LogEvent, a StrEnum): every job's
# start (its wildcards) and every failed attempt (Job.log_error, also for each job of a failed group), with fields.
JOB_INFO = "job_info"
JOB_ERROR = "job_error"


@dataclass(frozen=True)
class FailedJob:
    """One failed attempt of a job, from Snakemake's JOB_ERROR event."""

    rule: str
    wildcards: str = ""
    logs: tuple[str, ...] = ()
    external_jobid: str = ""
    message: str = ""
    outputs: tuple[str, ...] = ()


def wildcards_text(wildcards: Mapping[str, object] | None) -> str:
    """`arm=prorl_n16, step=25`: a job's wildcards as Snakemake prints them."""
    return ", ".join(f"{key}={value}" for key, value in (wildcards or {}).items())


def failed_job(fields: Mapping[str, object], wildcards: Mapping[object, str]) -> FailedJob:
    """The FailedJob of one JOB_ERROR event's fields (rule_name, jobid, rule_msg, log, output, aux: Job.log_error);
    its wildcards from the JOB_INFO event of the same jobid (the error event does not repeat them)."""
    aux = fields.get("aux") or {}
    return FailedJob(
        rule=str(fields["rule_name"]),
        wildcards=wildcards.get(fields.get("jobid"), ""),
        logs=tuple(map(str, fields.get("log") or ())),
        external_jobid=str(aux.get("external_jobid") or ""),  # set by remote executors (Slurm's job id)
        message=str(fields.get("rule_msg") or ""),
        outputs=tuple(map(str, fields.get("output") or ())),
    )


class JobEvents(logging.Handler):
    """Collects the failed jobs of this run from Snakemake's log events as they happen, in the driver process (the
    only one that logs job errors). ``install()`` attaches it to Snakemake's logger; the onerror hook reads
    ``failed``. Snakemake builds its logger before it reads the Snakefile and removes every handler only when the
    run ends, after the hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.wildcards: dict[object, str] = {}
        self.failed: list[FailedJob] = []

    def emit(self, record: logging.LogRecord) -> None:
        event = str(getattr(record, "event", ""))
        if event == JOB_INFO:
            self.wildcards[getattr(record, "jobid", None)] = wildcards_text(getattr(record, "wildcards", None))
        elif event == JOB_ERROR:
            self.failed.append(failed_job(vars(record), self.wildcards))

    @classmethod
    def install(cls, logger_name: str = "snakemake.logging") -> JobEvents:
        handler = cls()
        logging.getLogger(logger_name).addHandler(handler)
        return handler


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


def _log_line(log: str | Sequence[str] | None) -> str:
    return f"Snakemake log: {', '.join(log_paths(log)) or 'none (no log file)'}"


def rerun_command(argv: Sequence[str], python: str) -> str:
    """The command that reruns this run as it was started: the same Snakemake with the same arguments, by its bare
    name where the PATH finds that one (`snakemake --profile slurm ...`), `python -m snakemake` where it was
    started that way."""
    head = [python, "-m", "snakemake"] if argv[0].endswith("__main__.py") else [argv[0]]
    name = Path(argv[0]).name
    found = shutil.which(name)
    if head == [argv[0]] and found and Path(found).resolve() == Path(argv[0]).resolve():
        head = [name]
    return shlex.join([*head, *argv[1:]])


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


def error_message(workdir: str, log: str | Sequence[str] | None, failed: Sequence[FailedJob], rerun: str) -> str:
    """`onerror`: which jobs failed (``failed``: every failed attempt, JobEvents), where their logs are, how to
    rerun."""
    jobs = _unique(failed)
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
        lines.append("  (no job failed: the run stopped before or between jobs)")
    lines += [
        _log_line(log),
        f"rerun (finished jobs are kept; interrupted and deleted outputs are remade): {rerun}",
        "a job that failed on a file it cannot read names that file and its fix in its log (usually: delete it)",
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
