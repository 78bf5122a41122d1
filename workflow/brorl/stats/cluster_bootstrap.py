"""A cluster bootstrap of a pooled mean difference (pure numpy): resample whole clusters (tasks), not units.

The headline test pools problems across benchmarks, and most of them are Reasoning Gym problems of some hundred tasks:
problems of one task share a generator and move together, so an interval that resamples problems treats them as
independent and is too narrow if tasks differ. Resampling tasks keeps each task's problems together. Neither covers
training variance: each arm is one training run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClusterCI:
    estimate: float  # the pooled mean difference over every unit
    low: float
    high: float
    clusters: int
    resamples: int


def cluster_bootstrap_ci(
    differences, clusters, level: float = 0.95, resamples: int = 10_000, *, rng: np.random.Generator
) -> ClusterCI:
    """Percentile CI of the pooled mean of ``differences`` when whole ``clusters`` (labels, one per unit) are drawn
    with replacement: each resample's mean is its drawn clusters' sum over their unit count."""
    d = np.asarray(differences, dtype=np.float64)
    labels, index = np.unique(np.asarray(clusters), return_inverse=True)
    if d.ndim != 1 or len(d) != len(index) or not len(d):
        raise ValueError("differences and clusters must be 1-D, non-empty and of one length")
    sums = np.bincount(index, weights=d, minlength=len(labels))
    counts = np.bincount(index, minlength=len(labels)).astype(np.float64)
    k = len(labels)
    draws = rng.multinomial(k, np.full(k, 1.0 / k), size=resamples)  # how often each cluster is drawn
    means = (draws @ sums) / (draws @ counts)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return ClusterCI(float(d.mean()), float(low), float(high), k, resamples)
