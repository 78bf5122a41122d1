"""Dynamic sampling and REINFORCE++-baseline advantages (ProRLv2; OpenRLHF `reinforce_baseline`). Pure numpy.

Shapes: groups of N samples of one prompt, arrays of shape (G, N).
"""

from __future__ import annotations

import numpy as np

VAR_FLOOR = 1e-8  # OpenRLHF clamps the batch variance here before its rsqrt


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
    if rewards.ndim != 2 or rewards.shape[1] < 2:
        raise ValueError(f"rewards must have shape (groups, n >= 2), got {rewards.shape}")
    if lengths.shape != rewards.shape or (lengths < 1).any():
        raise ValueError("lengths must have the rewards' shape and be >= 1 (every response has a token)")
    centred = rewards - rewards.mean(axis=1, keepdims=True)
    weights = lengths / lengths.sum()
    mean = (centred * weights).sum()
    if not std_norm:  # OpenRLHF still removes the token-weighted mean (rstd = 1)
        return centred - mean
    var = ((centred - mean) ** 2 * weights).sum()
    return (centred - mean) / np.sqrt(max(var, VAR_FLOOR))
