"""Job hook of the segment runner's stop requests (brorl.training.stop), installed by the job's sitecustomize
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ppo_trainer` is imported.

OpenRLHF 0.11.2's PPOTrainer.fit calls `save_logs_and_checkpoints(global_step, status, client_states)` once per step,
after the step's update (ppo_trainer.py:560), and saves the full state there only when `global_step %
args.ckpt.save_steps == 0` (ppo_trainer.py:394). The wrapper:
  * records each step to $BRORL_STEP_LOG_DIR/<pid>.jsonl: its time (OpenRLHF's `timing/step_total`, generation
    included), the time of the call (the save, when there is one), whether the full state was saved, and whether a
    stop request was answered; the runner sizes its time-limit decision on these;
  * answers a stop request: when $BRORL_STOP_REQUEST (a JSON file the runner writes) names this launch
    ($BRORL_LAUNCH_ID), the step is saved even where save_steps would skip it (save_steps is set to 1 for this one
    call, so OpenRLHF's own code saves, with the same client states: global step, data-loader position), and the
    record says so. The runner then stops the launch; the retry resumes from that save.
What is saved, and how, stays OpenRLHF's.
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path
from types import ModuleType

from ..stop import LAUNCH_ENV
from .actor_patch import patch_actor_method
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ppo_trainer"
REQUEST_ENV = "BRORL_STOP_REQUEST"  # the file the runner writes to ask for a save and a stop
STEP_LOG_ENV = "BRORL_STEP_LOG_DIR"  # one jsonl per trainer process: each step's times and saves


def requested(path: str | None, launch: str | None) -> bool:
    """Whether the request file asks this launch to stop (a request of an earlier launch is ignored)."""
    if not path or not os.path.isfile(path):
        return False
    try:
        return json.loads(Path(path).read_text()).get("launch") == launch
    except (OSError, ValueError):
        return False  # being written (the runner writes it atomically; a reader may still race a rename)


def install(module: ModuleType, request: str | None, log_dir: str | None, launch: str | None) -> None:
    """Wrap PPOTrainer.save_logs_and_checkpoints (a Ray actor class) where Ray runs it (actor_patch)."""

    def wrap(save_logs_and_checkpoints):
        @functools.wraps(save_logs_and_checkpoints)
        def save_or_stop(self, global_step, logs_dict=None, client_states=None):
            ckpt = self.args.ckpt
            stop = requested(request, launch)
            regular = global_step % ckpt.save_steps == 0
            started = time.time()
            if stop and not regular:
                every, ckpt.save_steps = ckpt.save_steps, 1
                try:
                    save_logs_and_checkpoints(self, global_step, logs_dict, client_states)
                finally:
                    ckpt.save_steps = every
            else:
                save_logs_and_checkpoints(self, global_step, logs_dict, client_states)
            if log_dir:
                entry = {
                    "t": time.time(),
                    "global_step": global_step,
                    "step_s": (logs_dict or {}).get("timing/step_total"),
                    "call_s": time.time() - started,
                    "saved": regular or stop,
                    "stop": stop,
                    "forced": stop and not regular,
                }
                append_hook_entry(log_dir, entry)

        return save_or_stop

    patch_actor_method(module.PPOTrainer, "save_logs_and_checkpoints", wrap, "brorl_stop_hook")


def install_from_env(module: ModuleType) -> None:
    install(module, os.environ.get(REQUEST_ENV), os.environ.get(STEP_LOG_ENV), os.environ.get(LAUNCH_ENV))
