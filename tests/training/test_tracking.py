"""Experiment tracking (config `logging`, brorl.training.tracking): the W&B key comes from WANDB_API_KEY only and its
absence stops an online run before any training (job and workflow; the workflow hands config `logging` to the
jobs in BRORL_TRACKING); a segment's logger writes offline W&B runs and
TensorBoard files with the metrics.jsonl names and steps; the cluster engine's launch environment, and OpenRLHF's own
W&B logger run with our flags, never see the key in an argv or a file."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from brorl.config import load_yaml_config, validate_config
from brorl.training.metrics import FIELDS
from brorl.training.tracking import (
    KEY_ENV,
    TRACKING_ENV,
    SegmentLogger,
    Tracking,
    TrackingError,
    WandbSettings,
    check_key,
    numeric_fields,
)
from helpers import CONFIG, ENV, ROOT, TINY, output_of, snakemake, wandb_runs

SECRET = "0123456789abcdef0123456789abcdef01234567"  # the shape of a W&B key; must never reach a file or an argv
ONLINE = {"wandb": {"enabled": True, "mode": "online"}}


def _record(step: int, **values) -> dict:
    record = dict.fromkeys(FIELDS)  # every schema key, null where not measured
    record.update(step=step, segment=0, wall_s=1.5 * step, step_s=1.5, prompts=2, samples=16, lr=1e-6, kl=None)
    record.update(values)
    return record


def _files_holding(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


# ------------------------------------------------------------------------------------------------- the key
def test_online_tracking_without_the_key_is_refused_naming_the_variable():
    with pytest.raises(TrackingError, match=KEY_ENV):
        check_key(WandbSettings(enabled=True, mode="online"), {})
    check_key(WandbSettings(enabled=True, mode="online"), {KEY_ENV: SECRET})
    check_key(WandbSettings(enabled=True, mode="offline"), {})  # offline and disabled need no key
    check_key(WandbSettings(enabled=True, mode="disabled"), {})
    check_key(WandbSettings(enabled=False, mode="online"), {})


def test_tracking_settings_come_from_the_validated_config():
    config = validate_config({"logging": {"wandb": {"enabled": True, "group": "paper-{arm}", "entity": "lab"}}})
    tracking = Tracking.from_config(config["logging"])
    assert tracking.wandb == WandbSettings(True, "brorl", "lab", "paper-{arm}", "online")
    assert tracking.wandb.group_of("brorl_n512") == "paper-brorl_n512" and not tracking.tensorboard
    assert Tracking.from_json(json.dumps(config["logging"])) == tracking
    assert Tracking.from_json(None) == Tracking() and not Tracking().wandb.enabled


def _recipe() -> dict:
    config = load_yaml_config(CONFIG, TINY)
    arm = next(a for a in config["arms"] if a["enabled"])
    recipe = {k: config[k] for k in ("training", "context")}
    recipe.update(arms=[{k: v for k, v in arm.items() if k not in ("label", "description", "enabled")}])
    recipe["train_data"] = {"name": "mix"}
    return recipe


def test_a_segment_job_refuses_online_tracking_without_the_key_before_anything_else(tmp_path):
    recipe = _recipe()
    out = tmp_path / "out"

    def segment(*extra: str, **env_extra: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "brorl.training", "segment", "--config", json.dumps(recipe)]
        argv += ["--arm", recipe["arms"][0]["name"], "--segment", "0", "--engine", "embedded"]
        argv += ["--start-model", str(tmp_path / "no-model"), "--train-data", str(tmp_path / "no-mix.jsonl")]
        argv += ["--out-dir", str(out), "--manifest", str(out / "segment0.json"), *extra]
        env = {**{k: v for k, v in ENV.items() if k not in (KEY_ENV, TRACKING_ENV)}, **env_extra}
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)

    refused = segment("--tracking", json.dumps(ONLINE))
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert f"no {KEY_ENV}" in refused.stderr and "logging.wandb.mode: offline" in refused.stderr
    assert not out.exists()  # nothing was started
    from_workflow = segment(**{TRACKING_ENV: json.dumps(ONLINE)})  # how train_ppo's jobs get config `logging`
    assert from_workflow.returncode == 2 and f"no {KEY_ENV}" in from_workflow.stderr and not out.exists()
    # without tracking the same job gets further: to the missing start model
    other = segment()
    assert other.returncode != 0 and KEY_ENV not in other.stderr


@pytest.mark.workflow
def test_the_workflow_stops_before_any_job_without_the_key(tmp_path, monkeypatch):
    override = tmp_path / "wandb.yaml"
    override.write_text(yaml.safe_dump({"logging": {"wandb": {"enabled": True, "group": "paper-{arm}"}}}))
    target = f"results/train/{_recipe()['arms'][0]['name']}/segment0.json"
    args = [
        target,
        "-n",
        "-p",
        "--directory",
        tmp_path,
        "--snakefile",
        ROOT / "Snakefile",
        "--configfile",
        TINY,
        override,
    ]
    monkeypatch.delenv(KEY_ENV, raising=False)
    refused = snakemake(*args)
    assert refused.returncode != 0 and f"no {KEY_ENV}" in output_of(refused)
    monkeypatch.setenv(KEY_ENV, SECRET)
    planned = snakemake(*args)
    assert planned.returncode == 0, output_of(planned)[-3000:]
    assert "rule train_ppo" in output_of(planned) and SECRET not in output_of(planned)


# ------------------------------------------------------------------------------------------- the segment logger
def test_numeric_fields_are_the_measured_numbers_by_their_metrics_names():
    record = _record(3, reward_mean=0.25, entropy=math.nan, overhead_s=None)
    values = numeric_fields(record)
    assert "step" not in values and "kl" not in values and "entropy" not in values and "overhead_s" not in values
    assert values["reward_mean"] == 0.25 and values["segment"] == 0 and values["samples"] == 16
    assert set(values) <= set(FIELDS)


def test_segment_logger_writes_an_offline_wandb_run_and_tensorboard_files(tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    monkeypatch.delenv("WANDB_DIR", raising=False)  # default: the run folder
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = tmp_path / "run"
    tracking = Tracking(WandbSettings(enabled=True, mode="offline", group="paper-{arm}", project="p"), True)
    records = [_record(4, reward_mean=0.5), _record(5, reward_mean=0.75, kl=0.01)]
    with SegmentLogger(tracking, "prorl_n16", 1, run_dir, recipe={"training": {"lr0": 2e-6}}) as logger:
        for record in records:
            logger.log(record)

    (run,) = wandb_runs(run_dir / "wandb")
    assert run["run"]["display_name"] == "prorl_n16-segment1" and run["run"]["run_group"] == "paper-prorl_n16"
    assert run["run"]["project"] == "p" and run["exit_code"] == 0
    assert run["run"]["config"]["update"]["training"] == {"lr0": 2e-6}
    assert [step for step, _ in run["history"]] == [4, 5]
    for (_, logged), record in zip(run["history"], records):
        assert logged == pytest.approx(numeric_fields(record))

    scalars: dict[int, dict[str, float]] = {}
    (events,) = (run_dir / "tensorboard" / "prorl_n16-segment1").glob("events.out.tfevents.*")
    for event in EventFileLoader(str(events)).Load():
        for value in event.summary.value:
            number = value.simple_value if value.WhichOneof("value") == "simple_value" else value.tensor.float_val[0]
            scalars.setdefault(event.step, {})[value.tag] = number
    assert sorted(scalars) == [4, 5]
    for record in records:
        assert scalars[record["step"]] == pytest.approx(numeric_fields(record), rel=1e-6)
    assert not _files_holding(tmp_path, SECRET)


def test_a_segment_that_fails_leaves_a_failed_run_and_tracking_off_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-dir"))  # W&B's own variable wins over the run folder
    monkeypatch.setenv("WANDB_SILENT", "true")
    tracking = Tracking(WandbSettings(enabled=True, mode="offline"))
    with pytest.raises(RuntimeError, match="step 2 failed"):
        with SegmentLogger(tracking, "arm", 0, tmp_path / "run") as logger:
            logger.log(_record(1))
            raise RuntimeError("step 2 failed")
    (run,) = wandb_runs(tmp_path / "wandb-dir")
    assert run["exit_code"] == 1 and [s for s, _ in run["history"]] == [1]
    assert not (tmp_path / "run").exists()

    with SegmentLogger(Tracking(), "arm", 0, tmp_path / "off") as logger:
        logger.log(_record(1))
    assert not (tmp_path / "off").exists()


# -------------------------------------------------------------------------------------------------- the cluster
@pytest.fixture(scope="module")
def paper():
    config = yaml.safe_load(CONFIG.read_text())
    validate_config(config)
    return config


def _cluster_paths(tmp_path: Path):
    from brorl.training.openrlhf.command import ClusterPaths

    return ClusterPaths(tmp_path / "start", tmp_path / "mix.jsonl", tmp_path / "train" / "arm", tmp_path / "r.py")


def test_launch_environment_carries_the_wandb_mode_and_folder_and_the_key_only_from_the_job(tmp_path, paper):
    from brorl.training.openrlhf.command import run_layout
    from brorl.training.openrlhf.launch import launch_env
    from brorl.training.recipe import arm_plan

    layout, paths = run_layout(paper, arm_plan(paper, "prorl_n16"), 0), _cluster_paths(tmp_path)
    tracking = Tracking(WandbSettings(enabled=True, mode="offline"))
    env = launch_env(paper, layout, paths, {KEY_ENV: SECRET}, tracking=tracking, special_tokens=["<eos>"])
    assert env["WANDB_MODE"] == "offline" and env["WANDB_DIR"] == str(paths.openrlhf_dir) and env[KEY_ENV] == SECRET
    assert (
        launch_env(paper, layout, paths, {"WANDB_DIR": "/mine"}, tracking=tracking, special_tokens=["<eos>"])[
            "WANDB_DIR"
        ]
        == "/mine"
    )
    off = launch_env(paper, layout, paths, {}, tracking=Tracking(), special_tokens=["<eos>"])
    assert "WANDB_MODE" not in off and "WANDB_DIR" not in off and KEY_ENV not in off


# OpenRLHF's logger in a fresh process, as in a Ray worker: wandb reads WANDB_MODE/WANDB_DIR once per process
OPENRLHF_LOGGER = """
import importlib.util, json, sys
from brorl.training.openrlhf.parse import _package_dir, parse_argv

