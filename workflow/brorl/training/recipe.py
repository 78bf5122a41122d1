"""Derived training values of one arm, computed from the config in ONE place (both engines and the plan use them).

Pure: no I/O, no heavy imports. The paper keeps the number of PPO mini-batches per RL step equal across arms and
scales the learning rate with the square root of the samples per step (lr_new = lr0 * sqrt(B_new / B0)).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class RecipeError(ValueError):
    """A config whose training recipe cannot be built (names the arm and key)."""


@dataclass(frozen=True)
class Segment:
    """Continued steps first..last (inclusive) run by one training job.

    reset_reference: the job starts with the reference policy set to the policy it resumes from (a ProRLv2
    reference reset at this segment boundary); False for the first segment and for walltime-only splits.
    """

    index: int
    first_step: int
    last_step: int
    reset_reference: bool

    @property
    def steps(self) -> range:
        return range(self.first_step, self.last_step + 1)


@dataclass(frozen=True)
class ArmPlan:
    """Everything an engine needs about one arm's run, derived from config."""

    name: str
    n: int
    prompts_per_step: int
    samples_per_step: int
    mini_batches_per_step: int
    mini_batch_samples: int  # samples per optimizer update (OpenRLHF --train.batch_size)
    lr: float
    continued_steps: int
    seed: int
    saved_steps: tuple[int, ...]
    segments: tuple[Segment, ...] = field(repr=False)
    advantage_estimator: str = "reinforce_baseline"  # the arm's own, else training.advantage_estimator
    in_batch_saves: tuple[int, ...] = ()  # saved for the in-batch probe only (in saved_steps too)

    @property
    def regular_saves(self) -> tuple[int, ...]:
        """The saved steps but those saved for the in-batch probe alone: what evaluation and the probe follow."""
        return tuple(s for s in self.saved_steps if s not in self.in_batch_saves)

    def segment_of(self, step: int) -> Segment:
        """The segment that runs continued step `step`."""
        for segment in self.segments:
            if segment.first_step <= step <= segment.last_step:
                return segment
        raise RecipeError(f"arm {self.name!r} has no step {step} (it runs steps 1..{self.continued_steps})")


def scaled_lr(lr0: float, samples: int, base_samples: int, rule: str) -> float:
    """lr for `samples` per step: sqrt -> lr0*sqrt(B/B0), linear -> lr0*B/B0, none -> lr0."""
    if rule == "sqrt":
        return lr0 * math.sqrt(samples / base_samples)
    if rule == "linear":
        return lr0 * samples / base_samples
    if rule == "none":
        return lr0
    raise RecipeError(f"unknown learning-rate rule {rule!r} (expected sqrt, linear or none)")


def saved_steps(continued_steps: int, every: int, report_steps: list[int]) -> tuple[int, ...]:
    """Continued steps whose weights are exported: every `every`, the report steps and the last step."""
    steps = set(range(every, continued_steps + 1, every)) | set(report_steps) | {continued_steps}
    return tuple(sorted(s for s in steps if 1 <= s <= continued_steps))


def reset_steps(continued_steps: int, resets: int | None, period: int | None, round_to: int = 1) -> tuple[int, ...]:
    """Continued steps after which the reference is reset (its new weights = that step's policy).

    `resets` k: k resets at the same fractions of every arm's training, i/(k+1) of continued_steps for i = 1..k,
    each rounded to a multiple of `round_to` (so a segment ends on a full-state save); `period`: after every
    `period` steps (the same step numbers in every arm, so a short arm may get none). One of the two, or neither.
    """
    if resets:
        points = {round_to * round(i * continued_steps / (resets + 1) / round_to) for i in range(1, resets + 1)}
    elif period:
        points = set(range(period, continued_steps, period))
    else:
        points = set()
    return tuple(sorted(p for p in points if 1 <= p < continued_steps))


def plan_segments(continued_steps: int, reset_after: tuple[int, ...], max_steps: int | None) -> tuple[Segment, ...]:
    """Split steps 1..continued_steps at reference resets (after each step of `reset_after`) and walltime limits.

    A reset boundary starts a segment with reset_reference=True; a walltime split (max_steps per job) keeps the
    reference. max_steps may be None (splits at resets only).
    """
    boundaries: dict[int, bool] = {step + 1: True for step in reset_after}  # first step of a segment -> reset
    if max_steps:
        # walltime splits are counted within each reset period, so that a reset never falls inside a job
        starts = sorted({1, *boundaries})
        ends = [*(s - 1 for s in starts[1:]), continued_steps]
        for start, end in zip(starts, ends):
            for split in range(start + max_steps, end + 1, max_steps):
                boundaries.setdefault(split, False)
    starts = sorted({1, *boundaries})
    ends = [*(s - 1 for s in starts[1:]), continued_steps]
    return tuple(
        Segment(index=i, first_step=s, last_step=e, reset_reference=boundaries.get(s, False))
        for i, (s, e) in enumerate(zip(starts, ends))
    )


