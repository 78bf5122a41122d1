"""Check a model folder before any generation, and its manifest (sha256 of every file).

``check_model_dir`` raises ModelError, naming the folder and the problem, for: a missing folder, a missing
config.json / weights / tokenizer, a corrupt JSON file, a truncated or corrupt safetensors header, a file whose
sha256 differs from ``brorl_manifest.json`` (when the folder has one) and an architecture that is not expected.
Standard library only, so it can run before torch or vLLM are imported.

Manifest (``brorl_manifest.json``), format 1::

    {"format": 1, "files": {"<relative path>": {"sha256": "...", "bytes": int}, ...},
     "architecture": "Qwen2ForCausalLM", "config": {...summary...}, "provenance": {...}, ...}

``manifest_hash`` is the sha256 of the canonical JSON of ``files`` only, so it identifies the weights, config and
tokenizer and not the time the folder was written.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

from ..reporting.provenance import sha256_file as file_sha256

MANIFEST_NAME = "brorl_manifest.json"
MANIFEST_FORMAT = 1
TOKENIZER_FILES = (("tokenizer.json",), ("tokenizer.model",), ("vocab.json", "merges.txt"))
JSON_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
SINGLE_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


class ModelError(ValueError):
    """A model folder that cannot be used; the message names the folder and the problem."""


def _read_json(folder: Path, name: str) -> dict:
    path = folder / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ModelError(f"{folder}: {name} is corrupt JSON ({e.msg} at line {e.lineno} column {e.colno})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"{folder}: cannot read {name}: {e}") from e
    if not isinstance(data, dict):
        raise ModelError(f"{folder}: {name} must hold a JSON object, not {type(data).__name__}")
    return data


def _weight_files(folder: Path) -> list[str]:
    """Relative names of the weight files (every shard of an index), or ModelError when there are none."""
    for index in WEIGHT_INDEXES:
        if (folder / index).is_file():
            weight_map = _read_json(folder, index).get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise ModelError(f"{folder}: {index} has no 'weight_map'")
            shards = sorted(set(weight_map.values()))
            missing = [s for s in shards if not (folder / s).is_file()]
            if missing:
                raise ModelError(f"{folder}: weight shard(s) listed in {index} are missing: {', '.join(missing)}")
            return shards
    found = [name for name in SINGLE_WEIGHTS if (folder / name).is_file()]
    if not found:
        raise ModelError(
            f"{folder}: no weights (expected model.safetensors, a *.index.json with shards, or pytorch_model.bin)"
        )
    return found[:1]


def _check_safetensors(folder: Path, name: str) -> None:
    """The header parses and the file is as long as the header says (catches truncated downloads cheaply)."""
    path = folder / name
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n <= 0 or 8 + n > size:
                raise ValueError(f"header length {n} does not fit a {size}-byte file")
            header = json.loads(f.read(n))
        end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    except (struct.error, ValueError, KeyError, TypeError, IndexError) as e:
        raise ModelError(f"{folder}: {name} is not a valid safetensors file ({e})") from e
    if 8 + n + end != size:
        raise ModelError(f"{folder}: {name} is truncated or padded: {size} bytes, header says {8 + n + end}")


def check_model_dir(path: Path | str, architectures: tuple[str, ...] | None = None) -> dict:
    """Check a model folder and return its parsed config.json; ModelError names the folder and the problem.

    With a manifest, every file it lists must exist and have the recorded sha256 (weights included), so a
    tampered or half-copied checkpoint is refused before an engine starts. ``architectures``: those accepted;
    None (the default): any text-generation architecture the pinned vLLM serves; ``()``: any.
    """
    folder = Path(path)
    if not folder.exists():
        raise ModelError(f"{folder}: model folder does not exist")
    if not folder.is_dir():
        raise ModelError(f"{folder}: not a folder")
    if not (folder / "config.json").is_file():
        raise ModelError(f"{folder}: missing config.json")
    config = _read_json(folder, "config.json")
    for name in JSON_FILES[1:]:
        if (folder / name).is_file():
            _read_json(folder, name)
    weights = _weight_files(folder)
    for name in weights:
        if name.endswith(".safetensors"):
            _check_safetensors(folder, name)
    if not any(all((folder / f).is_file() for f in group) for group in TOKENIZER_FILES):
        raise ModelError(
            f"{folder}: missing tokenizer (expected tokenizer.json, tokenizer.model or vocab.json + merges.txt)"
        )
    if (folder / "tokenizer.json").is_file():
        _read_json(folder, "tokenizer.json")
    archs = config.get("architectures") or []
    if architectures is None:
        from .architectures import architecture_problem

        problem = architecture_problem(config, str(folder))
        if problem:
            raise ModelError(problem)
    elif architectures and not set(archs) & set(architectures):
        raise ModelError(f"{folder}: architecture {archs or 'unknown'} is not one of {', '.join(architectures)}")
    if (folder / MANIFEST_NAME).is_file():
        _verify_manifest(folder, _read_json(folder, MANIFEST_NAME))
    return config


def _verify_manifest(folder: Path, manifest: dict) -> None:
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ModelError(f"{folder}: {MANIFEST_NAME} lists no files")
    for name, entry in sorted(files.items()):
        target = folder / name
        if not target.is_file():
            raise ModelError(f"{folder}: {name} is listed in {MANIFEST_NAME} but missing")
        if target.stat().st_size != entry.get("bytes", target.stat().st_size):
            raise ModelError(
                f"{folder}: {name} has {target.stat().st_size} bytes, {MANIFEST_NAME} says {entry['bytes']}"
            )
        digest = file_sha256(target)
        if digest != entry.get("sha256"):
            raise ModelError(
                f"{folder}: {name} sha256 {digest[:12]}... differs from {MANIFEST_NAME} "
                f"({str(entry.get('sha256'))[:12]}...): the file was changed or corrupted"
            )


def quick_problem(folder: Path) -> str:
    """What a glance at a model folder finds wrong against its manifest (a listed file missing, or of another size:
    truncated), without hashing anything; "" when nothing is, or when the folder has no manifest."""
    try:
        files = json.loads((folder / MANIFEST_NAME).read_text()).get("files") or {}
    except (OSError, ValueError, AttributeError):
        return ""
    for name, entry in sorted(files.items()):
        target = folder / name
        if not target.is_file():
            return f"{folder}: {name} is listed in {MANIFEST_NAME} but missing"
        if isinstance(entry, dict) and target.stat().st_size != entry.get("bytes", target.stat().st_size):
            return f"{folder}: {name} has {target.stat().st_size} bytes, {MANIFEST_NAME} says {entry['bytes']}"
    return ""


def manifest_files(folder: Path) -> dict[str, dict]:
    """sha256 and size of every file under ``folder`` (recursively, the manifest itself excluded), sorted."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_file() and rel != MANIFEST_NAME:
            out[rel] = {"sha256": file_sha256(p), "bytes": p.stat().st_size}
    return out


