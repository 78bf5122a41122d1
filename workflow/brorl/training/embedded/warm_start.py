"""Supervised warm start of the tiny model: the embedded preset's stand-in for a model that already reasons.

The paper continues RL from a trained checkpoint whose rollouts are right often enough for groups to have mixed
outcomes. A freshly built random tiny model is right with probability ~0, so every group would be dropped by
dynamic sampling and nothing would train. A few hundred steps of next-token training on answers written the way
the verifier reads them (`\\boxed{...}`) give it a non-trivial, far-from-perfect accuracy. Loss on answer tokens
only; the prompts go through the same chat template as generation.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import torch
from tqdm import tqdm

from .state import export_hf


def sft_examples(tokenizer, items: list[dict]) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer ids) per item: the chat-templated prompt and '\\boxed{answer}' + end of turn."""
    examples = []
    eos = tokenizer.eos_token or ""
    for item in items:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": item["prompt"]}], tokenize=False, add_generation_prompt=True
        )
        prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
        answer = tokenizer(f"\\boxed{{{item['answer']}}}{eos}", add_special_tokens=False)["input_ids"]
        examples.append((prompt, answer))
    return examples


def _sft_batch(batch: list[tuple[list[int], list[int]]], pad: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input ids, attention mask, labels) of `batch`, padded on the right; labels on the answer tokens only."""
    width = max(len(p) + len(a) for p, a in batch)
    ids = torch.full((len(batch), width), pad)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    labels = torch.full((len(batch), width), -100)
    for i, (p, a) in enumerate(batch):
        ids[i, : len(p) + len(a)] = torch.tensor(p + a)
        mask[i, : len(p) + len(a)] = 1
        labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
    return ids, mask, labels


def warm_start(
    model_dir: Path,
    items: list[dict],
    out_dir: Path,
    steps: int,
    lr: float,
    batch_size: int,
    seed: int,
    threads: int = 1,
    progress: bool = True,
) -> dict:
    """Train a copy of `model_dir` on `items` for `steps` AdamW steps; write it to `out_dir`; return a summary."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if steps < 1 or not items:
        raise ValueError(f"a warm start needs at least one step and one item (steps={steps}, items={len(items)})")
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).train()
    examples = sft_examples(tokenizer, items)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad = tokenizer.pad_token_id or 0
    losses = []
    for _ in tqdm(range(steps), desc="warm start", unit="step", disable=not progress):
        ids, mask, labels = _sft_batch(rng.sample(examples, min(batch_size, len(examples))), pad)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    summary = {
        "source": str(model_dir),
        "items": len(items),
        "steps": steps,
        "lr": lr,
        "batch_size": batch_size,
        "seed": seed,
        "loss_first": losses[0],
        "loss_last": losses[-1],
    }

    def describe(folder: Path) -> None:
        from brorl.models.check import MANIFEST_NAME, write_manifest

        (folder / "warm_start.json").write_text(json.dumps(summary, indent=2))
        built = model_dir / MANIFEST_NAME  # carry the build facts forward (shape, context length, seed)
        build = json.loads(built.read_text()).get("build") if built.is_file() else None
        write_manifest(folder, {"source": "warm_start", "build": build, "warm_start": summary})  # sha256 of every file

    export_hf(model, model_dir, out_dir, before_publish=describe)
    return summary
