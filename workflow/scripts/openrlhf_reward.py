"""The reward file OpenRLHF imports through `--reward.remote_url` (inside every vLLM actor, on any node).

It exposes `reward_func(queries, prompts, labels)` from brorl.training.reward (the one reward of both engines). The
`brorl` package is found through PYTHONPATH (the launcher exports it) or, failing that, next to this file
(workflow/scripts/../ = workflow/), so it works on a node whose working directory is elsewhere.

It also appends one line per call to $BRORL_REWARD_LOG_DIR/<host>-<pid>.jsonl (time, rewards, binary scores):
OpenRLHF logs rewards of the groups that survive dynamic sampling only, and brorl.training.cluster needs every
generated sample's reward and score for metrics.jsonl. Logging never raises (an exception here would end training).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

_WORKFLOW = str(Path(__file__).resolve().parent.parent)
if _WORKFLOW not in sys.path:
    sys.path.append(_WORKFLOW)  # after PYTHONPATH entries: an installed/exported brorl wins

from brorl.training.reward import reward_func as _reward_func  # noqa: E402

_LOG_DIR = os.environ.get("BRORL_REWARD_LOG_DIR")


def _log(result: dict) -> None:
    try:
        rewards = [float(x) for x in result["rewards"].flatten().tolist()]
        scores = [float(x) for x in result["scores"].flatten().tolist()]
        path = Path(_LOG_DIR) / f"{socket.gethostname()}-{os.getpid()}.jsonl"
        with path.open("a") as handle:  # one short append per call; several threads of one process may interleave
            handle.write(json.dumps({"t": time.time(), "rewards": rewards, "scores": scores}) + "\n")
    except Exception as error:  # noqa: BLE001 - the log is best effort, the reward is not
        print(f"openrlhf_reward: could not log rewards: {error!r}", file=sys.stderr)


def reward_func(queries: list[str], prompts: list[str], labels: list) -> dict:
    """brorl.training.reward.reward_func, with every call's rewards and scores appended to the reward log."""
    result = _reward_func(queries, prompts, labels)
    if _LOG_DIR:
        _log(result)
    return result
