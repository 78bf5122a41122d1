"""vLLM's scheduler limits for training's rollout engines, installed by the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ray.vllm_engine` is imported.

OpenRLHF 0.11.2's RolloutRayActor builds its engine from the keyword arguments of its (async) __init__
(`vllm.AsyncEngineArgs(*args, **self.kwargs)`) and passes no max_num_seqs or max_num_batched_tokens; the wrapper adds
those of $BRORL_VLLM_SCHEDULER (brorl.generation.vllm_scheduler) where the caller gave none, then appends the limits the
started engine reports (its scheduler config) to $BRORL_SCHEDULER_LOG_DIR/<pid>.jsonl, which the segment runner puts
into segment<s>.json. Generation itself is not touched.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from types import ModuleType

from ...generation.vllm_scheduler import read_back
from .actor_patch import patch_actor_method
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ray.vllm_engine"


def install(module: ModuleType, settings: Mapping[str, int], log_dir: str | None = None) -> None:
    """Wrap __init__ of module.RolloutRayActor (a Ray actor class) where Ray runs it (actor_patch)."""

    def wrap(init):
        @functools.wraps(init)
        async def init_with_limits(self, *args, **kwargs):
            for key, value in settings.items():
                kwargs.setdefault(key, value)
            await init(self, *args, **kwargs)
            if log_dir:
                append_hook_entry(log_dir, {"t": time.time(), **read_back(self.llm.vllm_config)})

        return init_with_limits

    patch_actor_method(module.RolloutRayActor, "__init__", wrap, "brorl_scheduler_hook")
