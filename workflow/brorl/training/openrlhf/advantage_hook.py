"""The step's advantages, measured and (by option) put on the same scale for every estimator: installed by the job
hook (workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ppo_utils.experience_maker` is
imported, in the process that runs the PPO trainer.

OpenRLHF 0.11.2's RemoteExperienceMaker.compute_advantages_and_returns subtracts each estimator's baseline, then
normalises over the batch's response tokens only for gae, reinforce and reinforce_baseline (experience_maker.py:325):
GRPO's group_norm, rloo and dr_grpo keep their own scale. The wrapper, after OpenRLHF's method:
  * with $BRORL_ADVANTAGE_BATCH_NORM=every_estimator (training.advantage_batch_norm), applies that same
    normalisation (token-weighted mean, and std unless --algo.advantage.no_std_norm) to the other estimators, so
    that the algorithm arms differ in their baseline only;
  * appends the token-weighted root mean square of the advantages to $BRORL_ADVANTAGE_LOG_DIR/<pid>.jsonl, which
    brorl.training.openrlhf.logs puts into each step's `adv_rms`.
"""

from __future__ import annotations

import functools
import os
import time
from types import ModuleType

from ..estimators import OPENRLHF_BATCH_NORMALISED
from .logs import append_hook_entry

MODULE = "openrlhf.trainer.ppo_utils.experience_maker"
MODES = ("native", "every_estimator")


def normalise(experiences, std_norm: bool) -> None:
    """OpenRLHF's own batch normalisation (experience_maker.py:325-338), in place."""
    import torch

    advantages = torch.cat([e.advantages.flatten() for e in experiences]).float()
    masks = torch.cat([e.action_mask.flatten() for e in experiences])
    tokens = masks.sum()
    mean = (advantages * masks).sum() / tokens
    rstd = 1
    if std_norm:
        rstd = (((advantages - mean).pow(2) * masks).sum() / tokens).clamp(min=1e-8).rsqrt()
    for e in experiences:
        e.advantages = (e.advantages - mean) * rstd


def token_rms(experiences) -> float:
    """Root mean square of the advantages over every response token of the batch."""
    squares = sum(float((e.advantages.float().pow(2) * e.action_mask).sum()) for e in experiences)
    tokens = sum(float(e.action_mask.sum()) for e in experiences)
    return (squares / tokens) ** 0.5 if tokens else float("nan")


def install(module: ModuleType, mode: str, log_dir: str | None) -> None:
    """Wrap module.RemoteExperienceMaker.compute_advantages_and_returns (a plain class: the trainer actor holds it)."""
    if mode not in MODES:
        raise ValueError(f"BRORL_ADVANTAGE_BATCH_NORM must be one of {MODES}, got {mode!r}")
    cls = module.RemoteExperienceMaker
    original = cls.compute_advantages_and_returns
    if getattr(original, "brorl_advantage_hook", False):
        return

    @functools.wraps(original)
    def compute_advantages_and_returns(self, experiences, *args, **kwargs):
        experiences = original(self, experiences, *args, **kwargs)
        advantage = self.strategy.args.algo.advantage
        if mode == "every_estimator" and advantage.estimator not in OPENRLHF_BATCH_NORMALISED and experiences:
            normalise(experiences, not advantage.no_std_norm)
        if log_dir and experiences:
            append_hook_entry(log_dir, {"t": time.time(), "adv_rms": token_rms(experiences)})
        return experiences

    compute_advantages_and_returns.brorl_advantage_hook = True
    cls.compute_advantages_and_returns = compute_advantages_and_returns


def install_from_env(module: ModuleType) -> None:
    install(module, os.environ.get("BRORL_ADVANTAGE_BATCH_NORM", "native"), os.environ.get("BRORL_ADVANTAGE_LOG_DIR"))
