"""Reject, before any job starts, every config that OpenRLHF 0.11.2 would refuse or hang on, naming the config key.

Each check cites where OpenRLHF fails (installed 0.11.2 source): post-parse assertions of cli/train_ppo_ray.py, the
colocation assertion in its train(), DeepSpeed's batch arithmetic (utils/deepspeed/deepspeed.py), the dynamic
batch setup (trainer/ppo_utils/replay_buffer.py), and settings the command builder cannot express faithfully.
Pure: no I/O; tests compare these messages with the real parser's verdict (parse.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..estimators import OPENRLHF_GROUP
from ..recipe import ArmPlan, RecipeError, arm_plan
from .drills import drill_problems


class ClusterConfigError(ValueError):
    """A config the cluster engine (OpenRLHF 0.11.2) cannot run; the message names every offending key."""


def _arm_key(config: Mapping[str, Any], name: str) -> str:
    index = [a["name"] for a in config["arms"]].index(name)
    return f"arms[{index}] ({name})"


def recipe_problems(config: Mapping[str, Any]) -> list[str]:
    """Recipe settings the OpenRLHF command cannot express."""
    train = config["training"]
    problems = []
    if train["precision"] not in ("bf16", "fp16"):
        problems.append(
            f"config key 'training.precision': {train['precision']!r} is not available in OpenRLHF "
            "(--ds.param_dtype takes bf16 or fp16)"
        )
    if train["lr_scheduler"] != "constant":
        problems.append(
            f"config key 'training.lr_scheduler': {train['lr_scheduler']!r} is not reproduced on the "
            "cluster: OpenRLHF stretches a schedule over its own horizon (prompts x episodes), not over "
            "the arm's steps; use constant"
        )
    if train["lr_warmup_steps"]:
        problems.append(
            "config key 'training.lr_warmup_steps': warm-up is not reproduced on the cluster (OpenRLHF "
            "sets it as a ratio of its own horizon and ignores it under the constant schedule); use 0"
        )
    if train["length_penalty"]:
        problems.append(
            "config key 'training.length_penalty': the cosine length penalty is not implemented in the "
            "OpenRLHF command; use false"
        )
    low, high = train["dynamic_sampling"]["score_range"]
    if train["dynamic_sampling"]["enabled"] and not low < high:
        # train_ppo_ray.py: assert dynamic_filtering_range[0] < dynamic_filtering_range[1]
        problems.append(f"config key 'training.dynamic_sampling.score_range': low {low} must be below high {high}")
    return problems


def layout_problems(config: Mapping[str, Any]) -> list[str]:
    """Cluster layout settings that OpenRLHF asserts on, or that cannot fit the allocation."""
    cluster, context = config["training"]["cluster"], config["context"]
    gpus = cluster["nodes"] * cluster["gpus_per_node"]
    engines, tp = cluster["vllm_engines"], cluster["vllm_tensor_parallel_size"]
    problems = []
    if engines * tp != gpus:  # train_ppo_ray.train(): colocate_all asserts actor GPUs == engines x TP
        problems.append(
            f"config key 'training.cluster.vllm_engines': {engines} engines x tensor parallel {tp} = "
            f"{engines * tp} GPUs, but the colocated actor has nodes x gpus_per_node = {gpus}; OpenRLHF "
            "requires them equal"
        )
    if cluster["gpus_per_node"] % tp:
        problems.append(
            f"config key 'training.cluster.vllm_tensor_parallel_size': {tp} does not divide "
            f"gpus_per_node {cluster['gpus_per_node']} (an engine would span nodes)"
        )
    if cluster["device"] == "cpu" and cluster["dynamic_batch"]:
        # --ds.packing_samples (which dynamic batching needs) calls flash-attention's varlen kernels: CUDA only
        problems.append(
            "config key 'training.cluster.dynamic_batch': packed micro-batches need flash-attention's "
            "CUDA kernels, which the CPU rehearsal (training.cluster.device: cpu) cannot run; use false"
        )
    longest = context["prompt_max_len"] + context["train_max_len"]
    if cluster["dynamic_batch"] and cluster["max_tokens_per_gpu"] < longest:
        problems.append(
            f"config key 'training.cluster.max_tokens_per_gpu': {cluster['max_tokens_per_gpu']} tokens "
            f"cannot hold one sample of context.prompt_max_len + context.train_max_len = {longest}"
        )
    return problems


def arm_problems(config: Mapping[str, Any], name: str) -> list[str]:
    """Per-arm problems of arm `name`: its recipe (RecipeError) or else its plan's (plan_problems)."""
    try:
        plan = arm_plan(config, name)
    except RecipeError as error:
        return [str(error)]
    return plan_problems(config, plan)


