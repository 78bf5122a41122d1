"""The job hook's switch around the CUDA-IPC weight sync (brorl.training.openrlhf.ipc_hook): expandable segments off
for broadcast_to_vllm and back on after it (also when the sync raises), only where CUDA runs with them on; on a CPU,
or with the setting off, the sync is untouched. torch's allocator calls are recorded, not made (no GPU here)."""

from __future__ import annotations

import json
import types

import pytest
from brorl.training.openrlhf import ipc_hook


class Actor:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def broadcast_to_vllm(self, fail: bool = False):
        self.calls.append("sync")
        if fail:
            raise RuntimeError("engine gone")
        return "synced"


@pytest.fixture
def fake_cuda(monkeypatch):
    import torch

    calls: list = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    monkeypatch.setattr(torch.cuda.memory, "_set_allocator_settings", lambda conf: calls.append(conf))
    return calls


def _installed(tmp_path, actor_class) -> types.ModuleType:
    module = types.ModuleType("ppo_actor")
    module.PolicyModelActor = type("RemoteActor", (), {"__ray_actor_class__": actor_class})  # as @ray.remote leaves
    ipc_hook.install(module, str(tmp_path / "ipc"))
    ipc_hook.install(module, str(tmp_path / "ipc"))  # a second import does not wrap twice
    return module


def test_the_sync_runs_with_legacy_segments_and_restores_them(fake_cuda, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    actor_class = type("Actor", (Actor,), {})
    _installed(tmp_path, actor_class)
    actor = actor_class(fake_cuda)
    assert actor.broadcast_to_vllm() == "synced"
    on, off = "expandable_segments:True", "expandable_segments:False"
    assert fake_cuda == ["empty_cache", off, "sync", "empty_cache", on]
    fake_cuda.clear()
    with pytest.raises(RuntimeError, match="engine gone"):
        actor.broadcast_to_vllm(fail=True)
    assert fake_cuda[-1] == "expandable_segments:True"  # restored even when the sync fails
    logged = [json.loads(line) for f in (tmp_path / "ipc").iterdir() for line in f.read_text().splitlines()]
    assert len(logged) == 2 and all(entry["legacy_segments"] for entry in logged)


def test_nothing_changes_with_the_setting_off_or_without_cuda(fake_cuda, tmp_path, monkeypatch):
    import torch

    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:False")
    actor_class = type("Actor", (Actor,), {})
    _installed(tmp_path, actor_class)
    actor_class(fake_cuda).broadcast_to_vllm()
    assert fake_cuda == ["sync"]  # nothing switched, but the sync is logged (the smoke verdict's evidence)
    logged = [json.loads(line) for f in (tmp_path / "ipc").iterdir() for line in f.read_text().splitlines()]
    assert [entry["legacy_segments"] for entry in logged] == [False]
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")  # torch's newer name counts too
    assert ipc_hook.expandable_on({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64,expandable_segments:True"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    fake_cuda.clear()
    actor_class(fake_cuda).broadcast_to_vllm()
    lines = [line for f in (tmp_path / "ipc").iterdir() for line in f.read_text().splitlines()]
    assert fake_cuda == ["sync"] and len(lines) == 1  # no new entry without CUDA


GPU_SYNC = """
import json, sys, types, torch
from brorl.training.openrlhf.ipc_probe import in_expandable_segment
from brorl.training.openrlhf import ipc_hook

def segment_of(tensor):
    torch.cuda.synchronize()
    return in_expandable_segment(torch.cuda.memory_snapshot(), tensor.data_ptr())

seen = {}
class Actor:
    def broadcast_to_vllm(self):
        weight = torch.ones(1 << 20, device="cuda")
        seen["clone"] = segment_of(weight.clone())  # what OpenRLHF exports with reduce_tensor

seen["before"] = segment_of(torch.ones(1 << 20, device="cuda"))
module = types.ModuleType("ppo_actor")
module.PolicyModelActor = Actor
ipc_hook.install(module, sys.argv[1])
Actor().broadcast_to_vllm()
seen["after"] = segment_of(torch.empty(1 << 22, device="cuda"))  # larger than anything cached during the sync
print(json.dumps(seen))
"""


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU (run on a GPU node)")
def test_on_a_gpu_the_synced_clones_leave_expandable_segments_and_the_setting_returns(tmp_path):
    """The real allocator: under expandable segments a training tensor lies in one, the sync's clone does not (so
    its export needs no ptrace permission), and allocations after the sync are expandable again."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    proc = subprocess.run(
        [sys.executable, "-c", GPU_SYNC, str(tmp_path / "ipc")], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"before": True, "clone": False, "after": True}
