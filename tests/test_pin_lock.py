"""`make pin`: hub branches resolved to commits into pins.lock.yaml, against a local fake hub (the real huggingface_hub
client with HF_ENDPOINT pointing at it), and the lock read back by the config loader so that the pin gate opens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from http.server import BaseHTTPRequestHandler

import pytest
import yaml
from brorl.benchmarks.registry import load_registry
from brorl.config import load_yaml_config
from brorl.hub.checkpoint_identity import card_steps, start_identity_problem, steps_note
from brorl.hub.pin_gate import unpinned_of_run
from brorl.hub.pin_lock import apply_lock, lock_key, read_lock, read_lock_data
from helpers import CONFIG, ROOT, http_server, paper_config

COMMIT = "0123456789abcdef0123456789abcdef01234567"


START = load_yaml_config(CONFIG)["base_model"]["revision"]  # config.yaml's start pin (a commit)
V2 = "fedcba9876543210fedcba9876543210fedcba98"  # what the stand-in hub says the v2 branch points at
REPO = "nvidia/Nemotron-Research-Reasoning-Qwen-1.5B"
CARDS = {V2: "# ProRL v2\n\nThis model was trained for **3,000 RL training steps** on 136K problems.\n", START: ""}


class FakeHub(BaseHTTPRequestHandler):
    """A stand-in for the hub's API as huggingface_hub asks it: a dataset branch and the start repository's v2 branch
    resolved to commits, a model commit's files with their LFS sha256 (`?blobs=True`), and each commit's model card."""

    asked: list[str] = []
    weights: dict[str, str] = {}  # commit -> sha256 of its model.safetensors

    def _json(self, data: dict) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's name)
        FakeHub.asked.append(self.path)
        path = self.path.split("?")[0]
        if path == "/api/datasets/EricLu/SCP-116K/revision/main":
            self._json({"id": "EricLu/SCP-116K", "sha": COMMIT})
        elif path == f"/api/models/{REPO}/revision/v2":
            self._json({"id": REPO, "sha": V2})
        elif path.startswith(f"/api/models/{REPO}/revision/") and path.rsplit("/", 1)[1] in FakeHub.weights:
            commit = path.rsplit("/", 1)[1]
            lfs = {"sha256": FakeHub.weights[commit], "size": 3554214752, "pointerSize": 135}
            files = [{"rfilename": "model.safetensors", "size": 3554214752, "lfs": lfs}, {"rfilename": "config.json"}]
            self._json({"id": REPO, "sha": commit, "siblings": files})
        elif path.startswith(f"/{REPO}/resolve/") and path.endswith("/README.md"):
            body = CARDS.get(path.split("/")[-2], "").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def hub():
    with http_server(FakeHub) as url:
        yield url


def _resolve(lock, endpoint: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")}
    env.update({"HF_ENDPOINT": endpoint, "PYTHONPATH": str(ROOT / "workflow"), "HF_HUB_DISABLE_TELEMETRY": "1"})
    return subprocess.run(
        [sys.executable, "-m", "brorl.hub.pin_resolve", "--lock", str(lock)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_make_pin_resolves_the_unpinned_branch_and_the_gate_opens(hub, tmp_path):
    FakeHub.weights = {START: "a" * 64, V2: "a" * 64}  # the start pin holds v2's weights
    lock = tmp_path / "pins.lock.yaml"
    run = _resolve(lock, hub)
    assert run.returncode == 0, run.stdout + run.stderr
    assert read_lock(lock) == {"dataset/EricLu/SCP-116K@main": COMMIT, f"model/{REPO}@v2": V2}
    assert f"pinned dataset/EricLu/SCP-116K@main -> {COMMIT}" in run.stdout
    identity = read_lock_data(lock)["identity"]
    assert identity[f"model/{REPO}@{V2}"] == {
        "weights": {"model.safetensors": "a" * 64},
        "card_steps": "This model was trained for 3,000 RL training steps on 136K problems.",
    }
    assert identity[f"model/{REPO}@{START}"]["card_steps"] is None
    assert f"start checkpoint: the start pin {START[:12]} has v2's weights" in run.stdout
    assert start_identity_problem(load_yaml_config(CONFIG), read_lock_data(lock)) == ""
    assert any(p.startswith("/api/datasets/EricLu/SCP-116K/revision/main") for p in FakeHub.asked)
    # the config loader reads a lock beside config.yaml, as the Snakefile does
    shutil.copy(CONFIG, tmp_path / "config.yaml")
    config = load_yaml_config(tmp_path / "config.yaml")
    stem = next(s for s in config["train_data"]["sources"] if s["dataset"] == "EricLu/SCP-116K")
    assert stem["revision"] == COMMIT and unpinned_of_run(config, load_registry()) == ""
    assert "SCP-116K@main" in unpinned_of_run(paper_config(), load_registry())  # without the lock: still gated


def test_a_start_pin_without_the_v2_weights_stops_the_run(hub, tmp_path):
    FakeHub.weights = {START: "b" * 64, V2: "a" * 64}
    lock = tmp_path / "pins.lock.yaml"
    run = _resolve(lock, hub)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"start pin {START[:12]} does NOT have the weights of the v2 branch ({V2[:12]})" in run.stdout
    problem = start_identity_problem(load_yaml_config(CONFIG), read_lock_data(lock))
    assert f"set base_model.revision: {V2}" in problem
    local = load_yaml_config(CONFIG)
    local["base_model"]["local_path"] = "/somewhere/else"  # not the hub's start: nothing to compare
    assert start_identity_problem(local, read_lock_data(lock)) == ""


def test_the_card_sentence_that_states_training_steps():
    assert card_steps("Intro.\nIt was trained with **3K RL steps** on math. Then more.") == (
        "It was trained with 3K RL steps on math."
    )
    assert card_steps("# BroRL\nBroadened exploration with 512 rollouts per prompt.") is None
    note = steps_note({"repo_id": REPO, "revision": V2}, {f"model/{REPO}@{V2}": {"card_steps": "3,000 steps."}})
    assert note == f'steps: as the card at {V2[:12]} states: "3,000 steps."'
    assert steps_note({"repo_id": REPO, "revision": START}, {}).startswith("steps: not known (no card recorded")
    assert steps_note({"path": "/x"}, {}) == "steps: not known (a local checkpoint)"


def test_an_unreachable_hub_says_what_it_tried_and_where_to_run_it(tmp_path):
    run = _resolve(tmp_path / "pins.lock.yaml", "http://127.0.0.1:9")
    assert run.returncode == 1 and "Where the hub is reachable" in run.stderr, run.stderr
    assert "the commit of EricLu/SCP-116K@main (train_data.sources[stem].revision)" in run.stderr
    assert f"the commit of {REPO}@v2 (the paper's start, v2)" in run.stderr and "  make pin\n" in run.stderr
    assert f"sha256 and model card of {REPO}@{START} (base_model.revision)" in run.stderr
    assert not (tmp_path / "pins.lock.yaml").exists()


def test_a_lock_entry_only_pins_the_branch_it_resolved(tmp_path):
    config = paper_config()
    lock = {lock_key("dataset", "EricLu/SCP-116K", "dev"): COMMIT}  # another branch than the config's
    assert apply_lock(config, lock) == []
    assert apply_lock(config, {lock_key("dataset", "EricLu/SCP-116K", "main"): COMMIT}) == [
        "train_data.sources[stem].revision"
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"pins": {"dataset/x@main": "main"}}))
    with pytest.raises(ValueError, match="not a 40-hex commit"):
        read_lock(bad)
