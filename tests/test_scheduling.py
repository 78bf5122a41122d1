"""The suite's worker scheduling (tests/conftest.py): a module in SAME_WORKER runs on its host module's worker, right
after it, and that worker is handed no other module until it reaches the merged one. Checked on a synthetic suite of the same
paths, run by pytest-xdist with `make test`'s options, whose tests record which worker ran them and in what order."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import SAME_WORKER

TESTS = Path(__file__).resolve().parent
RECORD = """
import json, os, time
from pathlib import Path


def test_{name}():
    time.sleep({sleep})
    with open(Path(__file__).parents[{depth}] / "order.jsonl", "a") as f:
        f.write(json.dumps({{"test": "{name}", "worker": os.environ["PYTEST_XDIST_WORKER"], "t": time.time()}}) + "\\n")
"""


def test_a_merged_module_runs_right_after_its_host_on_a_worker_that_takes_nothing_else(tmp_path):
    ((guest, host),) = SAME_WORKER.items()
    suite = {host: 3.0, guest: 0.2, **{f"tests/test_other{i}.py": 0.1 for i in range(8)}}
    for path, sleep in suite.items():
        file = tmp_path / path
        file.parent.mkdir(parents=True, exist_ok=True)
        name = Path(path).stem
        file.write_text(RECORD.format(name=name, sleep=sleep, depth=len(Path(path).parts) - 1))
    shutil.copy(TESTS / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    options = ["-n", "3", "--dist", "loadscope", "--no-loadscope-reorder", "-p", "no:cacheprovider", "-q"]
    proc = subprocess.run([sys.executable, "-m", "pytest", *options], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = [json.loads(line) for line in (tmp_path / "order.jsonl").read_text().splitlines()]
    assert len(runs) == len(suite)
    by_name = {r["test"]: r for r in runs}
    host_run, guest_run = by_name[Path(host).stem], by_name[Path(guest).stem]
    assert host_run["worker"] == guest_run["worker"], runs
    on_that_worker = [r["test"] for r in sorted(runs, key=lambda r: r["t"]) if r["worker"] == host_run["worker"]]
    # the others (0.8 s in all) are done on the two other workers long before the host's 3 s are: none was queued
    # behind the host on its worker
    assert on_that_worker == [Path(host).stem, Path(guest).stem], on_that_worker
