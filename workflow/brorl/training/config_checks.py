"""The training section's checks across keys (arms, training, logging), which brorl.config composes: each returns one
plain-words line per offending key and imports nothing from brorl.config."""

from __future__ import annotations

import re
import string

from .estimators import engine_problem
from .recipe import training_engine


def check_arms(cfg: dict) -> list[str]:
    """Each arm's counts against the training section (unique names are the config module's check)."""
    arms, train, problems = cfg["arms"], cfg["training"], []
    for i, arm in enumerate(arms):
        try:
            problems += _check_arm(i, arm, train)
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # a malformed arm is reported by the schema
    return problems


def _check_arm(i: int, arm: dict, train: dict) -> list[str]:
    counts = (arm["n"], arm["prompts_per_step"], arm["continued_steps"], train["mini_batches_per_step"])
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in counts):
        return []  # the schema already reports bad counts; arithmetic on them would repeat it
    problems = []
    late = [s for s in arm["report_steps"] if s > arm["continued_steps"]]
    if late:
        problems.append(
            f"config key 'arms[{i}].report_steps': {late} exceed(s) continued_steps ({arm['continued_steps']})"
        )
    # equal PPO mini-batches per step (paper) needs a whole number of samples per mini-batch
    samples, mb = arm["n"] * arm["prompts_per_step"], train["mini_batches_per_step"]
    if samples % mb:
        problems.append(
            f"config key 'arms[{i}]': n x prompts_per_step = {samples} samples is not divisible by "
            f"training.mini_batches_per_step = {mb}"
        )
    named = re.search(r"_n(\d+)(?=_|$)", str(arm.get("name", "")))
    if named and int(named[1]) != arm["n"]:
        problems.append(
            f"config key 'arms[{i}].n': {arm['n']}, but the arm's name {arm['name']!r} says N = {named[1]}: rename "
            "the arm with its N (its run folder results/train/<name> is named after it, so a renamed arm is a new run)"
        )
    if train["dynamic_sampling"]["enabled"] and arm["n"] < 2:
        problems.append(
            f"config key 'arms[{i}].n': dynamic sampling needs at least 2 rollouts per prompt, got {arm['n']}"
        )
    return problems


def check_training(cfg: dict) -> list[str]:
    """Clip-Higher's order, dynamic sampling's score range and the reference reset's schedule."""
    train, problems = cfg["training"], []
    if train["clip_eps_high"] < train["clip_eps_low"]:
        problems.append(
            f"config key 'training.clip_eps_high': {train['clip_eps_high']} is below "
            f"training.clip_eps_low = {train['clip_eps_low']} (Clip-Higher needs high >= low)"
        )
    low, high = train["dynamic_sampling"]["score_range"]
    if not low < high:
        problems.append(f"config key 'training.dynamic_sampling.score_range': low {low} must be below high {high}")
    reset = train["reference_reset"]
    if reset["enabled"] and (reset["resets"] is None) == (reset["period_steps"] is None):
        problems.append(
            "config key 'training.reference_reset.resets': give exactly one of resets (resets per arm, at the same "
            "fractions of training) and period_steps (every so many steps), and null for the other"
        )
    # a reset restarts from an exported checkpoint, so one must exist at every reset step
    elif reset["enabled"] and reset["period_steps"] and reset["period_steps"] % train["checkpoint_every"]:
        problems.append(
            f"config key 'training.reference_reset.period_steps': {reset['period_steps']} is not a "
            f"multiple of training.checkpoint_every = {train['checkpoint_every']}"
        )
    return problems


def check_embedded_engine(cfg: dict) -> list[str]:
    """Training keys the embedded engine cannot honour: refused by name, never silently trained another way (the
    cluster engine, OpenRLHF, takes them all)."""
    train = cfg["training"]
    if training_engine(cfg) != "embedded" or not any(a.get("enabled", True) for a in cfg["arms"]):
        return []
    unsupported = {
        "loss_aggregation": (train["loss_aggregation"], "token-mean"),
        "length_penalty": (train["length_penalty"], False),
    }
    problems = [
        f"config key 'training.{key}': {value!r} is not implemented by the embedded engine (it trains {only!r} "
        "only); use training.engine: cluster (OpenRLHF) for it"
        for key, (value, only) in unsupported.items()
        if value != only
    ]
    problems += estimator_problems(cfg, "embedded")
    if not train["kl"]["use_loss"] and train["kl"]["coef"]:
        problems.append(
            "config key 'training.kl.use_loss': false (KL folded into the reward, OpenRLHF's default) is not "
            "implemented by the embedded engine, which adds the KL to the loss only; use true or training.engine: "
            "cluster"
        )
    return problems


