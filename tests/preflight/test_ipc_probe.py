"""The IPC probe (brorl.training.openrlhf.ipc_probe): its pure logic, and the real process layout on CPU. The launcher starts
an exporter and an importer as siblings, the way Ray starts the trainer and the vLLM engine, so that the importer is
not an ancestor of the exporter; a CPU tensor crosses between them with the file_system sharing strategy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from brorl.training.openrlhf.ipc_probe import (
    OFF,
    ON,
    ancestor_chain,
    expandable_at_export,
    in_expandable_segment,
    is_ancestor,
    is_ptrace_refusal,
    parse_ppid,
    render,
    verdict,
)
from helpers import ENV


def probe(tmp_path, *args: str) -> tuple[int, int, dict]:
    """(the launcher's pid, its exit status, its JSON) of one CPU run."""
    out = tmp_path / "ipc.json"
    cmd = [sys.executable, "-m", "brorl.training.openrlhf.ipc_probe", "--device", "cpu", "--out", str(out), *args]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = proc.communicate(timeout=120)
    assert out.exists(), output
    return proc.pid, proc.returncode, json.loads(out.read_text())


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    return probe(tmp_path_factory.mktemp("ipc"))


def test_a_cpu_tensor_crosses_between_siblings(cpu_run):
    _, status, result = cpu_run
    (case,) = result["cases"]
    assert status == 0 and case["ok"] and case["reason"] is None, case
    assert case["importer"]["ok"] and case["rebuild_ms"] is not None
    assert result["verdict"].startswith("ok: all 1 cases")


def test_the_children_are_siblings_under_the_launcher(cpu_run):
    launcher, _, result = cpu_run
    (case,) = result["cases"]
    exp, imp = case["exporter"], case["importer"]
    assert case["launcher_pid"] == launcher
    assert len({launcher, exp["pid"], imp["pid"]}) == 3
    assert (exp["pid"], imp["pid"]) == (case["exporter_pid"], case["importer_pid"])
    # each chain starts with the child itself, then its parent: the launcher
    assert exp["chain"][:2] == [exp["pid"], launcher] and imp["chain"][:2] == [imp["pid"], launcher]
    assert not is_ancestor(exp["chain"], imp["pid"]) and not is_ancestor(imp["chain"], exp["pid"])
    assert case["importer_is_ancestor_of_exporter"] is False and case["exporter_is_ancestor_of_importer"] is False


def test_a_child_that_does_not_answer_in_time_fails_the_case(tmp_path):
    _, status, result = probe(tmp_path, "--timeout", "0.01")
    (case,) = result["cases"]
    assert status == 1 and not case["ok"] and "no answer within" in case["reason"]
    assert result["verdict"].startswith("FAIL: 1 of 1 cases") and "ptrace" not in result["verdict"]


def test_the_parent_pid_of_a_stat_line():
    # the command name may hold spaces and parentheses: the fields after the last ")" count
    assert parse_ppid("4242 (python (x) y) S 17 4242 4242 0 -1 4194560") == 17
    chain = ancestor_chain(os.getpid())
    assert chain[:2] == [os.getpid(), os.getppid()] and len(set(chain)) == len(chain)


def test_ancestry():
    # Ray's layout: raylet 20 starts the trainer 31 and the engine 32, siblings
    trainer, engine = [31, 20, 10, 1], [32, 20, 10, 1]
    assert not is_ancestor(trainer, 32) and not is_ancestor(engine, 31)
    assert is_ancestor(trainer, 20) and is_ancestor(trainer, 1)
    assert not is_ancestor(trainer, 31)  # a process is not its own ancestor
    assert is_ancestor([40, 32, 20, 10, 1], 32)  # a child of the engine has the engine as an ancestor


def test_when_the_clone_is_in_an_expandable_segment():
    assert expandable_at_export(ON, toggle=False)
    assert not expandable_at_export(ON, toggle=True)
    assert not expandable_at_export(OFF, toggle=False) and not expandable_at_export("", toggle=False)
    assert expandable_at_export("max_split_size_mb:128, expandable_segments:True", toggle=False)
    segments = [
        {"address": 1000, "total_size": 100, "is_expandable": True},
        {"address": 5000, "total_size": 100, "is_expandable": False},
    ]
    assert in_expandable_segment(segments, 1099) is True and in_expandable_segment(segments, 5000) is False
    assert in_expandable_segment(segments, 1100) is None


def case(conf: str, toggle: bool, ok: bool, reason: str | None = None, user: int | None = None) -> dict:
    return {"alloc_conf": conf, "toggle": toggle, "user": user, "ok": ok, "reason": reason, "rebuild_ms": 1.0}


def test_the_verdict_names_expandable_segments_and_ptrace_scope():
    refused = "RuntimeError: pidfd_getfd: Operation not permitted"
    cases = [case(OFF, False, True), case(ON, False, False, refused), case(ON, True, True)]
    line = verdict(cases)
    assert line.startswith("FAIL: 1 of 3 cases")
    assert "pidfd_getfd refused for expandable_segments:True toggle=no user=current" in line
    assert "expandable segments" in line and "ptrace_scope" in line
    passing = line.split("passing: ")[1]
    assert "expandable_segments:True toggle=yes" in passing and "expandable_segments:False" in passing
    assert is_ptrace_refusal(refused) and not is_ptrace_refusal("PermissionError: [Errno 13] Permission denied")
    # the refusal may sit below the first line of the error
    assert "pidfd_getfd refused" in verdict([dict(case(ON, False, False, "RuntimeError: x"), detail="pidfd_getfd")])


def test_the_verdict_of_other_failures_and_of_success():
    line = verdict([case(OFF, False, True), case(ON, False, False, "exporter: no answer within 60 s", user=65534)])
    assert line == "FAIL: 1 of 2 cases; expandable_segments:True toggle=no user=65534: exporter: no answer within 60 s"
    assert verdict([case(OFF, False, True)]) == "ok: all 1 cases rebuilt the tensor in a sibling process"


def test_the_report_has_a_header_and_a_line_per_case():
    head = {"kernel": "6.8.0", "ptrace_scope": "1", "torch": "2.11.0", "cuda": "12.8", "euid": 0}
    text = render(head, [case(OFF, False, True), case(ON, False, False, "RuntimeError: pidfd_getfd: EPERM")])
    lines = text.splitlines()
    assert lines[0] == "kernel=6.8.0  ptrace_scope=1  torch=2.11.0  cuda=12.8  euid=0" and len(lines) == 4
    assert lines[1].startswith("expandable_segments:False toggle=no user=current") and lines[1].endswith("ok")
    assert lines[2].endswith("FAIL RuntimeError: pidfd_getfd: EPERM") and lines[3].startswith("FAIL: 1 of 2")
