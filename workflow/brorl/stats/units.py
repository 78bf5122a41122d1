"""Statistical units from scored samples, and the arm comparison the paper reports (pandas side of brorl.stats).

The unit is one problem instance: its mean score over its samples (16 per problem in the paper; binary for math
and code, continuous partial credit for Reasoning Gym). ``instance_means`` turns the sample-level table into units;
``compare_arms`` pairs two arms' units by (benchmark, id) and runs the paired one-tailed t-test pooled over every
instance (the paper's test: ">10,000" units, delta 0.0033, t 4.84, p 6.5e-7), per family and per benchmark, with
Holm's step-down correction across the groups of each level (the paper applies none; both are reported).

This module imports pandas; ``brorl.stats`` does not import it, so import ``brorl.stats.units`` explicitly.
Grouping is done on integer codes with numpy (bincount), never with a Python loop over units.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from brorl.stats.tests import grouped_paired_one_tailed, holm, paired_bootstrap_ci, paired_one_tailed

__all__ = ["compare_arms", "instance_means"]

UNIT_KEYS = ("benchmark", "id")


def _codes(series: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes (int64, >= 0) and their labels for one key column; categoricals use their own codes."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        if codes.size and codes.min() < 0:
            raise ValueError(f"column {series.name!r} has {int((codes < 0).sum())} missing value(s)")
        return codes, series.cat.categories
    codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
    missing = int((codes < 0).sum())
    if missing:
        raise ValueError(f"column {series.name!r} has {missing} missing value(s)")
    return codes.astype(np.int64), pd.Index(uniques)


def instance_means(
    scores_frame: pd.DataFrame,
    keys: Sequence[str] = UNIT_KEYS,
    *,
    score: str = "score",
    sample: str = "sample_idx",
    expected_samples: int | None = None,
    carry: Sequence[str] = ("family",),
) -> pd.DataFrame:
    """Per-instance mean scores from per-sample scores.

    scores_frame: one row per scored sample with the ``keys`` columns (default benchmark, id), ``sample`` (an
    integer sample index) and ``score``. Extra key columns (e.g. arm, checkpoint) may be added to ``keys`` to do
    many arms/checkpoints in one pass. Columns named in ``carry`` that exist (e.g. family) are copied from each
    instance's first row.

    Returns one row per instance, sorted by the keys: the key columns, ``n_samples``, ``score`` (the mean) and
    ``score_var`` (the sample variance of its scores, ddof 1; NaN for one sample).
    Raises ValueError on missing columns, NaN scores or keys, negative or duplicated sample indices within an
    instance, and (with ``expected_samples``) on any instance whose sample count differs, naming how many.
    """
    keys = list(keys)
    values = _score_values(scores_frame, keys, score, sample)
    if values.size == 0:
        return pd.DataFrame({**{k: scores_frame[k].iloc[:0] for k in keys}, "n_samples": [], score: []})

    units = _instances(scores_frame, keys)
    inst, k = units.inst, units.k
    counts = np.bincount(inst, minlength=k)
    means = np.bincount(inst, weights=values, minlength=k) / counts
    _check_samples(scores_frame, sample, inst, k)
    if expected_samples is not None:
        _check_counts(units, keys, counts, expected_samples)

    out = _unit_keys(scores_frame, keys, units)
    carried = [name for name in carry if name in scores_frame.columns and name not in keys]
    if carried:
        first = pd.Series(inst).drop_duplicates().index.to_numpy()  # first row of each instance
        firsts = np.empty(k, dtype=np.int64)
        firsts[inst[first]] = first
        for name in carried:
            out[name] = scores_frame[name].iloc[firsts].to_numpy()
    out["n_samples"] = counts.astype(np.int64)
    out[score] = means
    # the sample variance (ddof 1) of each instance's scores: the noise a rerun of the same problems would see
    squares = np.bincount(inst, weights=(values - means[inst]) ** 2, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[f"{score}_var"] = np.where(counts > 1, squares / (counts - 1), np.nan)
    return pd.DataFrame(out)


@dataclass(frozen=True)
class _Instances:
    """The instance of every row (``inst``, codes 0..k-1 in key order) and how to decode it back into key labels."""

    per_key: list[tuple[np.ndarray, pd.Index]]
    sizes: tuple[int, ...]
    inst: np.ndarray
    uniq: np.ndarray
    k: int


def _score_values(scores_frame: pd.DataFrame, keys: list[str], score: str, sample: str) -> np.ndarray:
    """The scores as float64, after checking that every needed column exists and no score is NaN."""
    need = [*keys, sample, score]
    missing_cols = [c for c in need if c not in scores_frame.columns]
    if missing_cols:
        raise ValueError(f"scores frame lacks column(s) {missing_cols}; has {list(scores_frame.columns)}")
    values = scores_frame[score].to_numpy(dtype=np.float64)
    nan = int(np.count_nonzero(np.isnan(values)))
    if nan:
        raise ValueError(f"{nan} NaN score(s) out of {values.size} samples")
    return values


def _instances(scores_frame: pd.DataFrame, keys: list[str]) -> _Instances:
    """Each row's instance: the key columns' codes combined into one integer and factorized (sorted)."""
    per_key = [_codes(scores_frame[k]) for k in keys]
    sizes = tuple(max(1, len(labels)) for _, labels in per_key)
    if float(np.prod(sizes, dtype=np.float64)) >= 2.0**62:
        raise ValueError(f"too many key combinations to encode ({sizes})")
    combined = np.ravel_multi_index(tuple(c for c, _ in per_key), sizes)
    inst, uniq = pd.factorize(combined, sort=True)
    inst = inst.astype(np.int64)
    return _Instances(per_key, sizes, inst, uniq, len(uniq))


def _check_samples(scores_frame: pd.DataFrame, sample: str, inst: np.ndarray, k: int) -> None:
    """Nothing; ValueError when sample indices are not integers, are negative or repeat within an instance."""
    s = scores_frame[sample].to_numpy()
    if not np.issubdtype(s.dtype, np.integer):
        raise ValueError(f"column {sample!r} must hold integers, got {s.dtype}")
    s = s.astype(np.int64)
    if s.min() < 0:
        raise ValueError(f"{int((s < 0).sum())} negative sample index(es) in {sample!r}")
    width = int(s.max()) + 1
    slot = inst * width + s
    if k * width <= 4 * slot.size + 1024:
        dup = np.bincount(slot, minlength=k * width) > 1
        n_dup_inst = int(np.count_nonzero(dup.reshape(k, width).any(axis=1)))
    else:
        dup_rows = pd.Series(slot).duplicated().to_numpy()
        n_dup_inst = int(np.unique(inst[dup_rows]).size)
    if n_dup_inst:
        raise ValueError(f"{n_dup_inst} instance(s) have a duplicated {sample!r} (each sample must be scored once)")


def _check_counts(units: _Instances, keys: list[str], counts: np.ndarray, expected_samples: int) -> None:
    """Nothing; ValueError naming an example instance when some instance's sample count is not ``expected_samples``."""
    bad = np.flatnonzero(counts != expected_samples)
    if bad.size:
        per_key, uniq, sizes = units.per_key, units.uniq, units.sizes
        example = {kk: per_key[j][1][c] for j, (kk, c) in enumerate(zip(keys, np.unravel_index(uniq[bad[0]], sizes)))}
        raise ValueError(
            f"{bad.size} instance(s) do not have {expected_samples} samples (e.g. {example}: {int(counts[bad[0]])})"
        )


