"""`make status` (brorl.ops.run.status) on a run folder laid out as Snakemake, the Slurm plugin and the training jobs leave it;
through the real local Slurm and Snakemake's own records: tests/cluster/test_slurm.py (the training drill)."""

from __future__ import annotations

import base64
import json
import time

from brorl.ops.run.status import decode_marker, report, rule_of_comment, slurm_stages
from brorl.training.lease import Holder, write_lease


def marker(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode()


def test_rules_are_read_from_the_plugins_job_comments():
    assert rule_of_comment("rule_train_ppo_wildcards_prorl_n4_0") == "train_ppo"
    assert rule_of_comment("group_scoring_score_samples_summarize_evaluation") == "group scoring"
    assert rule_of_comment("something else") is None
    assert decode_marker(marker("results/train/a/segment0.json")) == "results/train/a/segment0.json"


def test_slurm_rows_of_other_directories_are_left_out_and_failed_jobs_name_their_logs(tmp_path):
    log = tmp_path / "rule_generate_samples" / "base_step0_aime24" / "17.log"
    log.parent.mkdir(parents=True)
    log.write_text("")
    rows = [
        ["15", "RUNNING", "/run", "rule_train_ppo_wildcards_a_0"],
        ["16", "PENDING", "/run", "rule_generate_samples_wildcards_x"],
        ["17", "FAILED", "/run", "rule_generate_samples_wildcards_y"],
        ["18", "CANCELLED by 0", "/run", "rule_generate_samples_wildcards_z"],
        ["19", "RUNNING", "/other", "rule_train_ppo_wildcards_b_0"],
    ]
    stages = slurm_stages(rows, "/run", tmp_path)
    assert (stages["train_ppo"].running, stages["generate_samples"].pending) == (1, 1)
    assert stages["generate_samples"].failed == [
        f"job 17 FAILED: {log}",
        "job 18 CANCELLED: (no Slurm log kept)",
    ]


def test_the_report_shows_arms_stages_and_what_a_dead_driver_left(tmp_path):
    meta = tmp_path / ".snakemake" / "metadata"
    meta.mkdir(parents=True)
    for i, rule in enumerate(["build_tiny_model", "export_checkpoint", "export_checkpoint"]):
        (meta / f"rec{i}").write_text(json.dumps({"rule": rule}))
    incomplete = tmp_path / ".snakemake" / "incomplete"
    incomplete.mkdir(parents=True)
    (incomplete / marker("results/train/a/segment1.json")).write_text("")
    arm = tmp_path / "results" / "train" / "a"
    (arm / "run").mkdir(parents=True)
    waves = {"refill": "rounds", "step_s": 5.0, "update_s": 1.0, "waves": [{"prompts": 8, "kept": 5, "s": 2.0}] * 2}
    records = [{"step": 1}, {"step": 2}, {"step": 3, **waves}]  # steps 1-2: metrics before schema 9
    (arm / "run" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (arm / "segment0.json").write_text(json.dumps({"plan": {"continued_steps": 16}}))
    now = time.time()
    write_lease(arm / "run", Holder("15", "gpu01", 1, 1, now, now))
    text = report(tmp_path, [["15", "RUNNING", str(tmp_path), "rule_train_ppo_wildcards_a_1"]])
    assert "a: step 3/16, segments done 1; training: Slurm job 15 on gpu01 (segment 1" in text
    assert "last 3 steps: 2.0 waves a step (max 2, rounds); waves 80%, update 20% of the step time" in text
    assert "export_checkpoint: 2 done, 0 pending, 0 running" in text
    assert "train_ppo: 0 done, 0 pending, 1 running" in text
    assert "results/train/a/segment1.json" in text.split("the next run redoes them")[1]
    assert "no Slurm accounting here" in report(tmp_path, None)