# openrlhf/utils/logging_utils.py from its file: standard-library imports only (the package would import deepspeed)
spec = importlib.util.spec_from_file_location("logging_utils", _package_dir() / "utils" / "logging_utils.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
args, _ = parse_argv(json.loads(sys.argv[1]))
logger = module.WandbLogger(args)
logger.log_train(7, {"reward": 0.5, "kl": 0.01, "generated_samples": None})
logger.close()
"""


def test_openrlhfs_own_wandb_logger_runs_with_our_flags_and_never_sees_the_key(tmp_path, paper):
    """OpenRLHF 0.11.2's WandbLogger, given the parsed flags of a segment with W&B on and the launch environment:
    the run gets our project, group and name, logs OpenRLHF's train/ keys at its global step, and no file holds the
    key (OpenRLHF puts all its args into the run's config)."""
    from brorl.training.openrlhf.command import WANDB_KEY_MARKER, openrlhf_flags, run_layout
    from brorl.training.openrlhf.launch import launch_env
    from brorl.training.openrlhf.parse import parse_argv
    from brorl.training.recipe import arm_plan

    tracking = Tracking(WandbSettings(enabled=True, project="brorl-test", group="paper-{arm}", mode="offline"))
    plan, paths = arm_plan(paper, "brorl_n512"), _cluster_paths(tmp_path)
    flags = openrlhf_flags(paper, plan, 1, paths, tracking)
    assert SECRET not in " ".join(flags)
    assert parse_argv(flags)[0].logger.wandb.key == WANDB_KEY_MARKER
    env = launch_env(
        paper, run_layout(paper, plan, 1), paths, {**ENV, KEY_ENV: SECRET}, tracking=tracking, special_tokens=["<eos>"]
    )
    env.update(PYTHONPATH=ENV["PYTHONPATH"], WANDB_SILENT="true")
    proc = subprocess.run(
        [sys.executable, "-c", OPENRLHF_LOGGER, json.dumps(flags)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    (run,) = wandb_runs(paths.openrlhf_dir / "wandb")
    assert run["run"]["display_name"] == "brorl_n512-segment1" and run["run"]["run_group"] == "paper-brorl_n512"
    assert run["run"]["project"] == "brorl-test"
    ((_, logged),) = run["history"]
    assert logged == pytest.approx({"train/reward": 0.5, "train/kl": 0.01, "train/global_step": 7})
    assert WANDB_KEY_MARKER in json.dumps(run["run"]["config"])  # the flag OpenRLHF logged is the marker
    assert not _files_holding(tmp_path, SECRET)
