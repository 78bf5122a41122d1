"""Dynamic sampling refilled in waves: installed by the job hook (workflow/scripts/openrlhf_site/sitecustomize.py)
right after `openrlhf.trainer.ppo_utils.samples_generator` is imported, in the process that runs the PPO trainer.

OpenRLHF 0.11.2's `SamplesGenerator._generate_vllm` (samples_generator.py:146-191) dispatches the step's prompts,
then, each time a group is dropped by dynamic sampling, draws exactly ONE replacement (`_collect_prompt_batch(
dataloader_iter, 1)`, l.181) and dispatches it: every dropped prompt starts a serial chain, and the step waits on
the longest (about 13 dependent group generations at 512 prompts and a keep rate of 0.41). This replacement runs
training calls (those with dynamic filtering) through `run_waves`, in the mode of $BRORL_REFILL
(brorl.training.refill: `rounds`, one refill wave sized at the keep rate after each wave, or `serial`, OpenRLHF's
one-for-one replacement), both cut at $BRORL_REFILL_MAX_ROUNDS waves. The same filter as OpenRLHF's (l.166-175),
the same dispatch and processing methods (so the tokenizer hook still applies), the same return value; kept groups
beyond the step's prompts are dropped, never buffered for the next step, and their prompts count as consumed.
Evaluation calls (no filtering) run OpenRLHF's own code. Each training call appends its waves to
$BRORL_REFILL_LOG_DIR/<pid>.jsonl (brorl.training.openrlhf.logs reads them into the metrics' `waves`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..refill import REFILL_MODES, Wave, refill_draw, shortfall_reason
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ppo_utils.samples_generator"
MODE_ENV, ROUNDS_ENV, LOG_ENV = "BRORL_REFILL", "BRORL_REFILL_MAX_ROUNDS", "BRORL_REFILL_LOG_DIR"


@dataclass
class StepWaves:
    """One training call's state: its waves, the refs in flight (ref -> wave index) and the groups kept."""

    target: int
    start: float = field(default_factory=time.time)
    waves: list[Wave] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)  # each wave's last group, unix seconds
    pending: dict = field(default_factory=dict)
    groups: list[list] = field(default_factory=list)
    consumed: int = 0
    exhausted: bool = False

    def dispatch(self, generator, source, count: int, depth: int, kwargs: dict) -> None:
        """Draw up to `count` prompts and send them to the engines as wave `depth`."""
        if self.exhausted or count <= 0:
            return
        prompts, labels, images, self.exhausted = source(count)
        if not prompts:
            return
        if depth == len(self.waves):
            self.waves.append(Wave(0))
            self.ends.append(self.start)
        self.waves[depth].prompts += len(prompts)
        self.consumed += len(prompts)
        for ref in generator._dispatch_prompts_to_vllm(prompts, labels, images=images, **kwargs):
            self.pending[ref] = depth

    def arrived(self, depth: int, group: list, kept: bool) -> None:
        """A group of wave `depth` came back; the wave ends with its last group."""
        self.ends[depth] = max(self.ends[depth], time.time())
        if kept:
            self.waves[depth].kept += 1
            self.groups.append(group)

    def records(self) -> list[dict[str, Any]]:
        """Each wave with its seconds: from the previous wave's last group (the first: from the dispatch)."""
        previous = self.start
        for wave, end in zip(self.waves, self.ends):
            wave.seconds, previous = max(end - previous, 0.0), max(end, previous)
        return [wave.record() for wave in self.waves]


def kept_by_filter(generator, experiences: list) -> bool:
    """OpenRLHF's dynamic filter (samples_generator.py:166-175): keep iff low < mean score < high."""
    if not experiences or not all(e.scores is not None for e in experiences):
        return bool(experiences)
    scores = [e.scores[0].item() for e in experiences]
    low, high = generator.args.algo.dynamic_filtering_range
    return low < sum(scores) / len(scores) < high


def run_waves(generator, module, ray, dataloader_iter, num_prompts: int, mode: str, max_rounds: int, kwargs: dict):
    """The step's waves in `mode`; returns (kept experiences, prompts consumed, exhausted, StepWaves)."""
    state = StepWaves(num_prompts)
    source = lambda count: module._collect_prompt_batch(dataloader_iter, count)  # noqa: E731
    state.dispatch(generator, source, num_prompts, 0, kwargs)
    while state.pending:
        ready, _ = ray.wait(list(state.pending), num_returns=1, timeout=10.0)
        for ref in ready:
            depth = state.pending.pop(ref)
            group = [generator._process_response_into_experience(r, **kwargs) for r in ray.get(ref)]
            kept = kept_by_filter(generator, group)
            state.arrived(depth, group, kept)
            if not kept and mode == "serial" and depth + 1 < max_rounds:
                state.dispatch(generator, source, 1, depth + 1, kwargs)
        if mode == "rounds" and not state.pending and len(state.waves) < max_rounds:
            kept = len(state.groups)
            draw = refill_draw(num_prompts - kept, kept, state.consumed, num_prompts, mode)
            state.dispatch(generator, source, draw, len(state.waves), kwargs)
    experiences = [e for group in state.groups[:num_prompts] for e in group]
    return experiences, state.consumed, state.exhausted, state


def log_step(state: StepWaves, mode: str, max_rounds: int, log_dir: str | None) -> None:
    """The call's waves to the hook log; a step short of its prompts says why (metrics record it too)."""
    kept = min(len(state.groups), state.target)
    short = shortfall_reason(kept, state.target, len(state.waves), max_rounds, state.exhausted)
    if short:
        print(f"[brorl job hook] dynamic sampling: a step trains on {kept} of {state.target} prompts: {short}")
    if log_dir:
        entry = {"t": time.time(), "refill": mode, "target": state.target, "kept": kept, "short": short}
        append_hook_entry(log_dir, {**entry, "consumed": state.consumed, "waves": state.records()})


def install(module: ModuleType, mode: str, max_rounds: int, log_dir: str | None, ray: Any = None) -> None:
    """Replace SamplesGenerator._generate_vllm for calls with dynamic filtering (once per process)."""
    if mode not in REFILL_MODES:
        raise ValueError(f"{MODE_ENV} must be one of {REFILL_MODES}, got {mode!r}")
    if max_rounds < 1:
        raise ValueError(f"{ROUNDS_ENV} must be at least 1, got {max_rounds}")
    generator = module.SamplesGenerator
    original = generator._generate_vllm
    if getattr(original, "brorl_refill_hook", False):
        return

    def generate_in_waves(self, dataloader_iter, num_prompts: int, dynamic_filtering, **generate_kwargs):
        if not dynamic_filtering:
            return original(self, dataloader_iter, num_prompts, dynamic_filtering, **generate_kwargs)
        api = ray or module.ray
        experiences, consumed, exhausted, state = run_waves(
            self, module, api, dataloader_iter, num_prompts, mode, max_rounds, generate_kwargs
        )
        log_step(state, mode, max_rounds, log_dir)
        return experiences, consumed, exhausted

    generate_in_waves.brorl_refill_hook = True
    generate_in_waves.__wrapped__ = original
    generator._generate_vllm = generate_in_waves
    print(f"[brorl job hook pid={os.getpid()}] {MODULE}: dynamic sampling refills in {mode} mode", flush=True)


def install_from_env(module: ModuleType) -> None:
    """The job hook's entry: $BRORL_REFILL, $BRORL_REFILL_MAX_ROUNDS, $BRORL_REFILL_LOG_DIR."""
    install(module, os.environ[MODE_ENV], int(os.environ.get(ROUNDS_ENV, "8")), os.environ.get(LOG_ENV))
