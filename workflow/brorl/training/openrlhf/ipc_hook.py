"""Expandable segments off around the CUDA-IPC weight sync, installed by the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ray.ppo_actor` is imported.

Training processes run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (packed micro-batches fragment the
caching allocator). With colocated engines OpenRLHF 0.11.2 syncs weights by CUDA IPC: `broadcast_to_vllm` clones each
parameter and exports it with torch's `reduce_tensor`, and the vLLM engine, a Ray actor beside the trainer (not its
child), rebuilds it. torch shares memory of expandable segments as file descriptors that the importer takes with
`pidfd_getfd`, which Yama's ptrace_scope 1 refuses between such processes (pytorch/pytorch#165685); legacy segments
use cudaIpcGetMemHandle, which needs no ptrace permission. So, as vLLM's own allocator does around its pool, the
wrapper switches expandable segments off for the sync (the clones land in legacy segments) and back on after it,
releasing the cached legacy blocks first so that training's later allocations are expandable again.
`python -m brorl.training.openrlhf.ipc_probe` checks both on a node. Each sync on a GPU appends {t, legacy_segments} to
$BRORL_IPC_LOG_DIR/<pid>.jsonl (whether it was switched). Nothing changes on a CPU or when the setting is off.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from types import ModuleType

from .actor_patch import patch_actor_method
from .ipc_probe import expandable_in, set_expandable
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ray.ppo_actor"


def expandable_on(env: Mapping[str, str]) -> bool:
    """Whether the allocator settings of `env` turn expandable segments on (torch reads both variable names)."""
    return expandable_in(",".join(env.get(name, "") for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")))


def install(module: ModuleType, log_dir: str | None = None) -> None:
    """Wrap broadcast_to_vllm of module.PolicyModelActor (a Ray actor class) where Ray runs it (actor_patch)."""

    def wrap(sync):
        @functools.wraps(sync)
        def legacy_segments_sync(self, *args, **kwargs):
            import torch

            if not torch.cuda.is_available():
                return sync(self, *args, **kwargs)
            toggle = expandable_on(os.environ)
            if toggle:
                torch.cuda.empty_cache()  # cached expandable blocks would otherwise be reused for the clones
                set_expandable(False)
            try:
                return sync(self, *args, **kwargs)
            finally:
                if toggle:
                    torch.cuda.empty_cache()  # the clones' legacy blocks go back: training allocates expandable again
                    set_expandable(True)
                if log_dir:  # every sync on a GPU, the smoke verdict's evidence that the path ran
                    append_hook_entry(log_dir, {"t": time.time(), "legacy_segments": toggle})

        return legacy_segments_sync

    patch_actor_method(module.PolicyModelActor, "broadcast_to_vllm", wrap, "brorl_ipc_hook")
