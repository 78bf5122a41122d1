"""Dynamic sampling and the group advantage estimators of OpenRLHF 0.11.2 (experience_maker.py): REINFORCE++-baseline
(ProRLv2's `reinforce_baseline`), GRPO's `group_norm`, `rloo` and `dr_grpo`, each a baseline function named by its row
of brorl.training.estimators. Pure numpy.

Shapes: groups of N samples of one prompt, arrays of shape (G, N).
"""

from __future__ import annotations

import numpy as np

from ..estimators import BY_NAME, EMBEDDED

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
    # OpenRLHF still removes the token-weighted mean without std_norm (rstd = 1)
    return batch_normalise(group_mean(rewards), lengths, std_norm)


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


def group_mean(rewards: np.ndarray) -> np.ndarray:
    """(G, N) each reward minus its group's mean: the baseline of reinforce_baseline (then normalised over the batch)
    and of Dr. GRPO as OpenRLHF 0.11.2 computes it (neither divided by the group std nor normalised over the batch;
    its loss is the run's loss_aggregation, unchanged)."""
    _check_groups(rewards)
    return rewards - rewards.mean(axis=1, keepdims=True)


dr_grpo = group_mean  # OpenRLHF's dr_grpo advantages are the group-mean baseline alone


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
    """(G, N) per-sample advantages of `estimator` (a name of brorl.training.estimators the embedded engine trains):
    its baseline function, then the normalisation over the batch's response tokens where OpenRLHF applies it
    (batch_norm "native") or after every estimator (batch_norm "every_estimator"); ``std_norm`` applies to it.
    Every response token carries its sample's value (gamma = 1, one reward at the end)."""
    if estimator not in EMBEDDED:
        raise ValueError(f"advantage estimator {estimator!r} is not one of {EMBEDDED}")
    row = BY_NAME[estimator]
    adv = globals()[row.embedded](rewards)
    if row.batch_normalised or batch_norm == "every_estimator":
        return batch_normalise(adv, lengths, std_norm)
    return adv
