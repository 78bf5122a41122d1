"""Job hook of the `kill_in_save` drill (drills.py), loaded by the job's sitecustomize
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `import torch`, only while such a drill is pending.

BRORL_DRILL_SAVE_HOLD=<global step>:<seconds> makes every torch.save into that step's checkpoint folder (DeepSpeed's
`_actor/global_step<g>/` files, written by each rank) wait that long first: the folder exists, its files do not
yet, `latest` still names the previous step. The segment runner kills the launch in that window, as a node failure
or a time limit during a save would. Nothing else changes: what is saved, and how, is OpenRLHF's.
"""

from __future__ import annotations

import os
import time

from .drills import HOLD_ENV


def install_from_env(torch) -> None:
    """Wrap torch.save so that writes into `global_step<g>/` wait the configured seconds."""
    step, seconds = os.environ[HOLD_ENV].split(":")
    marker = f"{os.sep}global_step{int(step)}{os.sep}"
    original = torch.save

    def save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)) and marker in os.fspath(f):
            time.sleep(float(seconds))
        return original(obj, f, *args, **kwargs)

    torch.save = save
