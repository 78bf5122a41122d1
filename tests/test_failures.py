"""Failures named with their file and their fix (docs/cluster.md#after-a-failure): a damaged checkpoint, a full disk
or an unwritable folder, an output that cannot be read, a duplicate id in a benchmark's source."""

from __future__ import annotations

import argparse
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from brorl.cli import remake_hint, run_command, writable_problem
from brorl.models.check import MANIFEST_NAME, quick_problem
from brorl.training.metrics import MetricsError, read_metrics
from helpers import ROOT


def model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "step16"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x" * 100)
    (folder / "config.json").write_text("{}")
    files = {
        name: {"bytes": (folder / name).stat().st_size, "sha256": "-"} for name in ("model.safetensors", "config.json")
    }
    (folder / MANIFEST_NAME).write_text(json.dumps({"files": files}))
    return folder


def test_a_checkpoint_missing_or_truncating_a_file_of_its_manifest_is_named_without_hashing(tmp_path):
    folder = model_folder(tmp_path)
    assert quick_problem(folder) == ""
    (folder / "model.safetensors").write_bytes(b"x" * 60)  # truncated
    assert quick_problem(folder) == f"{folder}: model.safetensors has 60 bytes, {MANIFEST_NAME} says 100"
    (folder / "model.safetensors").unlink()
    assert quick_problem(folder) == f"{folder}: model.safetensors is listed in {MANIFEST_NAME} but missing"
    assert quick_problem(tmp_path / "not-a-model") == ""  # no manifest: nothing to compare


def run(func) -> tuple[int, str]:
    """run_command on a handler; (exit status, what it printed on stderr)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        run_command(argparse.Namespace(func=func), (ValueError,))
    return stop.value.code, err.getvalue()


def test_a_full_disk_or_a_read_only_folder_is_one_line_naming_the_file():
    def full(_):
        raise OSError(errno.ENOSPC, "No space left on device", "results/tables/table1.csv")

    status, text = run(full)
    assert status == 2 and text.startswith("error: cannot write results/tables/table1.csv: No space left on device")

    def other(_):
        raise OSError(errno.ECONNREFUSED, "Connection refused")

    with pytest.raises(OSError):  # not a storage error: left to its own handler
        run_command(argparse.Namespace(func=other), (ValueError,))


def test_scoring_refuses_a_folder_it_cannot_write_before_scoring_anything(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("a file where the output folder should be")
    out = blocker / "x.scores.parquet"
    assert writable_problem(out).startswith(f"{blocker}: cannot write there")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "brorl.evaluation",
            "score",
            "--benchmark",
            "missing.jsonl",
            "--samples",
            "missing",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2 and f"{blocker}: cannot write there" in proc.stderr, proc.stderr
    assert "samples of" not in proc.stderr  # nothing was read or scored first ("scoring N samples of ...")


def test_an_output_that_cannot_be_read_names_its_fix_and_an_engines_state_does_not(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 1}\ngarbage\n')
    with pytest.raises(MetricsError, match=f"{metrics}:1: .*|{metrics}:2: not JSON .*; delete {metrics}: the next run"):
        read_metrics(metrics)
    assert remake_hint("results/eval/a/step1/x.samples.parquet").startswith("; delete results/eval/a/step1/x.samples")
    assert remake_hint("results/train/a/run/metrics.jsonl") == ""  # the live run folder: nothing remakes it


def test_a_duplicate_id_names_the_source_file(tmp_path):
    from brorl.benchmarks import prepare as prep
    from brorl.benchmarks.registry import MATH_SUFFIX, load_entry

    entry = {
        "name": "toy",
        "family": "math",
        "version": 1,
        "description": "toy",
        "sources": [{"kind": "local", "path": "toy.jsonl", "fields": {"id": "qid", "problem": "q", "answer": "a"}}],
        "prompt_template": "{problem} " + MATH_SUFFIX,
        "scorer": "math",
        "n_samples": 16,
        "expected_rows": 2,
    }
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(entry))
    source = tmp_path / "toy.jsonl"
    source.write_text("".join(json.dumps({"qid": "q1", "q": "1+1?", "a": 2}) + "\n" for _ in range(2)))
    with pytest.raises(ValueError, match=f"{source}:2: duplicate id 'toy/q1'"):
        prep.prepare(load_entry(tmp_path / "toy.yaml"), str(source), tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("ending", "status", "stderr"), [("", 0, ""), ("sys.exit(3)", 3, ""), ("sys.exit('no')", 1, "no")]
)
def test_a_parquet_command_leaves_with_its_status_and_without_teardown(tmp_path, ending, stderr, status):
    """Arrow's thread pool can abort the interpreter's teardown after the work is done (apache/arrow#34314): the stage
    commands that read parquet leave without it, keeping their exit status; an atexit hook shows whether teardown ran."""
    program = tmp_path / "prog.py"
    program.write_text(
        "import atexit, sys\nfrom brorl.cli import run_as_program\n"
        "atexit.register(lambda: print('teardown ran', file=sys.stderr))\n"
        f"def main():\n    print('work done')\n    {ending or 'pass'}\nrun_as_program(main)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    proc = subprocess.run([sys.executable, program], capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (status, "work done\n", stderr)
    for stage in ("analysis", "evaluation", "probe", "simulation"):
        assert "run_as_program(main)" in (ROOT / "workflow" / "brorl" / stage / "__main__.py").read_text()
