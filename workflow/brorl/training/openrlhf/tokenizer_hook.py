"""The tokenizer OpenRLHF sends with every prompt, sent once: installed by the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ppo_utils.samples_generator` is
imported, in the process that runs the PPO trainer.

OpenRLHF 0.11.2's `SamplesGenerator._dispatch_prompts_to_vllm` passes `hf_tokenizer=self.tokenizer` with each
prompt's `generate_responses.remote(...)`, so Ray pickles the whole tokenizer per prompt (a Qwen2 fast tokenizer at
the real vocabulary and merge sizes: 5.9 MiB, ~0.9 s to pickle and ~4 s to unpickle on a loaded 2-core machine,
docs/design.md#the-tokenizer-sent-with-each-prompt), ProRL ~1,250 dispatches per step against BroRL's ~210. Here
the trainer puts the tokenizer into Ray's object store once and sends a small handle instead; unpickling the handle
in a vLLM engine's process returns that process's copy, fetched from the store the first time. The engine receives
the same tokenizer object state as before; nothing else of the dispatch changes.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any

MODULE = "openrlhf.trainer.ppo_utils.samples_generator"
_CACHE: dict[str, Any] = {}
_LOCK = threading.Lock()


def _resolve(key: str, holder: list) -> Any:
    """Unpickling a handle: this process's copy of the tokenizer `key` (holder = [its ObjectRef], kept in a list so
    Ray passes the reference itself instead of resolving it as a top-level argument)."""
    with _LOCK:
        if key not in _CACHE:
            import ray

            _CACHE[key] = ray.get(holder[0])
        return _CACHE[key]


class TokenizerHandle:
    """What a dispatch pickles in place of the tokenizer: its store key and ObjectRef."""

    def __init__(self, key: str, ref: Any) -> None:
        self.key, self.ref = key, ref

    def __reduce__(self):
        return (_resolve, (self.key, [self.ref]))


def install(module: ModuleType) -> None:
    """Wrap SamplesGenerator._dispatch_prompts_to_vllm: its tokenizer goes to the object store once per generator."""
    generator = module.SamplesGenerator
    dispatch = generator._dispatch_prompts_to_vllm
    if getattr(dispatch, "brorl_tokenizer_hook", False):
        return

    def dispatch_with_handle(self, *args, **kwargs):
        import ray

        handle = getattr(self, "_brorl_tokenizer_handle", None)
        if handle is None or handle[0] is not self.tokenizer:
            key = f"{os.getpid()}-{id(self.tokenizer)}"
            handle = (self.tokenizer, TokenizerHandle(key, ray.put(self.tokenizer)))
            self._brorl_tokenizer_handle = handle
        tokenizer = self.tokenizer
        self.tokenizer = handle[1]  # read by the dispatch only, to pass along as hf_tokenizer
        try:
            return dispatch(self, *args, **kwargs)
        finally:
            self.tokenizer = tokenizer

    dispatch_with_handle.brorl_tokenizer_hook = True
    dispatch_with_handle.__wrapped__ = dispatch
    generator._dispatch_prompts_to_vllm = dispatch_with_handle
    print(f"[brorl job hook pid={os.getpid()}] {MODULE}: the tokenizer is sent once per engine process", flush=True)
