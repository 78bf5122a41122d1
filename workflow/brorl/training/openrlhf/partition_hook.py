"""The micro-batch partition of OpenRLHF's trainer, timed and (by default) replaced: installed by the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) right after `openrlhf.trainer.ppo_utils.experience_maker` is
imported, in the process that runs the PPO trainer.

`experience_maker` binds `get_minimum_num_micro_batch_size` and `get_seqlen_balanced_partitions` with
`from ... import`, so the names in that module are the ones its `split_rollout_samples` calls; they are replaced
there and nowhere else (OpenRLHF's own module and the per-rank replay buffer keep theirs). With
BRORL_PARTITION=karmarkar_karp OpenRLHF's functions run unchanged and are only timed.

Every call appends one JSON line to $BRORL_PARTITION_LOG_DIR/<pid>.jsonl (t, what, method, samples, micro-batches,
seconds, balance), which brorl.training.openrlhf.logs sums into each step's `partition_s`.
"""

from __future__ import annotations

import os
import time
from types import ModuleType
from typing import Any

from .logs import append_hook_entry
from .partition import balance, balanced_partitions, first_fit_count

METHODS = ("lpt", "karmarkar_karp")  # training.cluster.partition
MODULE = "openrlhf.trainer.ppo_utils.experience_maker"


def install(module: ModuleType, method: str, log_dir: str | None) -> None:
    """Bind timed partition functions into `module` (experience_maker): ours for "lpt", OpenRLHF's otherwise."""
    if method not in METHODS:
        raise ValueError(f"BRORL_PARTITION must be one of {METHODS}, got {method!r}")

    def write(entry: dict[str, Any]) -> None:
        if log_dir:
            append_hook_entry(log_dir, entry)

    openrlhf_count = module.get_minimum_num_micro_batch_size
    openrlhf_partitions = module.get_seqlen_balanced_partitions

    def get_minimum_num_micro_batch_size(total_lengths, max_tokens_per_gpu, ring_attn_size, ds_tensor_parallel_size):
        start = time.perf_counter()
        if method == "lpt":  # the same count, found with a segment tree instead of a scan
            count = first_fit_count(total_lengths, max_tokens_per_gpu * ring_attn_size * ds_tensor_parallel_size)
        else:
            count = openrlhf_count(total_lengths, max_tokens_per_gpu, ring_attn_size, ds_tensor_parallel_size)
        seconds = time.perf_counter() - start
        write({"t": time.time(), "what": "count", "method": method, "samples": len(total_lengths), "seconds": seconds})
        return count

    def get_seqlen_balanced_partitions(seqlen_list, k_partitions, equal_size):
        start = time.perf_counter()
        if method == "lpt" and not equal_size:
            groups = balanced_partitions(seqlen_list, k_partitions)
        else:  # equal-size groups are OpenRLHF's other use (not dynamic batching): left to it
            groups = openrlhf_partitions(seqlen_list, k_partitions, equal_size)
        seconds = time.perf_counter() - start
        entry = {"t": time.time(), "what": "partition", "method": method, "samples": len(seqlen_list)}
        write({**entry, "micro_batches": k_partitions, "seconds": seconds, **balance(seqlen_list, groups)})
        return groups

    module.get_minimum_num_micro_batch_size = get_minimum_num_micro_batch_size
    module.get_seqlen_balanced_partitions = get_seqlen_balanced_partitions
    print(f"[brorl job hook pid={os.getpid()}] {MODULE}: micro-batch partition = {method} (timed)", flush=True)


def install_from_env(module: ModuleType) -> None:
    """The job hook's entry: BRORL_PARTITION (default lpt) and BRORL_PARTITION_LOG_DIR."""
    install(module, os.environ.get("BRORL_PARTITION", "lpt"), os.environ.get("BRORL_PARTITION_LOG_DIR"))
