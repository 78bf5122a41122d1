"""The embedded engine's policy update: a Hugging Face causal LM in float32 on the CPU, OpenRLHF's PolicyLoss
(Clip-Higher, token-level truncated importance sampling against the vLLM rollout logprobs) plus its k1/k2/k3 KL
to a frozen reference as a loss term, token-mean aggregation over each mini-batch, gradient clipping and AdamW.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from . import losses as openrlhf_losses
from .batch import TokenBatch


@dataclass(frozen=True)
class LossSettings:
    """The recipe's loss knobs (config `training`)."""

    clip_eps_low: float
    clip_eps_high: float
    kl_estimator: str
    kl_coef: float
    tis_threshold: float | None  # None = no importance-sampling correction
    temperature: float  # logprobs are of the rollout distribution: logits / temperature, as OpenRLHF does

    @classmethod
    def from_config(cls, training: Mapping[str, Any]) -> LossSettings:
        tis = training["truncated_importance_sampling"]
        return cls(
            training["clip_eps_low"],
            training["clip_eps_high"],
            training["kl"]["estimator"],
            training["kl"]["coef"] if training["kl"]["use_loss"] else 0.0,
            tis["threshold"] if tis["enabled"] else None,
            training["rollout_temperature"],
        )


# Parameter names exempt from weight decay, as OpenRLHF 0.11.2's DeepSpeed strategy groups them
# (get_optimizer_grouped_parameters: a case-sensitive substring match): biases and the RMSNorm/LayerNorm weights.
NO_DECAY = ("bias", "layer_norm.weight", "layernorm.weight", "norm.weight", "ln_f.weight")


def decay_groups(named: list[tuple[str, torch.nn.Parameter]], weight_decay: float) -> list[dict]:
    """AdamW parameter groups: weight decay on every trainable parameter but NO_DECAY's, which get none."""
    exempt = [any(key in name for key in NO_DECAY) for name, _ in named]
    return [
        {"params": [p for (_, p), e in zip(named, exempt) if not e and p.requires_grad], "weight_decay": weight_decay},
        {"params": [p for (_, p), e in zip(named, exempt) if e and p.requires_grad], "weight_decay": 0.0},
    ]


