"""A test's handle on the timing of a save, so that a SIGKILL can land inside it on purpose.

BRORL_REHEARSAL_SAVE_DELAY=<global step>:<seconds> makes every torch.save into that step's checkpoint folder
(DeepSpeed's `_actor/global_step<g>/` files, written by each rank) wait that long first: the folder exists, its
files do not yet, `latest` still names the previous step. The test SIGKILLs every process of the job in that
window, which is what a node failure or a time limit during the save does. Nothing is changed but the wait; unset,
this module does nothing. Loaded by the rehearsal's sitecustomize only.
"""

from __future__ import annotations

import os
import time

SETTING = os.environ.get("BRORL_REHEARSAL_SAVE_DELAY", "")


def delay_saves(torch) -> None:
    """Wrap torch.save so that writes into `global_step<g>/` wait the configured seconds."""
    step, seconds = SETTING.split(":")
    marker = f"{os.sep}global_step{int(step)}{os.sep}"
    original = torch.save

    def save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)) and marker in os.fspath(f):
            time.sleep(float(seconds))
        return original(obj, f, *args, **kwargs)

    torch.save = save
