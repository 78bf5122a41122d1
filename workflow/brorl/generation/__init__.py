"""Sampling responses from a model: one Engine interface (vLLM on CPU in-process or on GPUs), resumable sharded
generation of N samples per benchmark item, and a throughput benchmark.

Importing this package imports nothing heavy (the engine imports vLLM when it starts): its names load on first use,
so that the driver environment, which has no scoring or vLLM, reads `brorl.generation.vllm_scheduler`.
"""

from .. import lazy_exports

_HOMES = {
    "Completion": "engine",
    "Engine": "engine",
    "VllmEngine": "engine",
    "GenerationError": "generate",
    "generate_samples": "generate",
    "shard_seed": "generate",
}
__all__, __getattr__ = lazy_exports(__name__, _HOMES)
