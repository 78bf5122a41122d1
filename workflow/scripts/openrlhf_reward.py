"""The reward file OpenRLHF imports through `--reward.remote_url` (inside every vLLM actor, on any node).

It exposes `reward_func(queries, prompts, labels)` from brorl.training.reward (the one reward of both engines). The
`brorl` package is found through PYTHONPATH (the launcher exports it) or, failing that, next to this file
(workflow/scripts/../ = workflow/), so it works on a node whose working directory is elsewhere.

It also appends one line per call to $BRORL_REWARD_LOG_DIR/<host>-<pid>.jsonl (time, rewards, binary scores,
verifier errors, each sample's prompt id):
OpenRLHF logs rewards of the groups that survive dynamic sampling only, and brorl.training.openrlhf.run needs every
generated sample's reward and score for metrics.jsonl, and each step's prompts for the in-batch probe. Logging never
raises (an exception here would end training).
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

from brorl.training.reward import is_timeout, label_id, reward_result, score_queries  # noqa: E402

_LOG_DIR = os.environ.get("BRORL_REWARD_LOG_DIR")


def _log(rewards: list[float], scores: list[float], errors: list[str | None], labels: list) -> None:
    try:
        path = Path(_LOG_DIR) / f"{socket.gethostname()}-{os.getpid()}.jsonl"
        ids = [label_id(label) for label in labels]
        line = {"t": time.time(), "rewards": rewards, "scores": scores, "errors": errors, "ids": ids}
        with path.open("a") as handle:  # one short append per call; several threads of one process may interleave
            handle.write(json.dumps(line) + "\n")
    except Exception as error:  # noqa: BLE001 - the log is best effort, the reward is not
        print(f"openrlhf_reward: could not log rewards: {error!r}", file=sys.stderr)


def reward_func(queries: list[str], prompts: list[str], labels: list) -> dict:
    """brorl.training.reward's reward, with every call's rewards, scores and verifier errors in the reward log."""
    results, bad_labels = score_queries(queries, prompts, labels)
    timeouts = [s for s in results if is_timeout(s)]
    if timeouts:  # visible in the job log at once, not only in the step's metrics
        print(
            f"openrlhf_reward: {len(timeouts)} of {len(results)} verifier call(s) hit their time limit: "
            f"{timeouts[0].error}",
            file=sys.stderr,
        )
    if _LOG_DIR:
        _log(
            [s.score for s in results],
            [1.0 if s.correct else 0.0 for s in results],
            [s.error for s in results],
            list(labels),
        )
    return reward_result(results, bad_labels)
