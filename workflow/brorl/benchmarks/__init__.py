"""Benchmarks and training data: the registry (workflow/benchmarks/*.yaml), the normalized record schema, and the
commands that prepare, generate and freeze them (``python -m brorl.benchmarks``)."""

from .records import RECORD_VERSION, RecordError, read_records, write_records
from .registry import BenchmarkSpec, RegistryError, load_registry

__all__ = [
    "RECORD_VERSION",
    "BenchmarkSpec",
    "RecordError",
    "RegistryError",
    "load_registry",
    "read_records",
    "write_records",
]
