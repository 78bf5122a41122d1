"""The embedded engine's AdamW groups the parameters as OpenRLHF 0.11.2's DeepSpeed strategy does: weight decay on
the weights, none on biases and norm weights (compared with OpenRLHF's own get_optimizer_grouped_parameters)."""

from __future__ import annotations

import torch
from brorl.models.tiny import build_tiny_model
from brorl.training.embedded.losses import ensure_flash_attn_importable
from brorl.training.embedded.trainer import decay_groups, load_causal_lm


def test_weight_decay_groups_equal_openrlhfs(tmp_path):
    ensure_flash_attn_importable()
    from openrlhf.utils.deepspeed.deepspeed_utils import get_optimizer_grouped_parameters

    model = load_causal_lm(str(build_tiny_model(tmp_path / "tiny", num_layers=2)))
    ours = decay_groups(list(model.named_parameters()), 0.01)
    theirs = get_optimizer_grouped_parameters(model, 0.01)
    assert [g["weight_decay"] for g in ours] == [g["weight_decay"] for g in theirs] == [0.01, 0.0]
    for mine, openrlhf in zip(ours, theirs):
        assert [id(p) for p in mine["params"]] == [id(p) for p in openrlhf["params"]]
    exempt = {n for n, p in model.named_parameters() if any(p is q for q in ours[1]["params"])}
    assert any(n.endswith("q_proj.bias") for n in exempt) and "model.norm.weight" in exempt  # Qwen2 has both
    assert not any(n.endswith("q_proj.weight") for n in exempt)
    # AdamW with these groups leaves an exempt parameter's decay out of its update
    optimizer = torch.optim.AdamW(ours, lr=0.1, foreach=False)
    norm = dict(model.named_parameters())["model.norm.weight"]
    before = norm.detach().clone()
    norm.grad = torch.zeros_like(norm)
    optimizer.step()
    assert torch.equal(norm.detach(), before)
