"""The fixed probe set from a prepared benchmark, chosen before any training. Pure.

first            the first K distinct problems in file order;
start_pass_rate  the first K distinct problems whose pass rate at the start checkpoint (its evaluation's samples)
                 lies within a band (0.2-0.8 by default): a problem the start already solves every time, or
                 never, cannot show a fall (or a rise) of its correct mass; MATH500's average near 92% would
                 otherwise leave most probes at the ceiling. Fewer than K qualifying problems are all taken;
                 problems the start's evaluation did not score (evaluation.max_items) are not candidates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class ProbeError(ValueError):
    """Bad probe input, named: a set too small, samples missing, a step without its start."""


def distinct_prompts(records: Sequence[dict]) -> list[dict]:
    """The records whose prompts differ, first occurrence kept, in file order: a probe measured twice under two ids
    would count twice in every share."""
    seen: set[str] = set()
    out = []
    for record in records:
        if record["prompt"] not in seen:
            seen.add(record["prompt"])
            out.append(record)
    return out


def select_probes(records: Sequence[dict], k: int, source: str) -> list[dict]:
    """The first ``k`` records whose prompts differ, in file order. ProbeError naming ``source`` when it holds fewer
    than ``k`` distinct prompts."""
    if k < 1:
        raise ProbeError(f"probe.problems must be at least 1, not {k}")
    distinct = distinct_prompts(records)
    if len(distinct) < k:
        raise ProbeError(
            f"{source} holds {len(distinct)} distinct problems ({len(records)} records); probe.problems asks for {k}: "
            "lower it or name a larger benchmark in probe.benchmark"
        )
    return distinct[:k]


def select_by_start_rate(
    records: Sequence[dict], start_rates: Mapping[str, float], k: int, band: tuple[float, float], source: str
) -> list[dict]:
    """Up to ``k`` distinct-prompt records (file order) whose start pass rate lies within ``band`` (inclusive). A
    problem the start's evaluation did not score (evaluation.max_items) has no rate and is not a candidate.
    ProbeError when none qualifies."""
    low, high = band
    if not 0.0 <= low < high <= 1.0:
        raise ProbeError(f"probe.pass_rate_band must satisfy 0 <= low < high <= 1, not {list(band)}")
    candidates = [r for r in distinct_prompts(records) if r["id"] in start_rates]
    chosen = [r for r in candidates if low <= start_rates[r["id"]] <= high][:k]
    if not chosen:
        raise ProbeError(
            f"{source}: no problem has a start pass rate within {low:g}-{high:g}: widen probe.pass_rate_band or "
            "name another probe.benchmark"
        )
    return chosen
