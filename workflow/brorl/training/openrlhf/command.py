"""The ONE place that turns the config into an OpenRLHF 0.11.2 `train_ppo_ray` command for one training segment.

Pure: no I/O. Flag names are 0.11.2's dotted ones (docs/design.md#openrlhf-is-pinned-to-0112); `parse.parse_argv` runs
the result
through OpenRLHF's own parser and assertions, and `validate` rejects configs that would fail them first.

Segments and OpenRLHF runs (docs/design.md#reference-resets). One OpenRLHF run keeps one `--ckpt.path`; each segment
job relaunches
it with `--ckpt.load_enable`, which restores weights, Adam, scheduler, global step and the data-loader position.
A reference reset (ProRLv2: new reference, optimizer kept) relaunches the same run with
`--actor.model_name_or_path` = the export of the step before the segment: OpenRLHF builds the reference (and vLLM,
and the tokenizer) from that folder, then loads the policy and optimizer state from the full-state checkpoint.
With `training.reference_reset.keep_optimizer: false` (ProRL v1) a reset starts a NEW run (fresh ckpt path: fresh
Adam) from that export; its global step restarts at 0 (`RunLayout.offset` maps it back to continued steps) and its
seed is shifted. The seed reaches DeepSpeed ranks and vLLM through --train.seed and the prompt loader's shuffle
through BRORL_TORCH_SEED (the job hook in workflow/scripts/openrlhf_site seeds torch in every process), so the
prompt order follows the config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..estimators import BY_NAME
from ..recipe import ArmPlan, RecipeError
from ..tracking import KEY_ENV, Tracking, run_name

MODULE = "openrlhf.cli.train_ppo_ray"
# One pass over the prompt file, which holds as many shuffled passes of the mix as the run needs (dataset.py):
# OpenRLHF trains the prompts left at the end of an episode as a partial step, so no episode may end inside the run.
# A segment is stopped by step count (brorl.training.openrlhf.run); the constant lr schedule ignores the horizon.
NUM_EPISODES = 1
# The CPU rehearsal (training.cluster.device = cpu) changes the command in exactly these flags; docs/rehearsal.md
# says for each what it replaces and why it leaves the rehearsed algorithm alone.
GPU_ONLY_FLAGS = ("--vllm.enable_sleep",)  # vLLM refuses sleep mode on CPU ("not supported on current platform")
CPU_DEVICE_FLAGS = (
    "--vllm.sync_backend",
    "gloo",  # weight sync over gloo (the device layer's group), never CUDA IPC or NCCL
    "--ds.attn_implementation",
    "sdpa",  # torch's attention kernel: flash-attention exists only for CUDA
    "--vllm.enforce_eager",  # no CUDA graphs on a CPU
)
# OpenRLHF switches W&B on when --logger.wandb.key is non-empty and calls wandb.login(key) only when wandb has no key
# of its own; wandb reads WANDB_API_KEY from the environment, which the launcher hands to every Ray process. So the
# flag carries this marker, never the key: no argv, log, manifest or W&B run config (OpenRLHF logs its args there)
# can hold it.
WANDB_KEY_MARKER = f"env:{KEY_ENV}"


@dataclass(frozen=True)
class ClusterPaths:
    """Where one arm's cluster training lives. out_dir = results/train/<arm> (the embedded engine's layout)."""

    start_model: Path  # the run's start model (the context-extended base checkpoint)
    train_data: Path  # the prepared train mix (jsonl of benchmark records)
    out_dir: Path
    reward_script: Path  # workflow/scripts/openrlhf_reward.py, passed to --reward.remote_url

    @property
    def run_dir(self) -> Path:
        return self.out_dir / "run"

    @property
    def exports_dir(self) -> Path:  # HF folder of each saved step: run/exports/step<k>/ (segments.py reads it)
        return self.run_dir / "exports"

    @property
    def openrlhf_dir(self) -> Path:
        return self.run_dir / "openrlhf"

    @property
    def dataset(self) -> Path:  # the prompt dataset in OpenRLHF's format (dataset.py)
        return self.openrlhf_dir / "prompts.jsonl"

    @property
    def tensorboard_dir(self) -> Path:
        return self.openrlhf_dir / "tensorboard"

    @property
    def logs_dir(self) -> Path:
        return self.openrlhf_dir / "logs"

    @property
    def reward_log_dir(self) -> Path:  # one jsonl per reward process: every generated sample's reward and score
        return self.openrlhf_dir / "rewards"

    @property
    def partition_log_dir(self) -> Path:  # one jsonl per trainer process: each micro-batch partition and its time
        return self.openrlhf_dir / "partition"

    @property
    def gpu_memory_log_dir(self) -> Path:  # one jsonl per training rank: its peak GPU memory per step
        return self.openrlhf_dir / "gpu_memory"

    @property
    def ipc_log_dir(self) -> Path:  # one jsonl per training rank: each weight sync run with legacy segments
        return self.openrlhf_dir / "ipc"

    @property
    def scheduler_log_dir(self) -> Path:  # one jsonl per vLLM engine: the scheduler limits it runs with
        return self.openrlhf_dir / "scheduler"

    @property
    def advantage_log_dir(self) -> Path:  # the trainer's jsonl: each step's RMS advantage (advantage_hook)
        return self.openrlhf_dir / "advantages"

    @property
    def refill_log_dir(self) -> Path:  # the trainer's jsonl: each step's dynamic-sampling waves (refill_hook)
        return self.openrlhf_dir / "refill"

    @property
    def step_log_dir(self) -> Path:  # the trainer's jsonl: each step's times and saves (stop_hook)
        return self.openrlhf_dir / "steps"

    @property
    def stop_request(self) -> Path:  # written by the runner to have the trainer save and stop (stop_watch)
        return self.openrlhf_dir / "stop_request.json"

    def ckpt_dir(self, run_index: int) -> Path:
        return self.openrlhf_dir / f"ckpt{run_index}"

    def export(self, step: int) -> Path:
        return self.exports_dir / f"step{step}"


@dataclass(frozen=True)
class RunLayout:
    """How continued steps of one segment map onto an OpenRLHF run."""

    run_index: int  # which OpenRLHF run (ckpt dir) the segment belongs to
    offset: int  # continued step = OpenRLHF global_step + offset
    reference_step: int | None  # continued step whose weights are the reference (None: the start model)
    save_steps: int  # --ckpt.save_steps (global steps): every step that must be saved is a multiple
    seed: int  # --train.seed


def run_layout(config: Mapping[str, Any], plan: ArmPlan, segment_index: int) -> RunLayout:
    """The OpenRLHF run, step offset, reference and save interval of segment `segment_index` of `plan`."""
    if not 0 <= segment_index < len(plan.segments):
        raise RecipeError(f"arm {plan.name!r} has segments 0..{len(plan.segments) - 1}, not {segment_index}")
    keep_optimizer = config["training"]["reference_reset"]["keep_optimizer"]
    segment = plan.segments[segment_index]
    resets = [s for s in plan.segments[: segment_index + 1] if s.reset_reference]
    fresh_runs = [s for s in resets if not keep_optimizer]  # segments that start a new OpenRLHF run
    run_start = fresh_runs[-1].first_step if fresh_runs else 1
    offset = run_start - 1
    # every step the segment must save (its saved steps and its last step, which the next segment resumes from)
    must_save = {s - offset for s in plan.saved_steps if s in segment.steps} | {segment.last_step - offset}
    must_save.add(config["training"]["cluster"]["resume_every"])  # and often enough to resume a killed job
    return RunLayout(
        run_index=len(fresh_runs),
        offset=offset,
        reference_step=resets[-1].first_step - 1 if resets else None,
        save_steps=math.gcd(*must_save),
        seed=plan.seed + len(fresh_runs),
    )


def _flag(name: str, *values: Any) -> list[str]:
    return [f"--{name}", *(_text(v) for v in values)]


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)  # full precision: 5.656854249492381e-06, not 5.66e-06
    return str(value)


def wandb_flags(tracking: Tracking, arm: str) -> list[str]:
    """OpenRLHF's --logger.wandb.* flags of config logging.wandb (none when it is off; run_name is always set, it
    also names the TensorBoard folder). The key stays in the environment (WANDB_KEY_MARKER)."""
    settings = tracking.wandb
    if not settings.enabled:
        return []
    return [
        *_flag("logger.wandb.key", WANDB_KEY_MARKER),
        *_flag("logger.wandb.project", settings.project),
        *(_flag("logger.wandb.org", settings.entity) if settings.entity else []),
        *_flag("logger.wandb.group", settings.group_of(arm)),
    ]


def openrlhf_flags(
    config: Mapping[str, Any], plan: ArmPlan, segment_index: int, paths: ClusterPaths, tracking: Tracking | None = None
) -> list[str]:
    """The flags of `python -m openrlhf.cli.train_ppo_ray` for segment `segment_index` of the arm `plan` (derived
    from `config` by recipe.arm_plan), without the program name. `tracking`: config `logging` (default: off)."""
    layout = run_layout(config, plan, segment_index)
    train, cluster, context = config["training"], config["training"]["cluster"], config["context"]
    reference = paths.start_model if layout.reference_step is None else paths.export(layout.reference_step)
    ckpt = paths.ckpt_dir(layout.run_index)
    flags = [
        # layout: 8 x 8 GPUs, actor + reference + vLLM colocated on every GPU (hybrid engine, sleep between phases)
        *_flag("actor.num_nodes", cluster["nodes"]),
        *_flag("actor.num_gpus_per_node", cluster["gpus_per_node"]),
        *_flag("ref.num_nodes", cluster["nodes"]),
        *_flag("ref.num_gpus_per_node", cluster["gpus_per_node"]),
        "--train.colocate_all",
        *(GPU_ONLY_FLAGS if cluster["device"] == "gpu" else ()),
        "--ds.enable_sleep",
        *_flag("vllm.num_engines", cluster["vllm_engines"]),
        *_flag("vllm.tensor_parallel_size", cluster["vllm_tensor_parallel_size"]),
        *_flag("vllm.gpu_memory_utilization", float(cluster["vllm_gpu_memory_utilization"])),
        *(["--vllm.enable_prefix_caching"] if cluster["prefix_caching"] else []),
        # models and data: the reference (and vLLM's start weights) = this folder; the policy comes from ckpt
        *_flag("actor.model_name_or_path", reference),
        *_flag("reward.remote_url", paths.reward_script),
        *_flag("data.prompt_dataset", paths.dataset),
        *_flag("data.input_key", "input"),
        *_flag("data.label_key", "label"),
        "--data.apply_chat_template",
        *_flag("data.max_len", context["prompt_max_len"] + context["train_max_len"]),
        *_flag("rollout.max_new_tokens", context["train_max_len"]),
        # the arm: N, prompts per step, samples per optimizer step (equal mini-batch count across arms), lr
        *_flag("rollout.n_samples_per_prompt", plan.n),
        *_flag("rollout.batch_size", plan.prompts_per_step),
        *_flag("train.batch_size", plan.mini_batch_samples),
        *_flag("train.max_epochs", train["ppo_epochs"]),
        *_flag("train.num_episodes", NUM_EPISODES),
        *_flag("train.seed", layout.seed),
        *_flag("rollout.temperature", float(train["rollout_temperature"])),
        *_flag("rollout.top_p", float(train["rollout_top_p"])),
        # algorithm
        *_flag("algo.advantage.estimator", BY_NAME[plan.advantage_estimator].openrlhf),
        *_flag("algo.advantage.gamma", 1.0),
        *([] if train["advantage_std_norm"] else ["--algo.advantage.no_std_norm"]),
        *_flag("actor.policy_loss_type", train["algorithm"]),
        *_flag("actor.loss_agg_mode", train["loss_aggregation"]),
        *_flag("actor.eps_clip_low_high", float(train["clip_eps_low"]), float(train["clip_eps_high"])),
        *_flag("algo.kl.init_coef", float(train["kl"]["coef"])),
        *_flag("algo.kl.estimator", train["kl"]["estimator"]),
        *(["--algo.kl.use_loss"] if train["kl"]["use_loss"] else []),
        *_flag("actor.adam.lr", float(plan.lr)),
        *_flag("actor.adam.betas", *(float(b) for b in train["optimizer"]["betas"])),
        *_flag("actor.adam.eps", float(train["optimizer"]["eps"])),
        *_flag("actor.adam.weight_decay", float(train["optimizer"]["weight_decay"])),
        *_flag("actor.max_norm", float(train["grad_clip"])),
        *_flag("actor.lr_scheduler", "constant"),
        *_flag("actor.lr_warmup_ratio", 0.0),
        *_flag("ds.zero_stage", cluster["zero_stage"]),
        *_flag("ds.param_dtype", train["precision"]),
        *(["--actor.gradient_checkpointing_enable"] if cluster["gradient_checkpointing"] else []),
        *(_flag("actor.entropy_coef", 0.0) if cluster["log_entropy"] else []),  # 0: logged, not in the loss
        # checkpoints: full state every save_steps (resume) + HF export of each; tensorboard per segment
        *_flag("ckpt.path", ckpt),
        *_flag("ckpt.output_dir", ckpt / "final"),
        *_flag("ckpt.save_steps", layout.save_steps),
        "--ckpt.save_hf",
        "--ckpt.load_enable",
        *_flag("ckpt.max_num", cluster["keep_checkpoints"]),
        *_flag("ckpt.best_metric_key", "none"),
        *_flag("logger.tensorboard_dir", paths.tensorboard_dir),
        *_flag("logger.wandb.run_name", run_name(plan.name, segment_index)),  # also the TensorBoard subfolder
        *wandb_flags(tracking or Tracking(), plan.name),
        *_flag("logger.logging_steps", 1),
    ]
    if train["dynamic_sampling"]["enabled"]:
        low, high = train["dynamic_sampling"]["score_range"]
        flags += ["--algo.dynamic_filtering_enable", *_flag("algo.dynamic_filtering_range", float(low), float(high))]
    tis = train["truncated_importance_sampling"]
    if tis["enabled"]:  # TIS (Yao et al.) = token level, clip the ratio to [0, C]
        flags += [
            *_flag("algo.advantage.is_correction_level", "token"),
            *_flag("algo.advantage.is_correction_mode", "clip"),
            *_flag("algo.advantage.is_correction_threshold", float(tis["threshold"])),
        ]
    if cluster["dynamic_batch"]:  # token-packed micro-batches; the optimizer-step grouping is unchanged
        flags += [
            "--train.dynamic_batch_enable",
            "--ds.packing_samples",
            *_flag("train.max_tokens_per_gpu", cluster["max_tokens_per_gpu"]),
            *_flag("rollout.max_tokens_per_gpu", cluster["max_tokens_per_gpu"]),
        ]
    else:
        flags += [
            *_flag("train.micro_batch_size", cluster["train_micro_batch_size"]),
            *_flag("rollout.micro_batch_size", cluster["rollout_micro_batch_size"]),
        ]
    if cluster["device"] == "cpu":
        flags += CPU_DEVICE_FLAGS
    return flags


def build_command(
    config: Mapping[str, Any],
    plan: ArmPlan,
    segment_index: int,
    paths: ClusterPaths,
    python: str = "python",
    tracking: Tracking | None = None,
) -> list[str]:
    """The full argv: `python -m openrlhf.cli.train_ppo_ray <flags>` for segment `segment_index` of `plan`."""
    return [python, "-m", MODULE, *openrlhf_flags(config, plan, segment_index, paths, tracking)]


def flag_value(flags: list[str], name: str) -> str | list[str] | None:
    """Value(s) following `--name` in flags; "" for a switch; None when absent (for logs and tests)."""
    key = f"--{name}"
    if key not in flags:
        return None
    i = flags.index(key) + 1
    values = []
    while i < len(flags) and not flags[i].startswith("--"):
        values.append(flags[i])
        i += 1
    return values[0] if len(values) == 1 else (values or "")
