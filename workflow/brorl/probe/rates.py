"""The probe's arithmetic. Pure: score frames in, pass rates and per-step shares out.

A probe's pass rate at a checkpoint is the share of its samples judged correct: an unbiased estimate of the
probability that the policy, sampling at the rollout temperature, answers it correctly (the paper's Q_pos(x) for one
prompt). Its standard error uses the Agresti-Caffo estimate p~ = (k + 1) / (n + 2), sqrt(p~ (1 - p~) / n), so that a
probe at 0/n or n/n still has a noise level. A probe "fell" (or "rose") between two checkpoints when its pass rate
moved by more than ``z`` standard errors of the difference; with z = 2 and no change at all, about 2% of the probes
fall by chance (the one-sided normal tail beyond 2).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .select import ProbeError

RATE_COLUMNS = ["arm", "step", "id", "correct", "samples", "pass_rate"]
TRAJECTORY_COLUMNS = [
    "arm",
    "step",
    "probes",
    "samples",
    "mean_pass_rate",
    "mean_se",
    "fell_since_previous",
    "fell_since_start",
    "rose_since_start",
    "worst_drop",
    "worst_drop_id",
]


def pass_rates(scores: pd.DataFrame, probe_ids: Sequence[str], samples: int, where: str) -> pd.DataFrame:
    """Correct samples, samples and pass rate of every probe (columns id, correct, samples, pass_rate, in probe
    order) from one checkpoint's scores (id, sample_idx, correct). Every probe x sample must be there exactly once:
    ProbeError naming ``where`` and what is missing or extra otherwise (nothing is dropped silently)."""
    expected = pd.MultiIndex.from_product([list(probe_ids), range(samples)], names=["id", "sample_idx"])
    got = pd.MultiIndex.from_frame(scores[["id", "sample_idx"]].astype({"id": str, "sample_idx": int}))
    if got.has_duplicates:
        raise ProbeError(f"{where}: {int(got.duplicated().sum())} probe x sample rows appear twice")
    missing, extra = expected.difference(got), got.difference(expected)
    if len(missing) or len(extra):
        raise ProbeError(
            f"{where}: expected {len(probe_ids)} probes x {samples} samples; {len(missing)} missing "
            f"(first {list(missing[:3])}), {len(extra)} not in the probe set (first {list(extra[:3])})"
        )
    correct = scores.assign(id=scores["id"].astype(str)).groupby("id")["correct"].sum().reindex(list(probe_ids))
    k = correct.to_numpy(dtype=int)
    return pd.DataFrame({"id": list(probe_ids), "correct": k, "samples": samples, "pass_rate": k / samples})


def rate_se(correct: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """Standard error of a pass rate k / n (Agresti-Caffo: never 0 at 0/n or n/n)."""
    p = (np.asarray(correct, float) + 1) / (np.asarray(samples, float) + 2)
    return np.sqrt(p * (1 - p) / np.asarray(samples, float))


def moved(before: pd.DataFrame, after: pd.DataFrame, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Per probe (the frames in the same probe order): whether its pass rate fell, and whether it rose, from
    ``before`` to ``after`` by more than ``z`` standard errors of the difference."""
    if list(before["id"]) != list(after["id"]):
        raise ProbeError("two checkpoints of the probe hold different probes: select the probe set again")
    d = after["pass_rate"].to_numpy() - before["pass_rate"].to_numpy()
    se = np.hypot(rate_se(before["correct"], before["samples"]), rate_se(after["correct"], after["samples"]))
    return d < -z * se, d > z * se


def arm_trajectory(start: pd.DataFrame, steps: Sequence[tuple[int, pd.DataFrame]], arm: str, z: float) -> pd.DataFrame:
    """One row per checkpoint of an arm (the start as step 0, then its saved steps in order): the mean pass rate over
    the probes with its sampling error (the probes are fixed, so only the samples are noise), the shares of probes
    that fell since the previous checkpoint and since the start and that rose since the start (knowledge shrinkage
    and its opposite), and the worst drop of one probe since the start (Figure 3c's measure) with that probe's id."""
    rows, previous = [], start
    for step, frame in [(0, start), *sorted(steps, key=lambda s: s[0])]:
        fell_prev, _ = moved(previous, frame, z)
        fell_start, rose_start = moved(start, frame, z)
        drop = frame["pass_rate"].to_numpy() - start["pass_rate"].to_numpy()
        worst = int(np.argmin(drop))
        se = rate_se(frame["correct"], frame["samples"])
        rows.append(
            {
                "arm": arm,
                "step": int(step),
                "probes": len(frame),
                "samples": int(frame["samples"].iloc[0]),
                "mean_pass_rate": float(frame["pass_rate"].mean()),
                "mean_se": float(np.sqrt(np.sum(se**2)) / len(frame)),
                "fell_since_previous": float(fell_prev.mean()),
                "fell_since_start": float(fell_start.mean()),
                "rose_since_start": float(rose_start.mean()),
                "worst_drop": float(drop[worst]),
                "worst_drop_id": str(frame["id"].iloc[worst]),
            }
        )
        previous = frame
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def change_labels(start: pd.DataFrame, final: pd.DataFrame, z: float) -> pd.Series:
    """Each probe's change from the start to ``final`` (indexed by id): "fell", "rose" or "within noise"."""
    fell, rose = moved(start, final, z)
    labels = np.where(fell, "fell", np.where(rose, "rose", "within noise"))
    return pd.Series(labels, index=list(final["id"]), name="change")