def write_manifest(folder: Path | str, extra: dict | None = None) -> dict:
    """Write ``brorl_manifest.json`` (file hashes, architecture, config summary, provenance, ``extra``)."""
    from ..reporting.provenance import provenance

    folder = Path(folder)
    config = _read_json(folder, "config.json")
    keys = (
        "model_type",
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "max_position_embeddings",
        "rope_theta",
        "tie_word_embeddings",
        "torch_dtype",
        "dtype",
        "eos_token_id",
        "pad_token_id",
    )
    manifest = {
        "format": MANIFEST_FORMAT,
        "files": manifest_files(folder),
        "architecture": (config.get("architectures") or [None])[0],
        "config": {k: config[k] for k in keys if k in config},
        **(extra or {}),
        "provenance": provenance(),
    }
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return manifest


def manifest_hash(folder: Path | str) -> str:
    """sha256 identifying a model folder's contents: of the manifest's file table when there is a manifest,
    else of config.json plus the names and sizes of the weight files (cheap; does not read the weights)."""
    folder = Path(folder)
    if (folder / MANIFEST_NAME).is_file():
        files = _read_json(folder, MANIFEST_NAME).get("files", {})
    else:
        files = {"config.json": {"sha256": file_sha256(folder / "config.json")}}
        files |= {w: {"bytes": (folder / w).stat().st_size} for w in _weight_files(folder)}
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
