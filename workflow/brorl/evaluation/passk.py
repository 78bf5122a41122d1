"""Unbiased pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1), vectorised.

For one problem with n samples of which c are correct, pass@k = 1 - C(n-c, k) / C(n, k): the probability that at
least one of k samples drawn without replacement from the n is correct. It is 1 when n - c < k; for k = 1 it is
c / n. Binomials overflow for large n, so the ratio is computed as the stable product

    C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)

(numpy only; shapes: ``n`` and ``c`` broadcast to (items,), the result has that shape).

Continuous scores (Reasoning Gym's partial credit in [0, 1]): ``pass_at_k_from_scores`` takes pass@1 as the mean
score (ProRL reports the mean score), and for k > 1 counts a sample as correct only when its score == 1, so that
pass@k of a partially solved problem counts only fully solved samples.
"""

from __future__ import annotations

import numpy as np

DEFAULT_KS = (1, 2, 4, 8, 16)


def pass_at_k(n, c, k: int) -> np.ndarray:
    """Unbiased pass@k per item. ``n``: samples per item, ``c``: correct samples per item (0 <= c <= n), k <= n.

    Shapes: n, c broadcast to (items,) -> (items,) float64.
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n, c = np.broadcast_arrays(n, c)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("correct counts must lie in [0, n]")
    if np.any(n < k):
        raise ValueError(f"pass@{k} needs at least {k} samples per item, got n = {int(n.min())}")
    out = np.ones(n.shape, dtype=np.float64)
    if n.size == 0:
        return out
    # prod over i in (n-c, n] of (1 - k/i); terms i <= k only occur when n - c < k, where the answer is 1.
    top = int(n.max())
    i = np.arange(1, top + 1, dtype=np.float64)  # (top,)
    in_range = (i[None, :] > (n - c)[..., None]) & (i[None, :] <= n[..., None])  # (items, top)
    factors = np.where(in_range, 1.0 - k / i[None, :], 1.0)
    ratio = np.prod(factors, axis=-1)
    out = 1.0 - ratio
    out[(n - c) < k] = 1.0
    return out


def pass_at_k_from_scores(scores: np.ndarray, k: int) -> np.ndarray:
    """pass@k per item from a score matrix (items, n) in [0, 1].

    k = 1: the mean score over samples (equals the unbiased pass@1 c/n for binary scores, and the mean partial
    credit for continuous ones). k > 1: the unbiased estimator with correct = (score == 1).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(f"scores must be a matrix (items, samples), got shape {scores.shape}")
    if k == 1:
        return scores.mean(axis=1)
    n = np.full(scores.shape[0], scores.shape[1])
    c = (scores == 1.0).sum(axis=1)
    return pass_at_k(n, c, k)


def ks_for(n: int, ks=DEFAULT_KS) -> list[int]:
    """The k of ``ks`` that n samples support (k <= n)."""
    return [k for k in ks if k <= n]
