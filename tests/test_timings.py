"""brorl.ops.run.timings: a run's Snakemake timing files summed per rule, and the DAG's wall time from its log."""

from __future__ import annotations

import subprocess
import sys

import pytest
from brorl.ops.run.timings import collect, format_table, log_span_s, read_job, rule_times
from helpers import ENV

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def timing(path, *rows: tuple[float, float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"{s}\t0:00:00\t1\t1\t1\t1\t0\t0\t50\t{c}\n" for s, c in rows))


def test_jobs_are_summed_per_rule_and_the_busiest_rule_comes_first(tmp_path):
    timing(tmp_path / "generate_samples/base/step0/all_benchmarks.tsv", (30.0, 15.0))
    timing(tmp_path / "generate_samples/prorl_n4/step3/all_benchmarks.tsv", (20.0, 10.0))
    timing(tmp_path / "simulate_sensitivity/sgd.tsv", (4.0, 4.0), (6.0, 4.0))  # two repeats: their mean
    rows = collect(tmp_path)
    assert [(r.rule, r.jobs, r.job_s, r.max_s, r.cpu_s) for r in rows] == [
        ("generate_samples", 2, 50.0, 30.0, 25.0),
        ("simulate_sensitivity", 1, 5.0, 5.0, 4.0),
    ]
    table = format_table(rows, wall_s=40.0, cores=2)
    assert "| generate_samples | 2 | 50 | 30.0 | 25 |" in table and "| **total** | 3 | 55 | 30.0 | 29 |" in table
    assert "DAG wall time 40 s (0.7 min), job-seconds / wall = 1.38 of 2 cores." in table
    assert rule_times({"empty": []}) == []


def test_bad_input_is_named(tmp_path):
    (tmp_path / "bad.tsv").write_text("x\ty\n1\t2\n")
    with pytest.raises(ValueError, match="not a Snakemake timing file"):
        read_job(tmp_path / "bad.tsv")
    with pytest.raises(FileNotFoundError, match="no timing folder"):
        collect(tmp_path / "none")
    proc = subprocess.run(
        [sys.executable, "-m", "brorl.ops.run.timings", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert proc.returncode == 2 and "no timing folder" in proc.stderr


def test_the_wall_time_spans_the_logs_first_and_last_stamp():
    log = "Building DAG\n[Tue Dec  1 21:18:04 2026]\nrule a:\n...\n[Tue Dec  1 21:38:00 2026]\nFinished jobid: 1\n"
    assert log_span_s(log) == 1196.0
    assert log_span_s("[Tue Dec  1 21:18:04 2026]\n") is None