def plan_problems(config: Mapping[str, Any], plan: ArmPlan) -> list[str]:
    """Per-arm batch arithmetic that OpenRLHF or DeepSpeed asserts on (or would deadlock with)."""
    train, cluster = config["training"], config["training"]["cluster"]
    name = plan.name
    key = _arm_key(config, name)
    gpus = cluster["nodes"] * cluster["gpus_per_node"]  # data-parallel actor ranks (no ring/DS tensor parallel)
    problems = []
    if plan.n < 2 and plan.advantage_estimator in OPENRLHF_GROUP:  # train_ppo_ray.py post-parse assertion
        problems.append(
            f"config key '{key}.n': {plan.advantage_estimator} needs N > 1 (a group baseline of one "
            "sample makes every advantage 0); OpenRLHF asserts n_samples_per_prompt > 1"
        )
    elif plan.n < 2 and train["dynamic_sampling"]["enabled"]:
        problems.append(f"config key '{key}.n': dynamic sampling needs N > 1 (OpenRLHF asserts it)")
    micro = 1 if cluster["dynamic_batch"] else cluster["rollout_micro_batch_size"]
    if plan.samples_per_step // micro < gpus:  # train_ppo_ray.py: samples // rollout micro batch >= actor ranks
        problems.append(
            f"config key '{key}.prompts_per_step': {plan.samples_per_step} samples per step in "
            f"micro-batches of {micro} give fewer batches than the {gpus} actor GPUs "
            "(training.cluster.nodes x gpus_per_node); OpenRLHF asserts at least one each"
        )
    micro = 1 if cluster["dynamic_batch"] else cluster["train_micro_batch_size"]
    if plan.mini_batch_samples % (micro * gpus):
        # DeepSpeed: train_batch_size == micro x accumulation x world; OpenRLHF computes the accumulation by floor
        # division, and with dynamic batching divides train.batch_size by the ranks (0 -> ZeroDivisionError)
        problems.append(
            f"config key 'training.mini_batches_per_step': {name}'s mini-batch of "
            f"{plan.mini_batch_samples} samples ({plan.samples_per_step} / {plan.mini_batches_per_step}) "
            f"is not a multiple of training.cluster micro-batch {micro} x {gpus} GPUs; DeepSpeed "
            "requires it (choose fewer mini-batches or GPUs)"
        )
    problems += [
        f"{key}: {p}"
        for p in drill_problems(
            cluster["drills"], plan.continued_steps, cluster["resume_every"], {s.last_step for s in plan.segments}
        )
    ]
    return problems


def validate_cluster_config(config: Mapping[str, Any], arms: Iterable[str | ArmPlan] | None = None) -> None:
    """Raise ClusterConfigError listing every problem for the given arms (default: the enabled ones): their names,
    or the plans a job has already derived."""
    arms = list(arms) if arms is not None else [a["name"] for a in config["arms"] if a.get("enabled", True)]
    problems = recipe_problems(config) + layout_problems(config)
    for arm in arms:
        problems += plan_problems(config, arm) if isinstance(arm, ArmPlan) else arm_problems(config, arm)
    if problems:
        raise ClusterConfigError(
            "the cluster engine (OpenRLHF 0.11.2) cannot run this config:\n  - " + "\n  - ".join(problems)
        )
