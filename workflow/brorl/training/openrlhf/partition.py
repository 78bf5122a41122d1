"""Micro-batch partitioning of one training step's samples, for OpenRLHF 0.11.2 with dynamic batching.

OpenRLHF's trainer (`experience_maker.split_rollout_samples`) first counts micro-batches by first fit
(`get_minimum_num_micro_batch_size`), then splits the step's samples into that many micro-batches of balanced token
counts with Karmarkar-Karp (`get_seqlen_balanced_partitions`). Karmarkar-Karp keeps a k-way state per sample: time and
memory grow as samples x micro-batches, which at BroRL's 65,536 samples and ~10^4 micro-batches is most of an hour and
hundreds of GB in one Python process per step (docs/design.md#brorls-step-partition). The functions here have the
same contracts and purposes at O(n log n):

  * `balanced_partitions`: longest-processing-time greedy (each sample, longest first, into the micro-batch with the
    fewest tokens so far, kept in a heap). Same purpose as Karmarkar-Karp (balanced tokens per micro-batch), a
    different heuristic: its balance is measured against Karmarkar-Karp by `bench_partition`.
  * `first_fit_count`: the same first-fit count as OpenRLHF's, exactly (a segment tree finds the first micro-batch
    with room instead of a scan), so the number of micro-batches, and with it the optimizer's view of the step, is
    unchanged.

Pure: no OpenRLHF import. The job hook (workflow/scripts/openrlhf_site/sitecustomize.py) binds these in place of the
names `openrlhf.trainer.ppo_utils.experience_maker` imported.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def balanced_partitions(lengths: Sequence[int], k: int) -> list[list[int]]:
    """Indices of `lengths` in `k` non-empty groups of near-equal token sums, each group sorted (OpenRLHF's
    `get_seqlen_balanced_partitions(lengths, k, equal_size=False)` contract)."""
    if k < 1:
        raise ValueError(f"need at least one micro-batch, got k={k}")
    if len(lengths) < k:
        raise ValueError(f"number of items [{len(lengths)}] < k_partitions [{k}]")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    groups: list[list[int]] = [[] for _ in range(k)]
    # (tokens so far, items so far, group): the first k samples land one per group, so none stays empty
    heap = [(0, 0, g) for g in range(k)]
    for i in order:
        tokens, count, g = heapq.heappop(heap)
        groups[g].append(i)
        heapq.heappush(heap, (tokens + lengths[i], count + 1, g))
    return [sorted(group) for group in groups]


def first_fit_count(lengths: Sequence[int], capacity: int) -> int:
    """How many bins first fit opens for `lengths` in order, each bin holding `capacity` tokens; an item longer
    than `capacity` gets a bin of its own (as in OpenRLHF's `get_minimum_num_micro_batch_size`)."""
    n = len(lengths)
    if n == 0:
        return 0
    size = 1
    while size < n:
        size *= 2
    # a max segment tree over the room left in each bin; bins not yet opened have room -1 (never chosen)
    room = [-1] * (2 * size)
    opened = 0
    for length in lengths:
        if room[1] >= length:
            node = 1
            while node < size:  # descend to the leftmost bin with enough room
                node = 2 * node if room[2 * node] >= length else 2 * node + 1
            leaf = node
            room[leaf] -= length
        else:
            leaf = size + opened
            opened += 1
            room[leaf] = capacity - length
        leaf //= 2
        while leaf:
            room[leaf] = max(room[2 * leaf], room[2 * leaf + 1])
            leaf //= 2
    return opened


def balance(lengths: Sequence[int], groups: Sequence[Sequence[int]]) -> dict[str, float]:
    """Tokens per group: max, mean and max/mean (1.0 is perfect balance; the slowest micro-batch sets the pace)."""
    sums = [sum(lengths[i] for i in group) for group in groups]
    mean = sum(sums) / len(sums)
    return {"max_tokens": float(max(sums)), "mean_tokens": mean, "max_over_mean": max(sums) / mean}
