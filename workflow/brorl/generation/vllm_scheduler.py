"""vLLM's scheduler limits, one config key (`vllm_scheduler`) for every GPU engine: training's rollout engines (the
job hook, brorl.training.openrlhf.scheduler_hook), evaluation's and the probe's generation and the Table 2 benchmark
(brorl.generation.engine). They travel as $BRORL_VLLM_SCHEDULER (JSON), set by the training launcher and by the
generation rules, so that data-parallel worker processes and Ray's engine processes read the same values.

Why one key: OpenRLHF 0.11.2 builds its engines with AsyncEngineArgs and no limits, so vLLM 0.29 gives them its
engine-context defaults (128 sequences, 2,048 batched tokens), while `vllm.LLM` (evaluation, the benchmark) gets the
LLM-class defaults of an H100 (1,024 and 16,384): the training step time, and with it Figure 1's time axis, would
rest on a knob nobody set and the benchmark would measure another scheduler than the one that trained."""

from __future__ import annotations

import json
from collections.abc import Mapping

ENV = "BRORL_VLLM_SCHEDULER"
KEYS = ("max_num_seqs", "max_num_batched_tokens")


def scheduler_json(config: Mapping) -> str:
    """The config's vllm_scheduler as the JSON of $BRORL_VLLM_SCHEDULER."""
    return json.dumps({k: int(config["vllm_scheduler"][k]) for k in KEYS}, sort_keys=True)


def scheduler_settings(env: Mapping[str, str]) -> dict[str, int]:
    """The engine arguments $BRORL_VLLM_SCHEDULER names ({} when unset); ValueError naming it when malformed."""
    text = env.get(ENV, "")
    if not text:
        return {}
    try:
        data = json.loads(text)
        settings = {k: int(data[k]) for k in KEYS}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"${ENV} must be JSON with integer {' and '.join(KEYS)}, not {text!r} ({error})") from error
    if min(settings.values()) < 1:
        raise ValueError(f"${ENV}: {settings} must be positive")
    return settings


def read_back(vllm_config) -> dict[str, int]:
    """The limits a running engine uses, from its VllmConfig (engine.vllm_config.scheduler_config)."""
    scheduler = vllm_config.scheduler_config
    return {k: int(getattr(scheduler, k)) for k in KEYS}
