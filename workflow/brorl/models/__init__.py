"""Model folders: the start checkpoint staged with a manifest (download_base_model), its context extension
(extend_context), the tiny offline Qwen2 used on CPU, and the checks every stage runs before loading a model
(``verify_model_dir``: the manifest's sha256 of every file).

Importing this package is light (standard library only); torch and transformers are imported by ``build_tiny_model``
and ``extend_context``, huggingface_hub by a hub download.
"""

from .check import MANIFEST_NAME, ModelError, check_model_dir, file_sha256, manifest_hash, write_manifest
from .context import ContextError, plan_extension
from .download import download_base_model, is_pinned, stage_model
from .extend import extend_context
from .tiny import build_tiny_model
from .verify import verify_model_dir

__all__ = [
    "MANIFEST_NAME",
    "ContextError",
    "ModelError",
    "build_tiny_model",
    "check_model_dir",
    "download_base_model",
    "extend_context",
    "file_sha256",
    "is_pinned",
    "manifest_hash",
    "plan_extension",
    "stage_model",
    "verify_model_dir",
    "write_manifest",
]
