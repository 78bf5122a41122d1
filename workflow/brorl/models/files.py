"""Which files of a model repository a base model folder needs (pure; no I/O).

Kept: the config, the generation config, the tokenizer files and the safetensors weights with their index.
Everything else is excluded and listed in the manifest (nothing is dropped silently): other weight formats
(``*.bin``, ``*.pth``, ``*.pt``, ONNX, GGUF, TensorFlow/Flax), README, images, ``.gitattributes``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

# Patterns are matched against the path relative to the repository root, so a sub-folder (onnx/, original/) never
# matches: only top-level files are part of a Hugging Face model folder that transformers and vLLM load.
ALLOW_PATTERNS: tuple[str, ...] = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "model.safetensors",
    "model-*-of-*.safetensors",
    "model.safetensors.index.json",
)


def is_needed(name: str) -> bool:
    """True for a file (repository-relative POSIX path) that the model folder keeps."""
    return "/" not in name and any(fnmatchcase(name, pattern) for pattern in ALLOW_PATTERNS)


def select_files(names: list[str]) -> tuple[list[str], list[str]]:
    """Split repository file names into (kept, excluded), both sorted."""
    kept = sorted(n for n in names if is_needed(n))
    return kept, sorted(n for n in names if not is_needed(n))
