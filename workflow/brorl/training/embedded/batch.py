"""Rollouts -> padded tensors for the trainer (pure torch, no model): token ids, attention mask, the mask of
response-token targets, and per-target rollout logprobs / advantages aligned to the logits' shifted positions."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class TokenBatch:
    """input_ids/attention_mask: (B, T); action_mask, rollout_logprobs, advantages: (B, T-1), aligned with
    log_probs_from_logits(logits[:, :-1], input_ids[:, 1:]) (position j predicts token j+1)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    action_mask: torch.Tensor
    rollout_logprobs: torch.Tensor
    advantages: torch.Tensor

    @property
    def num_actions(self) -> int:
        return int(self.action_mask.sum())

    def select(self, rows: list[int]) -> TokenBatch:
        """The rows `rows`, trimmed to their longest sequence."""
        index = torch.tensor(rows, dtype=torch.long)
        length = int(self.attention_mask[index].sum(dim=1).max())
        return TokenBatch(
            self.input_ids[index, :length],
            self.attention_mask[index, :length],
            self.action_mask[index, : length - 1],
            self.rollout_logprobs[index, : length - 1],
            self.advantages[index, : length - 1],
        )


def build_batch(
    prompt_ids: list[list[int]],
    response_ids: list[list[int]],
    rollout_logprobs: list[list[float]],
    advantages: list[float],
    pad_id: int,
) -> TokenBatch:
    """Right-padded batch of prompt+response sequences; every response token of sample i carries advantages[i]."""
    if not (len(prompt_ids) == len(response_ids) == len(rollout_logprobs) == len(advantages)):
        raise ValueError("prompt_ids, response_ids, rollout_logprobs and advantages must have one entry per sample")
    lengths = [len(p) + len(r) for p, r in zip(prompt_ids, response_ids)]
    rows, width = len(lengths), max(lengths)
    input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
    attention = torch.zeros((rows, width), dtype=torch.long)
    action = torch.zeros((rows, width - 1), dtype=torch.float32)
    logprobs = torch.zeros((rows, width - 1), dtype=torch.float32)
    adv = torch.zeros((rows, width - 1), dtype=torch.float32)
    for i, (p, r, lp, a) in enumerate(zip(prompt_ids, response_ids, rollout_logprobs, advantages)):
        if not r:
            raise ValueError(f"sample {i} has an empty response: vLLM always emits at least one token")
        if len(lp) != len(r):
            raise ValueError(f"sample {i}: {len(lp)} logprobs for {len(r)} response tokens")
        seq = p + r
        input_ids[i, : len(seq)] = torch.tensor(seq)
        attention[i, : len(seq)] = 1
        first, last = len(p) - 1, len(seq) - 1  # targets at positions first..last-1 are the response tokens
        action[i, first:last] = 1.0
        logprobs[i, first:last] = torch.tensor(lp, dtype=torch.float32)
        adv[i, first:last] = float(a)
    return TokenBatch(input_ids, attention, action, logprobs, adv)
