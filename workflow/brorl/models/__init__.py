"""Model folders: the tiny offline Qwen2 used on CPU, and the checks every stage runs before loading a model.

Importing this package is light (standard library only); torch and transformers are imported by ``build_tiny_model``.
"""

from .check import MANIFEST_NAME, ModelError, check_model_dir, file_sha256, manifest_hash, write_manifest
from .tiny import build_tiny_model

__all__ = [
    "MANIFEST_NAME", "ModelError", "build_tiny_model", "check_model_dir", "file_sha256", "manifest_hash",
    "write_manifest",
]  # fmt: skip
