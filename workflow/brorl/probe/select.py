"""The fixed probe set: the first K distinct problems of a prepared benchmark. Pure."""

from __future__ import annotations

from collections.abc import Sequence


class ProbeError(ValueError):
    """Bad probe input, named: a set too small, samples missing, a step without its start."""


def select_probes(records: Sequence[dict], k: int, source: str) -> list[dict]:
    """The first ``k`` records whose prompts differ, in file order: a probe measured twice under two ids would count
    twice in every share. ProbeError naming ``source`` when it holds fewer than ``k`` distinct prompts."""
    if k < 1:
        raise ProbeError(f"probe.problems must be at least 1, not {k}")
    chosen: list[dict] = []
    seen: set[str] = set()
    for record in records:
        if record["prompt"] not in seen:
            seen.add(record["prompt"])
            chosen.append(record)
            if len(chosen) == k:
                return chosen
    raise ProbeError(
        f"{source} holds {len(seen)} distinct problems ({len(records)} records); probe.problems asks for {k}: "
        "lower it or name a larger benchmark in probe.benchmark"
    )
