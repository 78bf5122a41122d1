"""vLLM's scheduler limits, one config key for every GPU engine (brorl.generation.vllm_scheduler): the JSON the rules and the
training launcher pass, the job hook that adds them to OpenRLHF's rollout engines and records what the started
engine reports (brorl.training.openrlhf.scheduler_hook), and the generation engine that reads the same variable.
The rehearsal (tests/cluster/test_rehearsal.py) checks the record of real vLLM engines under Ray."""

from __future__ import annotations

import asyncio
import json
import types

import pytest
from brorl.config import load_yaml_config
from brorl.generation.vllm_scheduler import ENV, read_back, scheduler_json, scheduler_settings
from brorl.training.openrlhf import scheduler_hook
from helpers import CONFIG


def test_the_config_key_travels_as_json_and_comes_back_checked():
    config = load_yaml_config(CONFIG)
    text = scheduler_json(config)
    assert json.loads(text) == {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}  # vLLM's H100 LLM-class
    assert scheduler_settings({ENV: text}) == {"max_num_seqs": 1024, "max_num_batched_tokens": 16384}
    assert scheduler_settings({}) == {}
    with pytest.raises(ValueError, match="BRORL_VLLM_SCHEDULER must be JSON"):
        scheduler_settings({ENV: '{"max_num_seqs": 8}'})
    with pytest.raises(ValueError, match="must be positive"):
        scheduler_settings({ENV: '{"max_num_seqs": 0, "max_num_batched_tokens": 1}'})


class Engine:
    """What the hook reads of a started vLLM AsyncLLM: vllm_config.scheduler_config."""

    def __init__(self, kwargs: dict) -> None:
        scheduler = types.SimpleNamespace(max_num_seqs=kwargs.get("max_num_seqs", 128))
        scheduler.max_num_batched_tokens = kwargs.get("max_num_batched_tokens", 2048)
        self.vllm_config = types.SimpleNamespace(scheduler_config=scheduler)


class RolloutActor:
    async def __init__(self, *args, **kwargs):  # as OpenRLHF 0.11.2's RolloutRayActor: async, kwargs to the engine
        self.llm = Engine(kwargs)


def test_the_rollout_engines_get_the_limits_and_report_them(tmp_path):
    actor_class = type("RolloutActor", (RolloutActor,), {})
    module = types.ModuleType("vllm_engine")
    module.RolloutRayActor = type("Remote", (), {"__ray_actor_class__": actor_class})  # as @ray.remote leaves it
    limits = {"max_num_seqs": 1024, "max_num_batched_tokens": 16384}
    scheduler_hook.install(module, limits, str(tmp_path / "scheduler"))
    scheduler_hook.install(module, limits, str(tmp_path / "scheduler"))  # a second import does not wrap twice

    async def start(**kwargs):
        actor = object.__new__(actor_class)
        await actor.__init__(model="m", **kwargs)
        return actor

    assert read_back(asyncio.run(start()).llm.vllm_config) == limits
    assert read_back(asyncio.run(start(max_num_seqs=7)).llm.vllm_config)["max_num_seqs"] == 7  # the caller's wins
    logged = [json.loads(line) for f in (tmp_path / "scheduler").iterdir() for line in f.read_text().splitlines()]
    assert [{k: v for k, v in e.items() if k != "t"} for e in logged] == [limits, {**limits, "max_num_seqs": 7}]


def test_the_generation_engine_reads_the_same_variable_on_gpus(monkeypatch):
    """VllmEngine (evaluation, the probe, the benchmark) takes $BRORL_VLLM_SCHEDULER on the cluster engine only; the
    embedded CPU engine keeps its own limits. vLLM's LLM is replaced by a recorder (no GPU here)."""
    import sys

    from brorl.generation import engine as engine_module

    seen = {}

    class LLM:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def get_tokenizer(self):
            return types.SimpleNamespace(chat_template=None)

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM))  # never the real (slow) import
    monkeypatch.setattr(engine_module, "template_opens_reasoning", lambda tokenizer: False)
    monkeypatch.setenv(ENV, '{"max_num_seqs": 1024, "max_num_batched_tokens": 16384}')
    engine_module.VllmEngine("/m", 33792, embedded=False)
    assert (seen["max_num_seqs"], seen["max_num_batched_tokens"]) == (1024, 16384)
    seen.clear()
    engine_module.VllmEngine("/m", 1024, embedded=True)
    assert (seen["max_num_seqs"], seen["max_num_batched_tokens"]) == (512, 8192)  # the CPU engine's own
