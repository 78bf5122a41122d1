"""``extend_context``: derive ``<base>-ctx<L>/`` from a verified base model folder, then prove it reaches L tokens.

The base folder is verified against its manifest first. config.json gets the plan of brorl.models.context
(RoPE checked, scaled only when allowed), generation_config.json ``max_length`` and tokenizer_config.json
``model_max_length`` become L; weights are hard-linked (copied only across file systems), other files copied.
Then the folder is loaded with transformers (CPU, float32) and one forward pass runs over L tokens at positions
0..L-1; the timing, finiteness of every logit, the largest position and the RoPE the model actually built are
recorded in the manifest, which is written last, before the folder is renamed into place.
"""

from __future__ import annotations

import json
import resource
import shutil
import sys
import time
from pathlib import Path

from .check import ModelError, manifest_hash, write_manifest
from .context import ContextError, ExtensionPlan, extended_config, plan_extension, with_limit
from .folders import link_or_copy, partial_folder, replace_folder
from .verify import verify_model_dir

SAMPLE_TEXT = "Let p be a prime and n a positive integer. Show that p divides n^p - n. 0123456789 +-*/=()\n"


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def forward_check(folder: Path | str, length: int, threads: int | None = None, chunk: int = 1024) -> dict:
    """Load ``folder`` (CPU, float32) and run one forward pass over ``length`` tokens; ContextError unless the
    tokenizer and config allow ``length`` and every logit is finite. Returns the record for the manifest.

    Logits are computed from the last hidden state in chunks of ``chunk`` positions, so a 150K vocabulary at 32K
    positions never materialises 20 GB at once.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if threads:
        torch.set_num_threads(threads)
    folder = Path(folder)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32).eval()
    load_s = time.perf_counter() - t0
    if tok.model_max_length < length:
        raise ContextError(f"{folder}: tokenizer model_max_length {tok.model_max_length} < {length}")
    if model.config.max_position_embeddings < length:
        positions = model.config.max_position_embeddings
        raise ContextError(f"{folder}: loaded max_position_embeddings {positions} < {length}")
    sample = tok(SAMPLE_TEXT, add_special_tokens=False)["input_ids"]
    ids = torch.tensor((sample * (length // len(sample) + 1))[:length]).unsqueeze(0)
    positions = torch.arange(length).unsqueeze(0)
    t0 = time.perf_counter()
    with torch.inference_mode():
        hidden = model.base_model(input_ids=ids, position_ids=positions, use_cache=False).last_hidden_state[0]
        head = model.get_output_embeddings()
        nonfinite, last = 0, None
        for start in range(0, length, chunk):
            logits = head(hidden[start : start + chunk])
            nonfinite += int((~torch.isfinite(logits)).sum())
            last = logits[-1]
    forward_s = time.perf_counter() - t0
    rotary = getattr(model.base_model, "rotary_emb", None)
    record = {
        "length": length,
        "tokens": int(ids.shape[1]),
        "max_position_id": int(positions.max()),
        "finite_logits": nonfinite == 0,
        "nonfinite_logits": nonfinite,
        "vocab_logits": int(last.shape[-1]),
        "last_logits": {"mean": float(last.mean()), "std": float(last.std()), "argmax": int(last.argmax())},
        "rope_type_loaded": getattr(rotary, "rope_type", None),
        "dtype": "float32",
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "load_s": round(load_s, 3),
        "forward_s": round(forward_s, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if nonfinite:
        raise ContextError(f"{folder}: {nonfinite} non-finite logits in a forward pass over {length} tokens")
    return record


EDITED = {"config.json", "generation_config.json", "tokenizer_config.json"}


def write_extended_files(base: Path, tmp: Path, files: list[str], plan: ExtensionPlan, link: bool = True) -> dict:
    """Write the derived folder's files into ``tmp``; return {file: {key: [before, after]}} and how files moved."""
    changes: dict = {}
    moved: dict[str, str] = {}
    for name in files:
        src, dst = base / name, tmp / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".safetensors"):
            moved[name] = link_or_copy(src, dst, link=link)
        elif name not in EDITED:
            shutil.copyfile(src, dst)
            moved[name] = "copy"
    config = _read(base / "config.json")
    new_config = extended_config(config, plan)
    _write(tmp / "config.json", new_config)
    changes["config.json"] = {k: [config.get(k), v] for k, v in plan.config_updates.items()}
    for name, key in (("generation_config.json", "max_length"), ("tokenizer_config.json", "model_max_length")):
        if (base / name).is_file():
            data, before = with_limit(_read(base / name), key, plan.target_length)
            _write(tmp / name, data)
            changes[name] = {key: [before, plan.target_length]}
        else:  # nothing to raise: transformers then has no limit of its own; said in the manifest
            changes[name] = "absent in the base folder (no limit to raise)"
    return {"changes": changes, "files_moved": moved}


def extend_context(
    base: Path | str,
    out: Path | str,
    length: int,
    rope_scaling: str | None = None,
    link: bool = True,
    threads: int | None = None,
) -> dict:
    """Write ``out`` from the verified ``base`` for ``length`` tokens, prove it with a forward pass, return the
    manifest. ContextError (a ModelError) when the architecture cannot reach ``length``."""
    base, out = Path(base), Path(out)
    base_manifest = verify_model_dir(base)
    try:
        plan = plan_extension(_read(base / "config.json"), length, rope_scaling)
    except ContextError as e:
        raise ContextError(f"{base}: cannot extend to {length} tokens: {e}") from e
    print(
        f"{base}: {plan.method} -> {length} tokens (positions {plan.positions_before} -> {plan.positions_after}, "
        f"rope {plan.rope_after})",
        file=sys.stderr,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_folder(out)
    try:
        written = write_extended_files(base, tmp, sorted(base_manifest["files"]), plan, link=link)
        check = forward_check(tmp, length, threads=threads)
        if plan.method != "within_positions" and check["rope_type_loaded"] not in (None, plan.method):
            raise ContextError(f"{out}: transformers built RoPE {check['rope_type_loaded']!r}, not {plan.method!r}")
        manifest = write_manifest(
            tmp,
            {
                "stage": "extend_context",
                "source": {
                    "kind": "base_model",
                    "path": str(base),
                    "manifest_hash": manifest_hash(base),
                    "repo_id": base_manifest.get("source", {}).get("repo_id"),
                    "resolved_commit": base_manifest.get("source", {}).get("resolved_commit"),
                },
                "extension": {**plan.record(), **written},
                "forward_check": check,
            },
        )
        replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename; a failed attempt leaves nothing behind
    return manifest


__all__ = ["extend_context", "forward_check", "write_extended_files", "ModelError"]
