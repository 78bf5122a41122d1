"""Peak GPU memory of each training rank per RL step, installed by the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ray.ppo_actor` is imported.

OpenRLHF 0.11.2's trainer calls `PolicyModelActor.fit` once per step on every actor rank (the PPO update of the
step). The wrapper resets torch's peak-memory counter before it and appends, after it, to
$BRORL_GPU_MEMORY_LOG_DIR/<pid>.jsonl (t, peak_gib, device_gib), which brorl.training.openrlhf.logs turns into each
step's `gpu_mem_peak_gib` (the maximum over ranks) and the smoke verdict judges:
  - peak_gib: what torch allocated in this trainer process during the update (`max_memory_allocated`);
  - device_gib: the most memory in use on the rank's GPU, all processes together (`mem_get_info`: total - free),
    sampled every SAMPLE_S seconds by a thread from the end of the previous update to the end of this one (the
    first update of a process: from its start). With
    the engines colocated (`num_gpus_per_actor` 0.2), the GPU also holds the reference model, the vLLM engine (awake
    while it generates, asleep during the update), CUDA contexts and NCCL buffers, which peak_gib never sees.
Without CUDA nothing is written and the metric stays null, never 0. The update itself is not touched.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import ModuleType

from .actor_patch import patch_actor_method
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ray.ppo_actor"
SAMPLE_S = 0.25  # how often the device's used memory is read (a generation phase lasts minutes)


class DeviceSampler:
    """The most memory in use on this process's GPU since the last ``take()``, read by a daemon thread."""

    def __init__(self, read_used: Callable[[], int], every_s: float = SAMPLE_S) -> None:
        self.read_used, self.every_s, self.high, self.lock = read_used, every_s, 0, threading.Lock()
        threading.Thread(target=self._run, name="brorl-device-memory", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # noqa: BLE001 (a device that stops answering ends the sampling, never the update)
                return
            time.sleep(self.every_s)

    def sample(self) -> None:
        used = self.read_used()
        with self.lock:
            self.high = max(self.high, used)

    def take(self) -> int:
        """The high mark (bytes), a reading of now included, and a fresh start."""
        self.sample()
        with self.lock:
            high, self.high = self.high, 0
        return high


def device_used() -> int:
    """Bytes in use on the current GPU, every process together (cudaMemGetInfo: total - free)."""
    import torch

    free, total = torch.cuda.mem_get_info()
    return total - free


def install(module: ModuleType, log_dir: str) -> None:
    """Wrap fit of module.PolicyModelActor (a Ray actor class) where Ray runs it (actor_patch)."""
    sampler: list[DeviceSampler] = []  # started at the first update of a process that has CUDA

    def wrap(fit):
        def timed_fit(self, *args, **kwargs):
            import torch

            cuda = torch.cuda.is_available()
            if cuda:
                sampler[:] = sampler or [DeviceSampler(device_used)]
                torch.cuda.reset_peak_memory_stats()
            status = fit(self, *args, **kwargs)
            if cuda:
                entry = {"t": time.time(), "peak_gib": torch.cuda.max_memory_allocated() / 2**30}
                append_hook_entry(log_dir, {**entry, "device_gib": sampler[0].take() / 2**30})
            return status

        timed_fit.__wrapped__ = fit
        return timed_fit

    patch_actor_method(module.PolicyModelActor, "fit", wrap, "brorl_memory_hook")


def install_from_env(module: ModuleType) -> None:
    """The job hook's entry: $BRORL_GPU_MEMORY_LOG_DIR."""
    install(module, os.environ["BRORL_GPU_MEMORY_LOG_DIR"])