def _unit_keys(scores_frame: pd.DataFrame, keys: list[str], units: _Instances) -> dict[str, object]:
    """The key columns of the units, one value per instance; categorical keys keep their dtype."""
    out: dict[str, object] = {}
    parts = np.unravel_index(np.asarray(units.uniq), units.sizes)
    for (name, (_, labels)), part in zip(zip(keys, units.per_key), parts):
        col = scores_frame[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[name] = pd.Categorical.from_codes(part, dtype=col.dtype)
        else:
            out[name] = labels.take(part).to_numpy()
    return out


def _pair(baseline: pd.DataFrame, treatment: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    for name, frame in (("baseline", baseline), ("treatment", treatment)):
        lack = [c for c in [*keys, value] if c not in frame.columns]
        if lack:
            raise ValueError(f"{name} units lack column(s) {lack}")
        dups = int(frame.duplicated(keys).sum())
        if dups:
            raise ValueError(f"{name} units have {dups} duplicated {keys} key(s)")
    b = baseline.copy()
    t = treatment[[*keys, value]].copy()
    for k in keys:  # merge on plain values: categoricals with different categories must still match
        if isinstance(b[k].dtype, pd.CategoricalDtype):
            b[k] = b[k].astype(object)
        if isinstance(t[k].dtype, pd.CategoricalDtype):
            t[k] = t[k].astype(object)
    merged = b.merge(t, on=keys, how="outer", suffixes=("_baseline", "_treatment"), indicator=True)
    only_b = int((merged["_merge"] == "left_only").sum())
    only_t = int((merged["_merge"] == "right_only").sum())
    if only_b or only_t:
        raise ValueError(
            f"units do not pair: {only_b} instance(s) only in baseline, {only_t} only in treatment "
            f"(a paired test needs the same instances in both arms)"
        )
    return merged.drop(columns="_merge")


def _row(level: str, group: str, stats: Mapping[str, object], alpha: float, **extra) -> dict:
    return {
        "level": level,
        "group": group,
        "n": int(stats["n"]),
        "df": int(stats["df"]),
        "baseline_mean": float(stats["baseline_mean"]),
        "treatment_mean": float(stats["treatment_mean"]),
        "delta": float(stats["delta"]),
        "sd_diff": float(stats["sd_diff"]),
        "se": float(stats["se"]),
        "t": float(stats["t"]),
        "p": float(stats["p"]),
        "effect_size": float(stats["effect_size"]),
        "alpha": alpha,
        **extra,
        "note": str(stats["note"]),
    }


def compare_arms(
    baseline_units: pd.DataFrame,
    treatment_units: pd.DataFrame,
    by: Sequence[str] | None = None,
    *,
    keys: Sequence[str] = UNIT_KEYS,
    value: str = "score",
    families: Mapping[str, str] | None = None,
    alpha: float = 0.05,
    rng: np.random.Generator | None = None,
    resamples: int = 10_000,
    level: float = 0.95,
) -> list[dict]:
    """Paired one-tailed tests (treatment > baseline) of two arms' per-instance units, as plain dict rows.

    baseline_units, treatment_units: one row per instance with the ``keys`` columns and ``value`` (e.g. the output
    of ``instance_means``); instances are paired by key, and any instance present in only one arm is an error.
    ``by``: the grouping columns to test separately besides the pooled test; None means those of
    ("family", "benchmark") available. A family column comes from ``baseline_units`` or from ``families``
    (benchmark -> family).

    Rows: first the pooled test (level "pooled", group "all"; with ``rng`` also ci_low/ci_high, the percentile
    bootstrap CI of delta with ``resamples`` resamples), then one row per group of each ``by`` level, sorted by
    group. Each row has n, df, baseline_mean, treatment_mean, delta, sd_diff, se, t, p (raw, one-tailed),
    p_holm (Holm across the groups of that level; equal to p for the single pooled test), reject (p <= alpha),
    reject_holm (p_holm <= alpha), effect_size (d_z), alpha and note.
    """
    keys = list(keys)
    merged = _pair(baseline_units, treatment_units, keys, value)
    if families is not None:
        merged["family"] = _family_column(merged, families)
    if by is None:
        by = [c for c in ("family", "benchmark") if c in merged.columns]
    by = list(by)
    for col in by:
        if col not in merged.columns:
            raise ValueError(f"cannot group by {col!r}: not a column of the units")

    b = merged[f"{value}_baseline"].to_numpy(dtype=np.float64)
    t = merged[f"{value}_treatment"].to_numpy(dtype=np.float64)
    rows = [_pooled_row(b, t, alpha, rng, resamples, level)]
    for col in by:
        rows += _group_rows(merged, col, b, t, alpha)
    return rows


def _family_column(merged: pd.DataFrame, families: Mapping[str, str]) -> pd.Series:
    """Each paired unit's family, looked up from its benchmark in ``families`` (every benchmark must have one)."""
    if "benchmark" not in merged.columns:
        raise ValueError("families maps benchmark -> family, but the units have no benchmark column")
    fam = merged["benchmark"].map(dict(families))
    unknown = merged.loc[fam.isna(), "benchmark"].unique()
    if len(unknown):
        raise ValueError(f"families has no entry for benchmark(s) {sorted(map(str, unknown))[:5]}")
    return fam


def _pooled_row(
    b: np.ndarray, t: np.ndarray, alpha: float, rng: np.random.Generator | None, resamples: int, level: float
) -> dict:
    """The pooled test's row (level "pooled", group "all"), with the bootstrap CI of delta when ``rng`` is given."""
    pooled = paired_one_tailed(b, t)
    pooled_stats = {
        **pooled.to_dict(),
        "baseline_mean": b.mean() if b.size else np.nan,
        "treatment_mean": t.mean() if t.size else np.nan,
    }
    extra: dict[str, object] = {
        "p_holm": pooled.p,
        "reject": bool(pooled.p <= alpha),
        "reject_holm": bool(pooled.p <= alpha),
    }
    if rng is not None and b.size:
        ci = paired_bootstrap_ci(b, t, level=level, resamples=resamples, rng=rng)
        extra.update(ci_low=ci.low, ci_high=ci.high, ci_level=level, ci_resamples=resamples)
    return _row("pooled", "all", pooled_stats, alpha, **extra)


def _group_rows(merged: pd.DataFrame, col: str, b: np.ndarray, t: np.ndarray, alpha: float) -> list[dict]:
    """One row per group of ``col`` (sorted by label), Holm-corrected across them; benchmark rows name their family."""
    codes, labels = pd.factorize(merged[col].astype(str), sort=True)
    res = grouped_paired_one_tailed(b, t, codes, n_groups=len(labels))
    p_holm = holm(res["p"])
    fam_of = None
    if col != "family" and "family" in merged.columns:
        first = pd.Series(codes).drop_duplicates()
        fam_of = dict(zip(first.to_numpy(), merged["family"].to_numpy()[first.index.to_numpy()]))
    rows = []
    for g, label in enumerate(labels):
        stats = {name: arr[g] for name, arr in res.items()}
        extra = {
            "p_holm": float(p_holm[g]),
            "reject": bool(stats["p"] <= alpha),
            "reject_holm": bool(p_holm[g] <= alpha),
        }
        if fam_of is not None:
            extra["family"] = str(fam_of[g])
        rows.append(_row(col, str(label), stats, alpha, **extra))
    return rows
