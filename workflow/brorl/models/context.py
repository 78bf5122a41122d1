"""Can a model reach a target context length, and what must change in its JSON files (pure; no I/O, no torch).

``plan_extension(config, target, rope_scaling)`` reads the position settings of ``config.json`` (both spellings:
transformers 4.x ``rope_theta`` + ``rope_scaling``, transformers 5.x ``rope_parameters``), checks that they agree,
and returns what the derived folder's config needs:

- ``target <= max_position_embeddings``: the RoPE settings already cover the target (the paper's case: the
  Qwen2 1.5B declares 131,072 positions and was trained on 8K); only the tokenizer and generation limits move.
- beyond, only with ``rope_scaling`` = ``linear`` (position interpolation) or ``yarn`` on an unscaled RoPE:
  factor = target / max_position_embeddings, ``max_position_embeddings`` = target.

Refused, with the reason: no RoPE settings (learned absolute positions or an unknown encoding), settings that
disagree, an unknown RoPE type, per-layer-type RoPE, a sliding window shorter than the target, a target beyond the
positions with no scaling allowed, or a second scaling stacked on an already scaled RoPE.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from .check import ModelError

SCALING_METHODS = ("linear", "yarn")
KNOWN_ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3")


class ContextError(ModelError):
    """The model cannot reach the requested context length; the message says why."""


@dataclass(frozen=True)
class ExtensionPlan:
    """What the derived folder's config.json gets, and why (recorded in its manifest)."""

    target_length: int
    positions_before: int
    positions_after: int
    rope_before: dict
    rope_after: dict
    method: str  # "within_positions" | "linear" | "yarn"
    config_updates: dict = field(default_factory=dict)

    def record(self) -> dict:
        return {
            "target_length": self.target_length,
            "method": self.method,
            "max_position_embeddings": [self.positions_before, self.positions_after],
            "rope": {"before": self.rope_before, "after": self.rope_after},
        }


def _rope_type(d: dict) -> str | None:
    return d.get("rope_type", d.get("type"))


def rope_settings(config: dict) -> dict:
    """The RoPE settings of a config.json as one dict {rope_type, rope_theta, scaling keys}; ContextError when there
    are none or the two spellings disagree."""
    params, legacy, theta_top = config.get("rope_parameters"), config.get("rope_scaling"), config.get("rope_theta")
    if params is not None and not isinstance(params, dict):
        raise ContextError(f"rope_parameters must be a mapping, not {params!r}")
    if legacy is not None and not isinstance(legacy, dict):
        raise ContextError(f"rope_scaling must be a mapping or null, not {legacy!r}")
    if params and all(isinstance(v, dict) for v in params.values()):
        raise ContextError(f"per-layer-type RoPE ({', '.join(params)}) is not supported by extend_context")
    if params is None and legacy is None and theta_top is None:
        raise ContextError(
            "config.json has no RoPE settings (rope_theta / rope_parameters / rope_scaling): the "
            "positions are learned or unknown, so they cannot be extended"
        )
    params, legacy = params or {}, legacy or {}
    theta_params = params.get("rope_theta")
    if theta_params is not None and theta_top is not None and float(theta_params) != float(theta_top):
        raise ContextError(f"rope_theta {theta_top} disagrees with rope_parameters.rope_theta {theta_params}")
    theta = theta_params if theta_params is not None else theta_top
    if theta is None or not float(theta) > 0:
        raise ContextError(f"rope_theta must be a positive number, not {theta!r}")
    kinds = {k for k in (_rope_type(params), _rope_type(legacy)) if k is not None}
    if len(kinds) > 1:
        raise ContextError(f"rope_parameters and rope_scaling give different RoPE types: {sorted(kinds)}")
    kind = kinds.pop() if kinds else "default"
    if kind not in KNOWN_ROPE_TYPES:
        raise ContextError(f"unknown RoPE type {kind!r} (known: {', '.join(KNOWN_ROPE_TYPES)})")
    scaling = {k: v for k, v in {**params, **legacy}.items() if k not in ("rope_type", "type", "rope_theta")}
    for key in set(params) & set(legacy) - {"rope_type", "type", "rope_theta"}:
        if params[key] != legacy[key]:
            raise ContextError(
                f"rope_parameters.{key} = {params[key]} disagrees with rope_scaling.{key} = {legacy[key]}"
            )
    return {"rope_type": kind, "rope_theta": float(theta), **scaling}


def _check_window(config: dict, target: int) -> None:
    window = config.get("sliding_window")
    sliding_layers = "sliding_attention" in (config.get("layer_types") or [])
    if (config.get("use_sliding_window") or sliding_layers) and window and int(window) < target:
        raise ContextError(f"sliding-window attention ({window} tokens) cannot attend over {target} tokens")


def plan_extension(config: dict, target: int, rope_scaling: str | None = None) -> ExtensionPlan:
    """What lets ``config`` reach ``target`` tokens (prompt + response); ContextError when nothing allowed does."""
    if not isinstance(target, int) or target < 1:
        raise ContextError(f"target length must be a positive integer, not {target!r}")
    if rope_scaling is not None and rope_scaling not in SCALING_METHODS:
        raise ContextError(f"unknown RoPE scaling {rope_scaling!r} (allowed: {', '.join(SCALING_METHODS)} or none)")
    positions = config.get("max_position_embeddings")
    if not isinstance(positions, int) or positions < 1:
        raise ContextError(f"config.json has no valid max_position_embeddings ({positions!r})")
    rope = rope_settings(config)
    _check_window(config, target)
    if target <= positions:
        return ExtensionPlan(target, positions, positions, rope, rope, "within_positions")
    if rope_scaling is None:
        raise ContextError(
            f"{target} tokens exceed max_position_embeddings = {positions} and no RoPE scaling is "
            "allowed (context.rope_scaling is null; set it to linear or yarn to extend)"
        )
    if rope["rope_type"] != "default":
        raise ContextError(
            f"{target} tokens exceed max_position_embeddings = {positions} and the RoPE is already "
            f"scaled ({rope}); stacking a second {rope_scaling} scaling is not supported"
        )
    factor = target / positions
    after = {"rope_type": rope_scaling, "factor": factor, "rope_theta": rope["rope_theta"]}
    if rope_scaling == "yarn":
        after["original_max_position_embeddings"] = positions
    legacy = {k: v for k, v in after.items() if k != "rope_theta"}  # transformers 4.x / vLLM spelling
    params = {**(config.get("rope_parameters") or {}), **after}  # transformers 5.x spelling, other keys kept
    updates = {
        "max_position_embeddings": target,
        "rope_scaling": legacy,
        "rope_parameters": params,
        "rope_theta": rope["rope_theta"],
    }
    return ExtensionPlan(target, positions, target, rope, after, rope_scaling, updates)


def extended_config(config: dict, plan: ExtensionPlan) -> dict:
    """config.json of the derived folder: the original with the plan's updates."""
    return {**copy.deepcopy(config), **copy.deepcopy(plan.config_updates)}


def with_limit(data: dict, key: str, length: int) -> tuple[dict, object]:
    """``data`` with ``key`` set to ``length`` (tokenizer model_max_length, generation max_length); the old value."""
    return {**data, key: length}, data.get(key)