def load_causal_lm(model_dir: str) -> torch.nn.Module:
    """A float32 HF causal LM on the CPU (eager attention: exact and fast enough for the tiny model)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="eager")
    if model.config.tie_word_embeddings:
        raise ValueError(
            f"{model_dir}: tied word embeddings go stale in vLLM after in-place weight reloads "
            "(docs/design.md#vllm-on-a-cpu); build the model untied"
        )
    return model


class PolicyTrainer:
    """Policy, optional frozen reference and AdamW; `update` runs one RL step's mini-batches."""

    def __init__(
        self,
        policy: torch.nn.Module,
        reference: torch.nn.Module | None,
        loss: LossSettings,
        lr: float,
        betas: tuple[float, float],
        eps: float,
        weight_decay: float,
        grad_clip: float,
        micro_batch_size: int,
    ) -> None:
        self.fns = openrlhf_losses.load()
        self.policy = policy.train()
        self.reference = reference.eval() if reference is not None else None
        self.loss = loss
        self.grad_clip = grad_clip
        self.micro = micro_batch_size
        self.optimizer = torch.optim.AdamW(
            decay_groups(list(self.policy.named_parameters()), weight_decay), lr=lr, betas=betas, eps=eps, foreach=False
        )
        low_high = (0.0, loss.tis_threshold) if loss.tis_threshold is not None else (0.5, 5.0)
        # TIS (Yao et al. 2025): weight each token by min(pi_train/pi_rollout, C) -> clip mode, token level
        self.policy_loss = self.fns.PolicyLoss(
            clip_eps_low=loss.clip_eps_low,
            clip_eps_high=loss.clip_eps_high,
            token_level_loss=True,
            is_correction_level="token" if loss.tis_threshold is not None else "off",
            is_correction_mode="clip",
            is_correction_gating="ratio",
            is_correction_threshold=low_high,
        )

    def set_lr(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def _logprobs(self, model: torch.nn.Module, batch: TokenBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T-1) logprobs of each next token under `model` at the rollout temperature, and the logits."""
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[:, :-1].float()
        logits = logits / self.loss.temperature
        return self.fns.log_probs_from_logits(logits, batch.input_ids[:, 1:]), logits

    @torch.no_grad()
    def score_logprobs(self, batch: TokenBatch, reference: bool = False) -> torch.Tensor:
        """(B, T-1) logprobs of the policy (old logprobs) or of the reference, in micro-batches, no gradient."""
        model = self.reference if reference else self.policy
        out = torch.zeros_like(batch.rollout_logprobs)
        for start in range(0, batch.input_ids.shape[0], self.micro):
            rows = list(range(start, min(start + self.micro, batch.input_ids.shape[0])))
            part = batch.select(rows)
            out[rows, : part.input_ids.shape[1] - 1] = self._logprobs(model, part)[0]
        return out

    @torch.no_grad()
    def _add_stats(
        self,
        sums: dict[str, float],
        mismatch: dict[str, float],
        part: TokenBatch,
        logits: torch.Tensor,
        clip_ratio: torch.Tensor | float,
        vllm_kl: torch.Tensor | float | None,
        is_filter_ratio: torch.Tensor | float | None,
    ) -> bool:
        """Whether PolicyLoss corrected this micro-batch (it returned a vllm_kl); adds the micro-batch's tokens, and
        its entropy, clip ratio and mismatch weighted by them, to `sums` and `mismatch`."""
        entropy = self.fns.compute_entropy(logits.detach())
        part_tokens = float(part.action_mask.sum())
        sums["entropy"] += float((entropy * part.action_mask).sum())
        sums["clip_ratio"] += float(clip_ratio) * part_tokens
        corrected = vllm_kl is not None
        if corrected:
            mismatch["vllm_kl"] += float(vllm_kl) * part_tokens
            mismatch["is_filter_ratio"] += float(is_filter_ratio) * part_tokens
        sums["tokens"] += part_tokens
        return corrected

    def update(
        self,
        batch: TokenBatch,
        old_logprobs: torch.Tensor,
        ref_logprobs: torch.Tensor | None,
        minibatches: list[list[int]],
    ) -> dict[str, float]:
        """One optimizer step per mini-batch (rows of `batch`); gradients accumulate over micro-batches so the
        loss is the token mean over the whole mini-batch. Returns means of kl, entropy, clip ratio, grad norm, and
        PolicyLoss's rollout-vs-trainer mismatch (vllm_kl, is_filter_ratio; None without the IS correction)."""
        fns = self.fns
        sums = {"kl": 0.0, "entropy": 0.0, "clip_ratio": 0.0, "grad_norm": 0.0, "tokens": 0.0}
        mismatch = {"vllm_kl": 0.0, "is_filter_ratio": 0.0}  # PolicyLoss's, token-weighted as OpenRLHF logs them
        corrected = False
        for rows in minibatches:
            n_tokens = float(batch.action_mask[rows].sum())
            self.optimizer.zero_grad(set_to_none=True)
            for start in range(0, len(rows), self.micro):
                part_rows = rows[start : start + self.micro]
                part = batch.select(part_rows)
                width = part.input_ids.shape[1] - 1
                old = old_logprobs[part_rows, :width]
                logprobs, logits = self._logprobs(self.policy, part)
                loss, clip_ratio, _, vllm_kl, is_filter_ratio = self.policy_loss(
                    logprobs,
                    old,
                    part.advantages,
                    part.action_mask,
                    rollout_log_probs=part.rollout_logprobs,
                    batch_num_tokens=n_tokens,
                )
                if ref_logprobs is not None and self.loss.kl_coef > 0:
                    kl = fns.compute_approx_kl(
                        logprobs, ref_logprobs[part_rows, :width], kl_estimator=self.loss.kl_estimator
                    )
                    loss = loss + self.loss.kl_coef * fns.aggregate_loss(
                        kl, part.action_mask, batch_num_tokens=n_tokens
                    )
                    sums["kl"] += float((kl.detach() * part.action_mask).sum())
                loss.backward()
                if self._add_stats(sums, mismatch, part, logits, clip_ratio, vllm_kl, is_filter_ratio):
                    corrected = True
            norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.grad_clip)
            sums["grad_norm"] = float(norm)  # the last update's, as OpenRLHF logs it
            self.optimizer.step()
        tokens = max(sums["tokens"], 1.0)
        return {
            "kl": sums["kl"] / tokens if ref_logprobs is not None else None,
            "entropy": sums["entropy"] / tokens,
            "clip_ratio": sums["clip_ratio"] / tokens,
            "grad_norm": sums["grad_norm"],
            **{k: v / tokens if corrected else None for k, v in mismatch.items()},
        }
