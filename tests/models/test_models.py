"""The model stage: the tiny offline Qwen2 (deterministic build, loads with transformers offline, chat template)
and check_model_dir's refusals (missing folder/files, corrupt JSON, tampered weights, other architecture)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from brorl.models import MANIFEST_NAME, ModelError, build_tiny_model, check_model_dir, manifest_hash

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


def copy(model: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "model"
    shutil.copytree(model, dst)
    return dst


def test_build_is_deterministic_and_has_a_manifest(tiny, tmp_path):
    again = build_tiny_model(tmp_path / "again", seed=0)
    other = build_tiny_model(tmp_path / "other", seed=1)
    weights = (tiny / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == weights
    assert (other / "model.safetensors").read_bytes() != weights
    assert manifest_hash(again) == manifest_hash(tiny) != manifest_hash(other)
    manifest = json.loads((tiny / MANIFEST_NAME).read_text())
    assert manifest["architecture"] == "Qwen2ForCausalLM" and manifest["build"]["seed"] == 0
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(manifest["files"])
    assert manifest["provenance"]["packages"]["transformers"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folders left behind


def test_portability_patches(tiny):
    config = json.loads((tiny / "config.json").read_text())
    tok_config = json.loads((tiny / "tokenizer_config.json").read_text())
    assert config["rope_theta"] == 10000.0 and config["torch_dtype"] == "float32"
    assert config["tie_word_embeddings"] is False and config["eos_token_id"] == 258
    assert tok_config["tokenizer_class"] == "PreTrainedTokenizerFast" and "<|im_start|>" in tok_config["chat_template"]
    assert json.loads((tiny / "generation_config.json").read_text())["eos_token_id"] == 258


def test_loads_offline_with_transformers_and_templates_once(tiny):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny, local_files_only=True)
    assert tok.eos_token_id == 258 and tok.pad_token_id == 256
    text = "héllo ∑ 2+2?"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    templated = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert templated == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    ids = tok(templated, add_special_tokens=False)["input_ids"]
    assert ids[0] == 257 and ids.count(257) == 2 and ids.count(258) == 1  # one user turn, one generation prompt
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    assert logits.shape == (1, len(ids), 320) and torch.isfinite(logits).all()


def test_check_accepts_the_tiny_model(tiny):
    assert check_model_dir(tiny)["architectures"] == ["Qwen2ForCausalLM"]


def test_check_missing_folder_and_files(tiny, tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        check_model_dir(tmp_path / "nowhere")
    for name, message in [
        ("config.json", "missing config.json"),
        ("model.safetensors", "no weights"),
        ("tokenizer.json", "missing tokenizer"),
    ]:
        model = copy(tiny, tmp_path / name)
        (model / name).unlink()
        with pytest.raises(ModelError, match=message) as e:
            check_model_dir(model)
        assert str(model) in str(e.value)


def test_check_corrupt_config(tiny, tmp_path):
    model = copy(tiny, tmp_path)
    (model / "config.json").write_text('{"architectures": ["Qwen2ForCausalLM"], ')
    with pytest.raises(ModelError, match="config.json is corrupt JSON"):
        check_model_dir(model)


def test_check_tampered_and_truncated_weights(tiny, tmp_path):
    model = copy(tiny, tmp_path / "a")
    data = bytearray((model / "model.safetensors").read_bytes())
    data[-1] ^= 0xFF  # same size, valid header, one weight byte changed
    (model / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="model.safetensors sha256 .* differs from brorl_manifest.json"):
        check_model_dir(model)
    model = copy(tiny, tmp_path / "b")
    (model / MANIFEST_NAME).unlink()  # without a manifest, a truncated file is still caught by its header
    (model / "model.safetensors").write_bytes((tiny / "model.safetensors").read_bytes()[:-100])
    with pytest.raises(ModelError, match="truncated"):
        check_model_dir(model)


def test_check_other_architecture(tiny, tmp_path):
    model = copy(tiny, tmp_path)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "architectures": ["LlamaForCausalLM"]}))
    (model / MANIFEST_NAME).unlink()
    with pytest.raises(ModelError, match=r"architecture \['LlamaForCausalLM'\] is not one of Qwen2ForCausalLM"):
        check_model_dir(model, architectures=("Qwen2ForCausalLM",))
    assert check_model_dir(model)["architectures"] == ["LlamaForCausalLM"]  # the default: any that vLLM serves
    (model / "config.json").write_text(json.dumps({**config, "architectures": ["BertModel"]}))
    with pytest.raises(ModelError, match=r"BertModel is not a text-generation model of vLLM 0\.29\.0"):
        check_model_dir(model)


def test_cli_check(tiny, tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "brorl.models", "check", str(tiny)], env=ENV, capture_output=True, text=True
    )
    assert ok.returncode == 0 and "OK (Qwen2ForCausalLM" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "brorl.models", "check", str(tmp_path / "x")], env=ENV, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "does not exist" in bad.stderr
