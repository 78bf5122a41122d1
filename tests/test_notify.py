"""brorl.ops.run.notify and the workflow's onstart/onsuccess/onerror hooks: the messages, and their delivery to a real local
webhook (an HTTP server in a thread) and a `mail` program."""

from __future__ import annotations

import json
import logging
import os
import stat
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from brorl.ops.run import notify
from helpers import ROOT, http_server, output_of, snakemake

# The events of two failed jobs as Snakemake 9.27 logs them (Job.log_info, Job.log_error: the fields of
# snakemake/jobs.py); a remote executor (Slurm) adds aux.external_jobid and its message.
EVENTS = [
    {
        "event": "job_info",
        "jobid": 7,
        "rule_name": "generate_samples",
        "wildcards": {"arm": "prorl_n16", "step": "25", "benchmark": "aime24"},
    },
    {"event": "job_info", "jobid": 9, "rule_name": "collect_units", "wildcards": {}},
    {
        "event": "job_error",
        "rule_name": "generate_samples",
        "jobid": 7,
        "rule_msg": "SLURM-job '4242' failed, SLURM status is: 'TIMEOUT'",
        "output": ["results/eval/prorl_n16/step25/aime24.samples.parquet"],
        "log": ["results/logs/generate_samples/prorl_n16/step25/aime24.log"],
        "aux": {"external_jobid": "4242"},
    },
    {
        "event": "job_error",
        "rule_name": "collect_units",
        "jobid": 9,
        "rule_msg": None,
        "output": ["results/stats/instance_scores.parquet"],
        "log": [],
        "aux": {},
    },
]


