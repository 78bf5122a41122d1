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
from brorl.pin_gate import unpinned_of_run
from brorl.pin_lock import apply_lock, lock_key, read_lock
from helpers import CONFIG, ROOT, http_server, paper_config

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub(BaseHTTPRequestHandler):
    """GET /api/datasets/<org>/<name>/revision/<branch> -> the dataset's info with its commit, as the hub answers."""

    asked: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        FakeHub.asked.append(self.path)
        if self.path.startswith("/api/datasets/EricLu/SCP-116K/revision/main"):
            body = json.dumps({"id": "EricLu/SCP-116K", "sha": COMMIT}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
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
        [sys.executable, "-m", "brorl.pin_resolve", "--lock", str(lock)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_make_pin_resolves_the_unpinned_branch_and_the_gate_opens(hub, tmp_path):
    lock = tmp_path / "pins.lock.yaml"
    run = _resolve(lock, hub)
    assert run.returncode == 0, run.stdout + run.stderr
    assert read_lock(lock) == {"dataset/EricLu/SCP-116K@main": COMMIT}
    assert f"pinned dataset/EricLu/SCP-116K@main -> {COMMIT}" in run.stdout
    assert any(p.startswith("/api/datasets/EricLu/SCP-116K/revision/main") for p in FakeHub.asked)
    # the config loader reads a lock beside config.yaml, as the Snakefile does
    shutil.copy(CONFIG, tmp_path / "config.yaml")
    config = load_yaml_config(tmp_path / "config.yaml")
    stem = next(s for s in config["train_data"]["sources"] if s["dataset"] == "EricLu/SCP-116K")
    assert stem["revision"] == COMMIT and unpinned_of_run(config, load_registry()) == ""
    assert "SCP-116K@main" in unpinned_of_run(paper_config(), load_registry())  # without the lock: still gated


def test_an_unreachable_hub_says_where_to_run_it(tmp_path):
    run = _resolve(tmp_path / "pins.lock.yaml", "http://127.0.0.1:9")
    assert run.returncode == 1 and "Where the hub is reachable" in run.stderr, run.stderr
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
