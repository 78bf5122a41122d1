"""Sampling responses from a model: one Engine interface (vLLM on CPU in-process or on GPUs), resumable sharded
generation of N samples per benchmark item, and a throughput benchmark.

Importing this package imports nothing heavy (the engine imports vLLM when it starts): its names load on first use,
so that the driver environment, which has no scoring or vLLM, reads `brorl.generation.vllm_scheduler`.
"""

from importlib import import_module

_HOMES = {
    "Completion": "engine",
    "Engine": "engine",
    "VllmEngine": "engine",
    "GenerationError": "generate",
    "generate_samples": "generate",
    "shard_seed": "generate",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_HOMES[name]}", __name__), name)
