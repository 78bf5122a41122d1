"""Sampling responses from a model: one Engine interface (vLLM on CPU in-process or on GPUs), resumable sharded
generation of N samples per benchmark item, and a throughput benchmark.

Importing this package does not import vLLM; the engine imports it when it starts.
"""

from .engine import Completion, Engine, VllmEngine
from .generate import GenerationError, generate_samples, shard_seed

__all__ = ["Completion", "Engine", "GenerationError", "VllmEngine", "generate_samples", "shard_seed"]