def estimator_problems(cfg: dict, engine: str) -> list[str]:
    """The advantage estimators `engine` cannot train (brorl.training.estimators): training.advantage_estimator, and
    each enabled arm's own, named with the arm."""
    train = cfg["training"]
    found = [engine_problem(train["advantage_estimator"], engine, "training.advantage_estimator")]
    found += [
        engine_problem(a["advantage_estimator"], engine, f"arms[{i}].advantage_estimator", a.get("name"))
        for i, a in enumerate(cfg["arms"])
        if a.get("enabled", True) and a.get("advantage_estimator")
    ]
    return [p for p in found if p]


def check_cluster_estimators(cfg: dict) -> list[str]:
    """Under the cluster engine, an estimator without an OpenRLHF name is refused, naming the arm and the engine."""
    if training_engine(cfg) != "cluster" or not any(a.get("enabled", True) for a in cfg["arms"]):
        return []
    return estimator_problems(cfg, "cluster")


def check_logging(cfg: dict) -> list[str]:
    """logging.wandb.group is a template with exactly the field {arm} (one group per arm)."""
    group, where = cfg["logging"]["wandb"]["group"], "config key 'logging.wandb.group'"
    try:
        fields = sorted({name for _, name, _, _ in string.Formatter().parse(group) if name is not None})
    except ValueError as error:
        return [f"{where}: {group!r} is not a template ({error}); write e.g. 'paper-{{arm}}'"]
    if fields != ["arm"]:
        return [
            f"{where}: {group!r} must contain {{arm}} and no other field (found {fields or 'none'}): "
            "each arm needs its own group"
        ]
    return []


def cluster_problems(config: dict) -> list[str]:
    """What OpenRLHF 0.11.2 would refuse for the enabled arms (batch arithmetic, layout, recipe), checked here so
    that a dry run or a submission refuses in milliseconds what a 64-GPU job would refuse after its queue wait."""
    from .openrlhf.validate import ClusterConfigError, validate_cluster_config

    try:
        validate_cluster_config(config)
    except ClusterConfigError as error:
        return str(error).split("\n  - ")[1:]
    return []


REPLICATE_SEED_STEP = 1000  # replicate i of an arm trains with the arm's seed + 1000 i


def replicate_name(arm: str, index: int) -> str:
    """The arm name of replicate ``index`` >= 1 of ``arm``."""
    return f"{arm}_r{index}"


def append_extra_arms(cfg: dict) -> list[str]:
    """Move the arms of ``extra_arms`` (extension presets, keyed by preset) to the end of ``arms``, in key order;
    one line per arm that two of them (or ``arms`` and one of them) add. Idempotent: ``extra_arms`` is emptied."""
    extra, arms = cfg.get("extra_arms"), cfg.get("arms")
    if not isinstance(extra, dict) or not isinstance(arms, list):
        return []  # the schema names a malformed value
    added_by = {a.get("name"): "arms" for a in arms if isinstance(a, dict)}
    problems = []
    for key, group in extra.items():
        for j, arm in enumerate(group if isinstance(group, list) else []):
            name = arm.get("name") if isinstance(arm, dict) else None
            if name in added_by:
                problems.append(
                    f"config key 'extra_arms.{key}[{j}]': arm {name!r} is already added by {added_by[name]}: "
                    "these two presets cannot be combined (drop one of them, or rename the arm in one)"
                )
                continue
            added_by[name] = f"extra_arms.{key}"
            arms.append(arm)
    cfg["extra_arms"] = {}
    return problems


def expand_replicates(cfg: dict) -> None:
    """Add, for each arm with ``replicates`` k >= 2, its replicates 1..k-1 as arms of their own (the arm's recipe, seed
    + 1000 i, ``replicate_of`` naming the arm), right after it; idempotent, so a job's recipe is not expanded twice.
    Malformed values are left for the schema to name."""
    arms = cfg.get("arms")
    if not isinstance(arms, list):
        return
    names = {a.get("name") for a in arms if isinstance(a, dict)}
    expanded = []
    for arm in arms:
        expanded.append(arm)
        k = arm.get("replicates") if isinstance(arm, dict) else None
        if not isinstance(k, int) or isinstance(k, bool) or k < 2 or arm.get("replicate_of"):
            continue
        for i in range(1, k):
            name = replicate_name(arm["name"], i)
            if name not in names:
                seed = arm.get("seed", 1) + REPLICATE_SEED_STEP * i
                label = f"{arm['label']} (run {i + 1})" if arm.get("label") else None
                expanded.append({**arm, "name": name, "seed": seed, "label": label, "replicate_of": arm["name"]})
                names.add(name)
    cfg["arms"] = expanded