def _failed(events) -> list:
    """The failed jobs JobEvents collects from `events`, logged through a logger as Snakemake logs them."""
    logger = logging.getLogger(f"test-notify-{id(events)}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    events_handler = notify.JobEvents.install(logger.name)
    for fields in events:
        level = logging.ERROR if fields["event"] == "job_error" else logging.INFO
        logger.log(level, "event", extra=dict(fields))
    logger.removeHandler(events_handler)
    return events_handler.failed


def test_the_event_names_are_snakemakes():
    from snakemake_interface_logger_plugins.common import LogEvent

    assert (notify.JOB_INFO, notify.JOB_ERROR) == (LogEvent.JOB_INFO, LogEvent.JOB_ERROR)


def test_failed_jobs_come_from_snakemakes_events_with_wildcards_logs_and_slurm_ids():
    jobs = _failed(EVENTS)
    assert [j.rule for j in jobs] == ["generate_samples", "collect_units"]
    gen, units = jobs
    assert gen.wildcards == "arm=prorl_n16, step=25, benchmark=aime24"
    assert gen.logs == ("results/logs/generate_samples/prorl_n16/step25/aime24.log",)
    assert gen.external_jobid == "4242" and "TIMEOUT" in gen.message
    assert units.logs == () and units.message == "" and units.wildcards == ""


def test_the_rerun_hint_is_a_command_that_works(tmp_path, monkeypatch):
    """The same Snakemake and arguments, by its bare name where the PATH finds that one (the driver environment
    active: `snakemake --profile slurm ...`), else by its path; `python -m snakemake` where it ran that way."""
    argv = ["/r/.venv-slurm/bin/snakemake", "--profile", "slurm", "--sdm", "conda", "--configfile", "a b.yaml"]
    expected = "/r/.venv-slurm/bin/snakemake --profile slurm --sdm conda --configfile 'a b.yaml'"
    assert notify.rerun_command(argv, "/py") == expected
    active = tmp_path / "bin" / "snakemake"
    active.parent.mkdir()
    active.write_text("#!/bin/sh\n")
    active.chmod(0o755)
    monkeypatch.setenv("PATH", str(active.parent))
    assert notify.rerun_command([str(active), *argv[1:3]], "/py") == "snakemake --profile slurm"
    assert notify.rerun_command(["/r/.venv/bin/snakemake", "--cores", "1"], "/py") == "/r/.venv/bin/snakemake --cores 1"
    main = "/r/lib/python3.11/site-packages/snakemake/__main__.py"
    assert notify.rerun_command([main, "-n"], "/r/bin/python") == "/r/bin/python -m snakemake -n"


def test_the_error_message_names_each_failed_job_its_log_and_the_rerun_command():
    failed = _failed(EVENTS)
    text = notify.error_message(
        "/scratch/run", ["/scratch/run/.snakemake/log/x.log"], failed, "snakemake --profile slurm"
    )
    assert "FAILED in /scratch/run: 2 failed job(s)" in text
    assert "generate_samples [arm=prorl_n16, step=25, benchmark=aime24], Slurm job 4242" in text
    assert "results/logs/slurm/generate_samples/" in text
    assert "log: results/logs/generate_samples/prorl_n16/step25/aime24.log" in text
    assert "collect_units" in text and "the rule has no log" in text
    assert "Snakemake log: /scratch/run/.snakemake/log/x.log" in text
    assert "snakemake --profile slurm\n" in text + "\n" and "--rerun-incomplete" not in text
    retried = _failed([*EVENTS, EVENTS[2]])  # a second failed attempt of the same job
    assert len(retried) == 3 and notify.error_message("/w", None, retried, "s").count("generate_samples [") == 1
    assert "no job failed" in notify.error_message("/w", None, [], "s")


def test_start_and_success_messages_say_where_the_run_and_its_outputs_are(tmp_path):
    start = notify.start_message("/w", "snakemake --profile slurm", [])
    assert "started in /w" in start and "command: snakemake --profile slurm" in start and "none (no log" in start
    done = notify.success_message("/w", "/w/.snakemake/log/a.log")
    assert "/w/results/tables" in done and "/w/results/figures" in done and "/w/.snakemake/log/a.log" in done


class _Hook(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Hook.received.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    _Hook.received = []
    with http_server(_Hook) as url:
        yield f"{url}/hook", _Hook.received


def test_the_webhook_gets_the_message_as_json_and_unset_sends_nothing(webhook):
    url, received = webhook
    assert notify.send("BroRL: workflow FAILED", "2 failed job(s)", {}) == []
    assert notify.send("BroRL: workflow FAILED", "2 failed job(s)", {notify.WEBHOOK_ENV: url}) == ["webhook"]
    assert received == [("application/json", {"text": "BroRL: workflow FAILED\n2 failed job(s)"})]


def test_an_unreachable_webhook_or_a_missing_mail_program_is_a_warning_not_an_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no mail, no sendmail
    monkeypatch.setattr(notify, "SENDMAIL_PATHS", ())  # nor /usr/sbin/sendmail
    env = {notify.WEBHOOK_ENV: "http://127.0.0.1:9/nothing-listens", notify.MAIL_ENV: "ops@example.org"}
    assert notify.send("s", "t", env) == []
    err = capsys.readouterr().err
    assert "could not send the notification by webhook http://127.0.0.1:9/nothing-listens" in err
    assert "could not send the notification by mail to ops@example.org" in err and "sendmail" in err


def test_mail_goes_through_the_hosts_mail_program(tmp_path, monkeypatch):
    record = tmp_path / "mail.txt"
    program = tmp_path / "mail"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\ncat >> {record}\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert notify.send("BroRL: workflow finished", "outputs in /w", {notify.MAIL_ENV: "ops@example.org"}) == ["mail"]
    assert record.read_text().splitlines() == ["-s", "BroRL: workflow finished", "ops@example.org", "outputs in /w"]


@pytest.mark.workflow
def test_the_hooks_print_start_failure_and_success_and_post_to_the_webhook(tmp_path, webhook, monkeypatch):
    url, received = webhook
    (tmp_path / "Snakefile").write_text(
        f'import os, sys\nfrom pathlib import Path\nsys.path.insert(0, "{ROOT / "workflow"}")\n'
        f'include: "{ROOT / "workflow/rules/hooks.smk"}"\n'
        'rule all:\n    input: "b/x.txt"\n'
        'rule make:\n    output: "b/{name}.txt"\n    log: "logs/make/{name}.log"\n'
        '    shell: "test -e ok || exit 3; touch {output} {log}"\n'
    )
    monkeypatch.setenv(notify.WEBHOOK_ENV, url)
    failed = snakemake("--cores", "1", cwd=tmp_path)
    text = output_of(failed)
    assert failed.returncode != 0
    assert "BroRL workflow started in" in text and "BroRL workflow FAILED in" in text
    assert "  - make [name=x]\n      log: logs/make/x.log" in text and "--cores 1\n" in text
    (tmp_path / "ok").touch()
    done = snakemake("--cores", "1", cwd=tmp_path)
    assert done.returncode == 0 and "BroRL workflow finished successfully" in output_of(done)
    subjects = [body["text"].split("\n", 1)[0] for _, body in received]
    assert subjects == [
        "BroRL: workflow started",
        "BroRL: workflow FAILED",
        "BroRL: workflow started",
        "BroRL: workflow finished",
    ]
    dry = snakemake("--cores", "1", "-n", "--forcerun", "make", cwd=tmp_path)
    assert dry.returncode == 0 and "BroRL workflow" not in output_of(dry) and len(received) == 4  # no hooks on -n


def test_the_snakefile_includes_the_hooks():
    assert 'include: "workflow/rules/hooks.smk"' in (ROOT / "Snakefile").read_text()
    assert Path(ROOT / "workflow/rules/hooks.smk").is_file()
