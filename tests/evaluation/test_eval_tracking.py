"""Tracking of evaluation (brorl.evaluation.tracking, rule track_evaluation): a checkpoint's summaries become
eval/<benchmark>/pass1 (+ _se) and family averages; W&B gets one run per arm, <arm>-eval, that every checkpoint
resumes with the checkpoint's step as the eval/step axis (an offline run read back with wandb's own reader);
TensorBoard gets one event file per checkpoint (read back with TensorBoard's reader); the CLI writes the marker; the
DAG has one track_evaluation job per evaluated checkpoint when tracking is on and none when it is off."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from brorl.config import load_yaml_config
from brorl.evaluation.tracking import (
    STEP_METRIC,
    checkpoint_metrics,
    combined_se,
    run_id,
    run_name,
    tensorboard_file,
    track_checkpoint,
)
from brorl.training.tracking import KEY_ENV, Tracking, TrackingError, WandbSettings
from helpers import CONFIG, ENV, TINY, job_counts, output_of, snakemake, wandb_runs, write_yaml

SECRET = "0123456789abcdef0123456789abcdef01234567"  # the shape of a W&B key; must never reach a file or an argv


def _summary(step: int, benchmark: str, family: str, pass1: float, se: float | None = 0.01, arm: str = "brorl_n16"):
    """The fields of a BENCH.summary.json (brorl.evaluation.summary.summary_record) that tracking reads."""
    return {
        "arm": arm,
        "step": step,
        "benchmark": benchmark,
        "family": family,
        "n_items": 30,
        "n_samples": 16,
        "pass_at_1": pass1,
        "pass_at_1_stderr": se,
        "pass_at_1_ci95": None if se is None else [pass1 - 1.96 * se, pass1 + 1.96 * se],
        "pass_at_k": {"1": pass1},
    }


def _checkpoint(step: int, shift: float = 0.0) -> list[dict]:
    return [
        _summary(step, "aime24", "math", 0.2 + shift, se=0.03),
        _summary(step, "math500", "math", 0.6 + shift, se=0.04),
        _summary(step, "apps", "code", 0.3 + shift, se=None),  # one problem: no standard error
        _summary(step, "rg_games", "reasoning_gym", 0.5 + shift, se=0.02),
    ]


# ---------------------------------------------------------------------------------------------------- pure part
def test_checkpoint_metrics_are_pass1_and_se_per_benchmark_and_family_averages():
    metrics = checkpoint_metrics(_checkpoint(400))
    assert metrics["eval/aime24/pass1"] == 0.2 and metrics["eval/aime24/pass1_se"] == 0.03
    assert metrics["eval/math500/pass1"] == 0.6 and metrics["eval/rg_games/pass1_se"] == 0.02
    assert "eval/apps/pass1_se" not in metrics and metrics["eval/apps/pass1"] == 0.3  # a null se is not logged
    # family averages: unweighted mean, se = sqrt(sum se^2) / k (the evaluation table's), only where every se exists
    assert metrics["eval/math_avg/pass1"] == pytest.approx(0.4)
    assert metrics["eval/math_avg/pass1_se"] == pytest.approx(math.sqrt(0.03**2 + 0.04**2) / 2)
    assert metrics["eval/code_avg/pass1"] == 0.3 and "eval/code_avg/pass1_se" not in metrics
    assert metrics["eval/reasoning_gym_avg/pass1"] == 0.5
    assert list(metrics)[:2] == ["eval/aime24/pass1", "eval/aime24/pass1_se"]  # benchmarks sorted, then averages
    assert STEP_METRIC not in metrics and all(isinstance(v, float) for v in metrics.values())
    from brorl.stats.stderr import combined_se as table_se  # the evaluation table's (the job does not import it)

    assert combined_se([0.03, 0.04, 0.5]) == table_se([0.03, 0.04, 0.5]) and combined_se([0.2]) == table_se([0.2])
    nan = checkpoint_metrics([_summary(400, "amc", "math", 0.5, se=float("nan"))])
    assert nan == {"eval/amc/pass1": 0.5, "eval/math_avg/pass1": 0.5}


@pytest.mark.parametrize(
    ("summaries", "words"),
    [
        ([], "share arm and step"),
        ([_summary(400, "aime24", "math", 0.2), _summary(800, "amc", "math", 0.2)], "share arm and step"),
        ([_summary(400, "aime24", "math", 0.2), _summary(400, "amc", "math", 0.2, arm="base")], "share arm"),
        ([_summary(400, "aime24", "math", 0.2)] * 2, "two summaries of benchmark 'aime24'"),
        ([_summary(400, ["aime24", "amc"], "math", 0.2)], "mixes benchmarks"),
        ([{k: v for k, v in _summary(400, "amc", "math", 0.2).items() if k != "step"}], "integer step"),
    ],
)
def test_checkpoint_metrics_refuse_summaries_of_several_checkpoints_or_duplicates(summaries, words):
    with pytest.raises(TrackingError, match=words):
        checkpoint_metrics(summaries)


def test_the_evaluation_run_is_one_per_arm_and_experiment():
    paper = WandbSettings(enabled=True, project="brorl", group="paper-{arm}")
    assert run_name("brorl_n512") == "brorl_n512-eval"
    assert run_id(paper, "brorl_n512") == run_id(WandbSettings(True, "brorl", None, "paper-{arm}"), "brorl_n512")
    others = {
        run_id(paper, "prorl_n16"),
        run_id(WandbSettings(True, "other", None, "paper-{arm}"), "brorl_n512"),
        run_id(WandbSettings(True, "brorl", "team", "paper-{arm}"), "brorl_n512"),
        run_id(WandbSettings(True, "brorl", None, "rehearsal-{arm}"), "brorl_n512"),
    }
    assert run_id(paper, "brorl_n512") not in others and len(others) == 4
    assert len(run_id(paper, "brorl_n512")) <= 64 and run_id(paper, "brorl_n512").replace("-", "").isalnum()


# ------------------------------------------------------------------------------------------------------------ I/O
def _files_holding(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_two_checkpoints_append_to_one_offline_wandb_run_of_the_arm(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv(KEY_ENV, SECRET)
    settings = WandbSettings(enabled=True, project="p", group="paper-{arm}", mode="offline")
    folder = tmp_path / "results" / "eval" / "brorl_n16"
    # the later checkpoint first: evaluation may finish out of order, the eval/step axis keeps both points
    later = track_checkpoint(Tracking(settings), _checkpoint(800, shift=0.1), folder)
    earlier = track_checkpoint(Tracking(settings), _checkpoint(400), folder)

    ident = run_id(settings, "brorl_n16")
    expected = {"run_id": ident, "name": "brorl_n16-eval", "group": "paper-brorl_n16", "project": "p"}
    assert later["wandb"] == earlier["wandb"] == {**expected, "entity": None, "mode": "offline"}
    assert later["tensorboard"] is None and (later["arm"], later["step"]) == ("brorl_n16", 800)
    runs = wandb_runs(tmp_path / "wandb-dir")  # offline, each job's part is a folder of the one run id
    assert len(runs) == 2 and {r["run"]["run_id"] for r in runs} == {ident}
    for run in runs:
        assert run["run"]["display_name"] == "brorl_n16-eval" and run["run"]["run_group"] == "paper-brorl_n16"
        assert run["run"]["job_type"] == "eval" and run["run"]["resume"] and run["exit_code"] == 0
    logged = [values for run in runs for _, values in run["history"]]
    assert [values[STEP_METRIC] for values in logged] == [800, 400]
    assert logged[0] == pytest.approx({STEP_METRIC: 800, **checkpoint_metrics(_checkpoint(800, shift=0.1))})
    assert logged[1] == pytest.approx({STEP_METRIC: 400, **checkpoint_metrics(_checkpoint(400))})
    assert not (folder / "wandb").exists()  # $WANDB_DIR wins over the arm folder
    assert not _files_holding(tmp_path, SECRET)


def test_online_tracking_without_the_key_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    tracking = Tracking(WandbSettings(enabled=True, mode="online"), tensorboard=True)
    with pytest.raises(TrackingError, match=KEY_ENV):
        track_checkpoint(tracking, _checkpoint(400), tmp_path / "arm")
    assert not (tmp_path / "arm").exists()
    off = track_checkpoint(Tracking(), _checkpoint(400), tmp_path / "off")  # tracking off: only the record
    assert off["wandb"] is None and off["tensorboard"] is None and off["metrics"] and not (tmp_path / "off").exists()


def _tensorboard_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def test_tensorboard_gets_one_event_file_per_checkpoint_read_back_in_step_order(tmp_path):
    folder = tmp_path / "results" / "eval" / "prorl_n16"
    tracking = Tracking(tensorboard=True)
    for step, shift in ((800, 0.1), (400, 0.0), (1200, 0.2)):
        record = track_checkpoint(tracking, _checkpoint(step, shift), folder)
        assert record["tensorboard"] == str(tensorboard_file(folder, step)) and record["wandb"] is None
    files = sorted(p.name for p in (folder / "tensorboard").iterdir())
    assert files == [tensorboard_file(folder, s).name for s in (400, 800, 1200)]  # nothing else (no partial file)
    scalars = _tensorboard_scalars(folder / "tensorboard")
    assert set(scalars) == set(checkpoint_metrics(_checkpoint(400)))
    assert [s for s, _ in scalars["eval/aime24/pass1"]] == [400, 800, 1200]
    assert [v for _, v in scalars["eval/aime24/pass1"]] == pytest.approx([0.2, 0.3, 0.4])
    assert [v for _, v in scalars["eval/math_avg/pass1_se"]] == pytest.approx([math.sqrt(0.0025) / 2] * 3)

    # a rerun of a checkpoint (its summaries changed) replaces that checkpoint's file: still one point per step
    track_checkpoint(tracking, _checkpoint(800, shift=0.3), folder)
    scalars = _tensorboard_scalars(folder / "tensorboard")
    assert [s for s, _ in scalars["eval/aime24/pass1"]] == [400, 800, 1200]
    assert [v for _, v in scalars["eval/aime24/pass1"]] == pytest.approx([0.2, 0.5, 0.4])
    assert not (folder / "wandb").exists()


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "brorl.evaluation", "track", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_track_cli_writes_the_marker_and_refuses_summaries_of_another_checkpoint(tmp_path):
    paths = []
    for summary in _checkpoint(400):
        paths.append(tmp_path / f"{summary['benchmark']}.summary.json")
        paths[-1].write_text(json.dumps(summary))
    folder, out = tmp_path / "eval" / "brorl_n16", tmp_path / "eval" / "brorl_n16" / "step400" / "tracked.json"
    tracking = json.dumps({"wandb": {"enabled": False}, "tensorboard": True})
    args = ["--summaries", *paths, "--tracking", tracking, "--folder", folder, "--out", out]
    proc = _cli(*args, "--arm", "brorl_n16", "--step", 400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    marker = json.loads(out.read_text())
    assert (marker["arm"], marker["step"], marker["wandb"]) == ("brorl_n16", 400, None)
    assert marker["tensorboard"] == str(tensorboard_file(folder, 400)) and Path(marker["tensorboard"]).is_file()
    assert marker["metrics"] == pytest.approx(checkpoint_metrics(_checkpoint(400)))
    assert marker["summaries"] == [str(p) for p in paths]
    assert "tensorboard" in proc.stdout

    wrong = _cli(*args, "--arm", "brorl_n16", "--step", 800)
    assert wrong.returncode == 2 and "error: the summaries are of ('brorl_n16', 400)" in wrong.stderr


# ------------------------------------------------------------------------------------------------------- workflow
def _evaluation_points(cfg: dict) -> list[tuple[str, int]]:
    """Every evaluated checkpoint (as evaluation_points in workflow/rules/common.smk)."""
    from brorl.training.recipe import enabled_arms, evaluation_steps

    evaluation = cfg["evaluation"]
    points = [("base", cfg["base_model"]["start_step"])] if evaluation["steps"].get("include_start", True) else []
    points += [(arm, step) for arm in enabled_arms(cfg) for step in evaluation_steps(cfg, arm)]
    return points + [(model["name"], model["step"]) for model in evaluation.get("models", [])]


@pytest.mark.workflow
def test_dry_run_tracks_every_evaluated_checkpoint_only_when_tracking_is_on(tmp_path, monkeypatch):
    cfg = load_yaml_config(CONFIG, TINY)
    points = _evaluation_points(cfg)
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert len(points) > 1

    off = snakemake("-n", "--directory", tmp_path / "off", "--configfile", TINY)
    assert off.returncode == 0, output_of(off)[-3000:]
    assert "track_evaluation" not in job_counts(off) and "tracked.json" not in output_of(off)

    wandb = {"enabled": True, "mode": "offline", "group": "paper-{arm}"}
    override = write_yaml(tmp_path / "wandb.yaml", {"logging": {"wandb": wandb}})
    on = snakemake("-n", "-p", "--directory", tmp_path / "on", "--configfile", TINY, override)
    text = output_of(on)
    assert on.returncode == 0, text[-3000:]
    assert job_counts(on)["track_evaluation"] == len(points)
    for arm, step in points:
        assert f"results/eval/{arm}/step{step}/tracked.json" in text
    assert "python -m brorl.evaluation track" in text and '"mode": "offline"' in text
    assert text.count('"group": "paper-{arm}"') == len(points)  # the template as configured, not filled in
    assert SECRET not in text  # the key never reaches a command line
