"""A Qwen2 model of the paper's size (DeepSeek-R1-Distill-Qwen-1.5B's shape) with random weights, built from a
config alone (no hub), for the one-GPU throughput check. Throughput depends on the shape, not on the weights;
every sample runs to max_tokens (ignore_eos), so random text costs the same as real text.

The tokenizer is the tiny model's byte-level one (brorl.models.tiny): prompts are about 3-4x more tokens than with
Qwen's BPE, so prefill and prefix sharing are larger than in the paper's runs at the same text.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# DeepSeek-R1-Distill-Qwen-1.5B / Nemotron-Research-Reasoning-Qwen-1.5B config.json (Qwen2, untied, bf16)
QWEN2_1_5B = dict(
    vocab_size=151936,
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    max_position_embeddings=131072,
    rope_theta=10000.0,
    tie_word_embeddings=False,
)


def build_random_model(
    out_dir: Path | str, seed: int = 0, max_position_embeddings: int | None = None, **overrides: int
) -> Path:
    """Write a random-weight Qwen2 (QWEN2_1_5B, with ``overrides``) in bf16 to ``out_dir`` with a manifest."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    from ..models.check import write_manifest
    from ..models.tiny import EOS_ID, PAD_ID, _patch_json, build_tokenizer

    shape = {**QWEN2_1_5B, **overrides}
    if max_position_embeddings:
        shape["max_position_embeddings"] = int(max_position_embeddings)
    config = Qwen2Config(**shape, bos_token_id=None, eos_token_id=EOS_ID, pad_token_id=PAD_ID, use_sliding_window=False)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        torch.manual_seed(seed)
        device = "cuda" if torch.cuda.is_available() else "cpu"  # GPU init takes seconds, CPU about a minute
        with torch.device(device):
            model = Qwen2ForCausalLM(config).to(torch.bfloat16).eval()
        model.generation_config = GenerationConfig(eos_token_id=EOS_ID, pad_token_id=PAD_ID, bos_token_id=None)
        n_params = sum(p.numel() for p in model.parameters())
        model.save_pretrained(tmp)
        del model
        build_tokenizer(shape["max_position_embeddings"]).save_pretrained(tmp)
        _patch_json(tmp / "config.json", {"rope_theta": shape["rope_theta"], "torch_dtype": "bfloat16"})
        write_manifest(
            tmp,
            {
                "builder": "brorl.throughput.random_model.build_random_model",
                "build": {**shape, "seed": seed, "dtype": "bfloat16"},
                "n_parameters": n_params,
            },
        )
        os.chmod(tmp, 0o755)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out
