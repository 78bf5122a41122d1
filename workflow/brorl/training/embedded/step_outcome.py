"""What one step of the embedded engine generated, scored and kept (brorl.training.embedded.run)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StepOutcome:
    """What one step's generation + scoring produced (kept groups only in the arrays)."""

    groups: list = field(default_factory=list)  # list[list[Rollout]] kept
    rewards: list = field(default_factory=list)  # (G, N) rewards of kept groups
    generated_prompts: int = 0
    generated_samples: int = 0
    reward_sum: float = 0.0
    score_sum: float = 0.0
    length_sum: int = 0
    truncated: int = 0
    gen_s: float = 0.0
    reward_s: float = 0.0
    reward_errors: int = 0  # samples whose verifier failed (scored 0 without a judgement)
    reward_timeouts: int = 0  # of which: hit the hard time limit
    drawn_ids: list = field(default_factory=list)  # every generated sample's prompt id, kept groups or not
    drawn_correct: list = field(default_factory=list)  # and whether it was correct (brorl.training.step_prompts)
    waves: list = field(default_factory=list)  # list[brorl.training.refill.Wave]: the step's waves
