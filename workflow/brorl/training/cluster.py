"""Run one training segment of one arm with OpenRLHF 0.11.2 on the job's Ray cluster (paper scale).

  1. validate the config for OpenRLHF (openrlhf_validate) and run the command through OpenRLHF's real parser;
  2. write the prompt dataset (openrlhf_data) once per run folder;
  3. launch `ray_on_slurm.sh ... -- python -m openrlhf.cli.train_ppo_ray ...` and stop it once the segment's last
     step is fully saved (OpenRLHF has no max-steps flag: it would train until the prompts run out);
  4. link the HF export of every saved step (and the last step, which a reference reset starts from) into
     run/exports/step<k>/ (segments.py then verifies and publishes them);
  5. convert the logged steps into metrics.jsonl records (openrlhf_metrics).
A rerun of an interrupted segment relaunches with --ckpt.load_enable: OpenRLHF resumes from its latest full state.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Mapping

from .metrics import append_metrics, read_metrics, truncate_after
from .openrlhf_command import MODULE, ClusterPaths, openrlhf_flags, run_layout
from .openrlhf_validate import validate_cluster_config
from .recipe import arm_plan
from .segments import CheckpointError

WORKFLOW = Path(__file__).resolve().parents[2]  # the folder holding brorl/, scripts/
LAUNCHER = WORKFLOW / "scripts" / "ray_on_slurm.sh"
REWARD_SCRIPT = WORKFLOW / "scripts" / "openrlhf_reward.py"


class ClusterRunError(RuntimeError):
    """OpenRLHF ended without the segment's steps, or its state does not fit the segment."""


def latest_global_step(ckpt_dir: Path) -> int | None:
    """Global step of the newest full-state checkpoint (DeepSpeed's `latest` tag file), None when there is none."""
    tag_file = ckpt_dir / "_actor" / "latest"
    if not tag_file.is_file():
        return None
    tag = tag_file.read_text().strip()
    if not tag.startswith("global_step"):
        raise ClusterRunError(f"{tag_file}: unexpected tag {tag!r} (expected global_step<N>)")
    return int(tag[len("global_step"):])


def _reward_log_size(log_dir: Path) -> int:
    return sum(p.stat().st_size for p in log_dir.glob("*.jsonl")) if log_dir.is_dir() else 0


def _check_context(model_dir: Path, max_len: int) -> None:
    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise CheckpointError(f"{model_dir}: no config.json (not a Hugging Face model folder)")
    positions = json.loads(config_path.read_text()).get("max_position_embeddings")
    if positions is not None and positions < max_len:
        raise ClusterRunError(f"{model_dir} accepts {positions} positions but OpenRLHF's --data.max_len is {max_len} "
                              "(context.prompt_max_len + context.train_max_len): extend the context first")  # fmt: skip


def _link_tree(src: Path, dst: Path) -> None:
    """dst = a copy of folder src made of hard links (copies across file systems), replaced atomically."""
    import shutil

    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, copy_function=lambda s, d: _link_or_copy(Path(s), Path(d)))
    shutil.rmtree(dst, ignore_errors=True)
    tmp.replace(dst)


def _link_or_copy(src: Path, dst: Path) -> None:
    import shutil

    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _launch(command: list[str], env: dict[str, str], ckpt: Path, last_global: int, reward_dir: Path,
            poll_s: float) -> int:  # fmt: skip
    """Run the launcher until OpenRLHF has fully saved `last_global`, then stop it. Returns the exit status
    (0 when we stopped it ourselves). A save is complete once the next step's generation has begun, which the
    reward log shows: the HF export is written after DeepSpeed's `latest` tag and before the next rollout."""
    process = subprocess.Popen(command, env=env, start_new_session=True)
    seen_at = None  # reward-log size when `latest` first reached last_global
    try:
        while process.poll() is None:
            time.sleep(poll_s)
            latest = latest_global_step(ckpt)
            if latest is not None and latest >= last_global:
                size = _reward_log_size(reward_dir)
                if seen_at is None:
                    seen_at = size
                elif size > seen_at:  # the next step is generating: the save of last_global is complete
                    process.send_signal(signal.SIGTERM)  # the launcher's trap tears Ray down
                    process.wait(timeout=300)
                    return 0
        return process.returncode
    except BaseException:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=300)
        raise


