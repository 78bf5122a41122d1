"""Dynamic sampling and the group advantage estimators of OpenRLHF 0.11.2 (experience_maker.py): REINFORCE++-baseline
(ProRLv2's `reinforce_baseline`), GRPO's `group_norm`, `rloo` and `dr_grpo`. Pure numpy.

Shapes: groups of N samples of one prompt, arrays of shape (G, N).
"""

from __future__ import annotations

import numpy as np

from ..recipe import EMBEDDED_ESTIMATORS

VAR_FLOOR = 1e-8  # OpenRLHF clamps the batch variance here before its rsqrt
GROUP_STD_EPS = 1e-9  # group_norm divides by the group's std plus this (OpenRLHF)


def keep_groups(scores: np.ndarray, low: float, high: float) -> np.ndarray:
    """(G,) bool: keep a prompt iff low < mean of its N binary scores < high (strict; all-equal groups are dropped).

    scores: (G, N) binary correctness, as OpenRLHF's dynamic filter reads `scores`.
    """
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape (groups, n), got {scores.shape}")
    mean = scores.mean(axis=1)
    return (mean > low) & (mean < high)


def reinforce_baseline(rewards: np.ndarray, lengths: np.ndarray, std_norm: bool = True) -> np.ndarray:
    """(G, N) per-sample advantages, OpenRLHF 0.11.2's `reinforce_baseline` exactly.

    rewards: (G, N) rewards of the groups kept for the update; lengths: (G, N) response tokens of each sample.
    Each reward minus its group's mean; then, over all response TOKENS of the batch (every token of a sample
    carries the sample's value, gamma = 1), the token-weighted mean is subtracted and the result divided by the
    token-weighted std (variance floored at 1e-8), as experience_maker.py does; std_norm=False skips the division.
    """
    _check_groups(rewards)
    # OpenRLHF still removes the token-weighted mean without std_norm (rstd = 1)
    return batch_normalise(rewards - rewards.mean(axis=1, keepdims=True), lengths, std_norm)


def _check_groups(rewards: np.ndarray) -> None:
    if rewards.ndim != 2 or rewards.shape[1] < 2:
        raise ValueError(f"rewards must have shape (groups, n >= 2), got {rewards.shape}")


def group_norm(rewards: np.ndarray) -> np.ndarray:
    """(G, N) GRPO advantages as OpenRLHF computes them: (reward - group mean) / (group std + 1e-9), the std with
    Bessel's correction (torch's default); no batch normalisation follows."""
    _check_groups(rewards)
    centred = rewards - rewards.mean(axis=1, keepdims=True)
    return centred / (rewards.std(axis=1, ddof=1, keepdims=True) + GROUP_STD_EPS)


def rloo(rewards: np.ndarray) -> np.ndarray:
    """(G, N) RLOO advantages: each reward minus the mean of the other N - 1 rewards of its group (OpenRLHF)."""
    _check_groups(rewards)
    n = rewards.shape[1]
    return rewards - (rewards.sum(axis=1, keepdims=True) - rewards) / (n - 1)


def dr_grpo(rewards: np.ndarray) -> np.ndarray:
    """(G, N) Dr. GRPO advantages as OpenRLHF 0.11.2 computes them: reward minus group mean, neither divided by the
    group std nor normalised over the batch (its loss is the run's loss_aggregation, unchanged)."""
    _check_groups(rewards)
    return rewards - rewards.mean(axis=1, keepdims=True)


def batch_normalise(adv: np.ndarray, lengths: np.ndarray, std_norm: bool = True) -> np.ndarray:
    """OpenRLHF's normalisation over the batch's response tokens (experience_maker.py, after the estimators):
    minus the token-weighted mean, divided by the token-weighted std (variance floored at 1e-8) when std_norm."""
    if lengths.shape != adv.shape or (lengths < 1).any():
        raise ValueError("lengths must have the rewards' shape and be >= 1 (every response has a token)")
    weights = lengths / lengths.sum()
    mean = (adv * weights).sum()
    if not std_norm:
        return adv - mean
    var = ((adv - mean) ** 2 * weights).sum()
    return (adv - mean) / np.sqrt(max(var, VAR_FLOOR))


def token_rms(adv: np.ndarray, lengths: np.ndarray) -> float:
    """Token-weighted root mean square of per-sample advantages (each of a sample's tokens carries its value)."""
    return float(np.sqrt((adv**2 * lengths).sum() / lengths.sum()))


def advantages(
    estimator: str, rewards: np.ndarray, lengths: np.ndarray, std_norm: bool = True, batch_norm: str = "native"
) -> np.ndarray:
    """(G, N) per-sample advantages of `estimator` (an OpenRLHF name in EMBEDDED_ESTIMATORS); every response token
    carries its sample's value (gamma = 1, one reward at the end). batch_norm "native": as OpenRLHF, only
    reinforce_baseline is normalised over the batch (``std_norm`` applies to it); "every_estimator": the same
    normalisation follows every estimator's baseline (training.advantage_batch_norm)."""
    if estimator == "reinforce_baseline":
        return reinforce_baseline(rewards, lengths, std_norm)
    by_group = {"group_norm": group_norm, "rloo": rloo, "dr_grpo": dr_grpo}
    if estimator not in by_group:
        raise ValueError(f"advantage estimator {estimator!r} is not one of {EMBEDDED_ESTIMATORS}")
    adv = by_group[estimator](rewards)
    return batch_normalise(adv, lengths, std_norm) if batch_norm == "every_estimator" else adv
