"""Peak GPU memory of each training rank per RL step, installed by the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ray.ppo_actor` is imported.

OpenRLHF 0.11.2's trainer calls `PolicyModelActor.fit` once per step on every actor rank (the PPO update of the
step). The wrapper resets torch's peak-memory counter before it and appends the peak after it to
$BRORL_GPU_MEMORY_LOG_DIR/<pid>.jsonl (t, peak_gib), which brorl.training.openrlhf.logs turns into each step's
`gpu_mem_peak_gib` (the maximum over ranks). Without CUDA nothing is written and the metric stays null, never 0.
The update itself is not touched.
"""

from __future__ import annotations

import os
import time
from types import ModuleType

from .actor_patch import patch_actor_method
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ray.ppo_actor"


def install(module: ModuleType, log_dir: str) -> None:
    """Wrap fit of module.PolicyModelActor (a Ray actor class) where Ray runs it (actor_patch)."""

    def wrap(fit):
        def timed_fit(self, *args, **kwargs):
            import torch

            cuda = torch.cuda.is_available()
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            status = fit(self, *args, **kwargs)
            if cuda:
                append_hook_entry(log_dir, {"t": time.time(), "peak_gib": torch.cuda.max_memory_allocated() / 2**30})
            return status

        timed_fit.__wrapped__ = fit
        return timed_fit

    patch_actor_method(module.PolicyModelActor, "fit", wrap, "brorl_memory_hook")


def install_from_env(module: ModuleType) -> None:
    """The job hook's entry: $BRORL_GPU_MEMORY_LOG_DIR."""
    install(module, os.environ["BRORL_GPU_MEMORY_LOG_DIR"])
