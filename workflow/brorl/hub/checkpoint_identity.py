"""What a pinned model commit holds: the sha256 of its safetensors (the hub's LFS records) and the sentence of its
model card that states its training steps. `make pin` records both in pins.lock.yaml (`identity:`) for every model
commit of the run and for the start repository's `v2` branch, the 3,000-step ProRLv2 model the paper starts from
(its model card), so that a run can tell whether its start pin is that model: the pin gate refuses a paper-repository
start whose weights differ from v2's (`start_identity_problem`), and the tables say how many steps a released model
was trained for only where its card says so."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Mapping
from typing import Any

PAPER_START_REPO = "nvidia/Nemotron-Research-Reasoning-Qwen-1.5B"
PAPER_START_BRANCH = "v2"  # the 3,000-step model (model card); `main` and `brorl` are other branches of the repo
# a sentence naming a number of (training / RL) steps: "trained for 3,000 steps", "3K RL training steps"
STEP_SENTENCE = re.compile(r"[^.\n]*?\b\d[\d,.]*\s*[kK]?\+?\s+(?:(?:RL|training|reinforcement)\s+)*steps?\b[^.\n]*\.?")


def card_steps(readme: str) -> str | None:
    """The first sentence of a model card that states a number of training steps (markdown emphasis removed)."""
    text = re.sub(r"[*_`]+", "", readme)
    match = STEP_SENTENCE.search(text)
    return " ".join(match.group(0).split()) if match else None


def weights_of(siblings: list[Mapping[str, Any]]) -> dict[str, str]:
    """{file: sha256} of the safetensors in a hub model_info(files_metadata=True) listing (their LFS records)."""
    return {
        s["rfilename"]: s["lfs"]["sha256"]
        for s in siblings
        if str(s.get("rfilename", "")).endswith(".safetensors") and (s.get("lfs") or {}).get("sha256")
    }


def fetch_identity(repo_id: str, commit: str) -> dict[str, Any]:
    """{"weights": {file: sha256}, "card_steps": sentence or None} of a model commit, from the hub (HF_ENDPOINT and
    HF_TOKEN honoured); network errors propagate."""
    from huggingface_hub import HfApi, constants

    info = HfApi().model_info(repo_id, revision=commit, files_metadata=True)
    siblings = [
        {"rfilename": s.rfilename, "lfs": {"sha256": s.lfs.sha256} if s.lfs else None} for s in info.siblings or []
    ]
    request = urllib.request.Request(f"{constants.ENDPOINT}/{repo_id}/resolve/{commit}/README.md")
    if os.environ.get("HF_TOKEN"):
        request.add_header("Authorization", f"Bearer {os.environ['HF_TOKEN']}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            readme = response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:  # a repository without a card: no statement
        if error.code != 404:
            raise
        readme = ""
    return {"weights": weights_of(siblings), "card_steps": card_steps(readme)}


def identity_key(repo_id: str, commit: str) -> str:
    return f"model/{repo_id}@{commit}"


def same_weights(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool | None:
    """Whether two identities hold the same safetensors (None: either has no weights recorded)."""
    if not a or not b or not a.get("weights") or not b.get("weights"):
        return None
    return dict(a["weights"]) == dict(b["weights"])


def start_verdict(
    start_commit: str | None, v2_commit: str | None, identities: Mapping[str, Mapping[str, Any]]
) -> tuple[bool | None, str]:
    """(same weights?, a sentence): the start pin of the paper repository against its v2 branch."""
    if not start_commit or not v2_commit:
        return None, "the start pin and v2 are not both resolved: not checked (run `make pin` where the hub answers)"
    if start_commit == v2_commit:
        return True, f"the start pin {start_commit[:12]} is v2's commit: the 3,000-step model the paper starts from"
    same = same_weights(
        identities.get(identity_key(PAPER_START_REPO, start_commit)),
        identities.get(identity_key(PAPER_START_REPO, v2_commit)),
    )
    if same is None:
        return None, f"the start pin {start_commit[:12]} and v2 ({v2_commit[:12]}): weights not recorded, not checked"
    if same:
        return True, f"the start pin {start_commit[:12]} has v2's weights ({v2_commit[:12]}, same safetensors sha256)"
    return False, (
        f"the start pin {start_commit[:12]} does NOT have the weights of the v2 branch ({v2_commit[:12]}), the 3,000-step "
        f"model the paper starts from (model card): set base_model.revision: {v2_commit} (or a commit with its weights)"
    )


def start_identity_problem(config: Mapping[str, Any], lock: Mapping[str, Any]) -> str:
    """Why a run must not start from its pinned start checkpoint ("" when fine or not known): the paper repository's
    start pin whose recorded weights differ from v2's."""
    base = config["base_model"]
    if base.get("local_path") or base.get("repo_id") != PAPER_START_REPO:
        return ""
    v2 = (lock.get("pins") or {}).get(f"model/{PAPER_START_REPO}@{PAPER_START_BRANCH}")
    same, sentence = start_verdict(base.get("revision"), v2, lock.get("identity") or {})
    return sentence if same is False else ""


def steps_note(model: Mapping[str, Any], identities: Mapping[str, Mapping[str, Any]]) -> str:
    """How many steps an evaluation model was trained for, as far as its card at the pinned commit says."""
    if not model.get("repo_id") or not model.get("revision"):
        return "steps: not known (a local checkpoint)"
    found = identities.get(identity_key(model["repo_id"], model["revision"])) or {}
    sentence = found.get("card_steps")
    if sentence:
        return f"steps: as the card at {model['revision'][:12]} states: {json.dumps(sentence)}"
    if found:
        return f"steps: not known (the card at {model['revision'][:12]} states none)"
    return "steps: not known (no card recorded: `make pin` where the hub answers)"