def run_cluster_segment(config: Mapping[str, Any], arm: str, segment_index: int, start_model: Path,
                        train_data: Path, out_dir: Path, *, python: str = "python", launcher: Path = LAUNCHER,
                        reward_script: Path = REWARD_SCRIPT, poll_s: float = 10.0) -> tuple[list[dict], dict]:  # fmt: skip
    """Train segment `segment_index` of `arm` on the cluster; returns (its metrics records, manifest extras)."""
    from .openrlhf_data import chat_prompt_tokens, write_openrlhf_dataset
    from .openrlhf_metrics import read_reward_log, read_tensorboard, to_records
    from .openrlhf_parse import parse_argv

    validate_cluster_config(config, [arm])
    plan = arm_plan(config, arm)
    segment = plan.segments[segment_index]
    layout = run_layout(config, plan, segment_index)
    paths = ClusterPaths(Path(start_model), Path(train_data), Path(out_dir), Path(reward_script))
    context, cluster = config["context"], config["training"]["cluster"]
    first_global, last_global = segment.first_step - 1 - layout.offset, segment.last_step - layout.offset

    reference = paths.start_model if layout.reference_step is None else paths.export(layout.reference_step)
    _check_context(reference, context["prompt_max_len"] + context["train_max_len"])
    ckpt = paths.ckpt_dir(layout.run_index)
    latest = latest_global_step(ckpt)
    if first_global > 0 and (latest is None or latest < first_global):
        raise ClusterRunError(f"segment {segment_index} of {arm!r} resumes from step {segment.first_step - 1}, but "
                              f"{ckpt} holds {'no full state' if latest is None else f'global step {latest}'}; "
                              "run the previous segment first")  # fmt: skip

    summary_path = paths.openrlhf_dir / "dataset.json"
    if not paths.dataset.is_file() or not summary_path.is_file():
        summary = write_openrlhf_dataset(paths.train_data, paths.dataset, chat_prompt_tokens(paths.start_model),
                                         context["prompt_max_len"])  # fmt: skip
        summary_path.write_text(json.dumps(summary, indent=1))
    summary = json.loads(summary_path.read_text())

    flags = openrlhf_flags(config, arm, segment_index, paths)
    parse_argv(flags)  # OpenRLHF's own parser and assertions, here, before the allocation does anything
    argv = [python, "-m", MODULE, *flags]
    launches_path = paths.openrlhf_dir / "launches.json"
    launches = json.loads(launches_path.read_text()) if launches_path.is_file() else []
    if latest is None or latest < last_global:
        for folder in (paths.logs_dir, paths.reward_log_dir, paths.tensorboard_dir):
            folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(WORKFLOW), *filter(None, [env.get("PYTHONPATH")])])
        env["BRORL_REWARD_LOG_DIR"] = str(paths.reward_log_dir)
        env["BRORL_CODE_REWARD"] = config["training"]["reward"]["code"]
        env["BRORL_CODE_TIMEOUT_S"] = str(config["training"]["reward"]["code_timeout_s"])
        launches.append(time.time())
        launches_path.write_text(json.dumps(launches))
        command = [str(launcher), "--logs", str(paths.logs_dir / f"segment{segment_index:03d}-{len(launches)}"),
                   "--nodes", str(cluster["nodes"]), "--", *argv]  # fmt: skip
        print("launching:", " ".join(command), flush=True)
        status = _launch(command, env, ckpt, last_global, paths.reward_log_dir, poll_s)
        latest = latest_global_step(ckpt)
        if latest is None or latest < last_global:
            raise ClusterRunError(f"OpenRLHF stopped (status {status}) at global step {latest}, before the segment's "
                                  f"last step {last_global}; logs: {paths.logs_dir}; rerun to resume")  # fmt: skip

    for step in sorted({s for s in plan.saved_steps if s in segment.steps} | {segment.last_step}):
        source = ckpt / f"global_step{step - layout.offset}_hf"
        if not (source / "config.json").is_file():
            raise CheckpointError(f"{source}: OpenRLHF's HF export of step {step} is missing or incomplete")
        _link_tree(source, paths.export(step))

    logs = read_tensorboard(paths.tensorboard_dir)
    wanted = list(range(first_global + 1, last_global + 1))
    missing = [g for g in wanted if g not in logs]
    if missing:
        raise ClusterRunError(f"{paths.tensorboard_dir}: no logged metrics for global steps {missing}")
    metrics_path = paths.out_dir / "run" / "metrics.jsonl"  # live; finish_training publishes the complete file
    before = truncate_after(metrics_path, segment.first_step - 1) if metrics_path.exists() else []
    if [r["step"] for r in before] != list(range(1, segment.first_step)):
        raise ClusterRunError(f"{metrics_path}: steps 1..{segment.first_step - 1} must precede segment {segment_index}")
    records = to_records([logs[g] for g in wanted], offset=layout.offset, segment=segment_index, n=plan.n,
                         dynamic_sampling=config["training"]["dynamic_sampling"]["enabled"],
                         wall_s_before=before[-1]["wall_s"] if before else 0.0, launches=launches,
                         reward_calls=read_reward_log(paths.reward_log_dir))  # fmt: skip
    for record in records:
        append_metrics(metrics_path, record)
    read_metrics(metrics_path)  # each step exactly once
    extra = {"engine": "cluster", "openrlhf_command": argv, "layout": dataclasses.asdict(layout),
             "dataset": {k: v for k, v in summary.items() if k != "too_long_ids"}, "launches": launches}  # fmt: skip
    return records, extra