def find_arm(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The arm called `name` in config['arms']."""
    for arm in config["arms"]:
        if arm["name"] == name:
            return arm
    raise RecipeError(f"no arm named {name!r} in config 'arms' (have: {[a['name'] for a in config['arms']]})")


def arm_plan(config: Mapping[str, Any], name: str) -> ArmPlan:
    """The derived recipe of arm `name`; raises RecipeError naming the key when it cannot be built."""
    arm = find_arm(config, name)
    train = config["training"]
    samples = arm["n"] * arm["prompts_per_step"]
    mini_batches = train["mini_batches_per_step"]
    if samples % mini_batches:
        raise RecipeError(
            f"arm {name!r}: training.mini_batches_per_step = {mini_batches} does not divide its "
            f"{samples} samples per step (n {arm['n']} x prompts_per_step {arm['prompts_per_step']})"
        )
    rule = arm.get("lr_rule") or train["lr_scaling"]["rule"]
    lr = scaled_lr(train["lr0"], samples, train["lr_scaling"]["base_samples_per_step"], rule)
    reset = train["reference_reset"]
    regular = saved_steps(arm["continued_steps"], train["checkpoint_every"], arm["report_steps"])
    probe_only = tuple(s for s in in_batch_saves(config, arm["continued_steps"]) if s not in regular)
    return ArmPlan(
        name=name,
        n=arm["n"],
        prompts_per_step=arm["prompts_per_step"],
        samples_per_step=samples,
        mini_batches_per_step=mini_batches,
        mini_batch_samples=samples // mini_batches,
        lr=lr,
        continued_steps=arm["continued_steps"],
        seed=arm["seed"],
        saved_steps=tuple(sorted(regular + probe_only)),
        segments=plan_segments(
            arm["continued_steps"],
            reset_steps(arm["continued_steps"], reset["resets"], reset["period_steps"], reset["round_to"])
            if reset["enabled"]
            else (),
            segment_max_steps(config, name),
        ),
        advantage_estimator=arm.get("advantage_estimator") or train["advantage_estimator"],
        in_batch_saves=probe_only,
    )


def in_batch_steps(config: Mapping[str, Any]) -> tuple[int, ...]:
    """The continued steps whose own prompts the in-batch probe samples (probe.in_batch.steps; none when the probe
    is off)."""
    probe = config.get("probe") or {}
    if not probe.get("enabled"):
        return ()
    return tuple(sorted(set((probe.get("in_batch") or {}).get("steps") or ())))


def in_batch_saves(config: Mapping[str, Any], continued_steps: int) -> tuple[int, ...]:
    """Steps the in-batch probe needs saved: each probed step k and the one before it, k - 1 (the policy before k's
    update; step 0 is the start checkpoint, which is not a save)."""
    steps = {s for k in in_batch_steps(config) for s in (k - 1, k)}
    return tuple(sorted(s for s in steps if 1 <= s <= continued_steps))


def segment_max_steps(config: Mapping[str, Any], name: str) -> int | None:
    """Most continued steps per job of arm `name`: its own `segment_max_steps`, else training.segment_max_steps."""
    own = find_arm(config, name).get("segment_max_steps")
    return own if own is not None else config["training"].get("segment_max_steps")


# Settings that change how a job runs, never the weights it writes (docs/cluster.md#rerun-policy): they reach the
# job in OPERATIONS_ENV, not in params.recipe, so editing them mid-run reruns nothing. The run folder's recipe
# fingerprint leaves them out too. (Layout keys such as nodes or zero_stage stay in the recipe: a checkpoint cannot
# be resumed on another layout.)
OPERATIONAL_KEYS = {
    "cluster": (
        "poll_seconds",
        "watchdog_minutes",
        "pass_rate_floor",
        "keep_checkpoints",
        "resume_every",
        "partition",
        "allow_unsandboxed_code",
        "network_interface",
        "drills",
        "require_smoke",
    ),
    "embedded": ("threads", "micro_batch_size"),
}
OPERATIONS_ENV = "BRORL_TRAIN_OPERATIONS"


def split_operations(training: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the training section without its operational keys, those keys by engine section)."""
    recipe = dict(training)
    operations: dict[str, Any] = {}
    for section, keys in OPERATIONAL_KEYS.items():
        if section in recipe:
            recipe[section] = {k: v for k, v in recipe[section].items() if k not in keys}
            operations[section] = {k: v for k, v in training[section].items() if k in keys}
    return recipe, operations


def merge_operations(config: dict[str, Any], operations: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with the operational keys of `operations` put back into its training sections (in place)."""
    for section, values in operations.items():
        if section in config["training"]:
            config["training"][section] = {**config["training"][section], **values}
    return config


def load_job_config(text: str) -> dict[str, Any]:
    """The recipe config a training command gets (`--config`: the rule's params.recipe as JSON text): sections arms
    (the arm), training, context and train_data of a config the Snakefile has already validated, defaults filled."""
    config = json.loads(text)
    missing = [k for k in ("arms", "training", "context") if k not in config]
    if missing:
        raise RecipeError(f"--config lacks the section(s) {missing} (pass the rule's params.recipe)")
    operations = os.environ.get(OPERATIONS_ENV)
    if operations:  # the workflow hands the operational keys apart from the recipe (train.smk)
        merge_operations(config, json.loads(operations))
    for section, keys in OPERATIONAL_KEYS.items():
        absent = [k for k in keys if section in config["training"] and k not in config["training"][section]]
        if absent:
            raise RecipeError(
                f"training.{section} lacks {absent}: the workflow passes them in ${OPERATIONS_ENV} "
                "(run the job through Snakemake, or pass the whole training section)"
            )
    return config


def training_engine(cfg: Mapping[str, Any]) -> str:
    """The engine that trains the arms: training.engine, or the top-level engine when it is null."""
    return cfg["training"].get("engine") or cfg["engine"]


def enabled_arms(config: Mapping[str, Any]) -> list[str]:
    """Names of the arms that are trained and evaluated."""
    return [arm["name"] for arm in config["arms"] if arm.get("enabled", True)]


def lr_at(step: int, lr: float, continued_steps: int, scheduler: str, warmup_steps: int) -> float:
    """Learning rate of continued step `step` (1-based): linear warm-up, then constant or cosine decay to 0."""
    if warmup_steps and step <= warmup_steps:
        return lr * step / warmup_steps
    if scheduler == "constant":
        return lr
    if scheduler == "cosine":
        span = max(continued_steps - warmup_steps, 1)
        return lr * 0.5 * (1.0 + math.cos(math.pi * (step - warmup_steps) / span))
    raise RecipeError(f"unknown lr scheduler {scheduler!r} (expected constant or cosine)")


def recipe_fingerprint(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """What a run folder's weights depend on: the arm, the training section, the context budgets and the mix.
    A resumed run must match it exactly (a changed recipe must never continue an old run silently)."""
    return {
        # label/description/enabled/report_steps are presentation; continued_steps may grow (continue a run)
        "arm": {
            k: v
            for k, v in find_arm(config, name).items()
            if k not in ("label", "description", "enabled", "report_steps", "continued_steps", "segment_max_steps")
        },
        # advantage_batch_norm at its default (OpenRLHF's own) is left out: folders trained before the option keep
        # their fingerprint
        "training": {
            k: v
            for k, v in config["training"].items()
            if k not in ("embedded", "cluster", "segment_max_steps")
            and not (k == "advantage_batch_norm" and v == "native")
        },
        "context": dict(config["context"]),
        "train_data": config["train_data"]["name"],
    }


def evaluation_steps(config: Mapping[str, Any], name: str) -> tuple[int, ...]:
    """Continued steps of arm `name` that are evaluated (config evaluation.steps); each must be a saved step."""
    plan = arm_plan(config, name)
    rules = config["evaluation"]["steps"]
    arm = find_arm(config, name)
    steps: set[int] = set()
    if rules.get("every"):
        steps |= set(range(rules["every"], plan.continued_steps + 1, rules["every"]))
    if rules.get("include_report_steps", True):
        steps |= {s for s in arm["report_steps"] if s <= plan.continued_steps}
    if rules.get("include_final", True):
        steps.add(plan.continued_steps)
    unsaved = sorted(steps - set(plan.saved_steps))
    if unsaved:
        raise RecipeError(
            f"arm {name!r}: evaluation.steps asks for steps {unsaved} that are not saved; make "
            f"evaluation.steps.every a multiple of training.checkpoint_every"
        )
    return tuple(sorted(steps))
