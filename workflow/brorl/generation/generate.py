"""Generate N samples per benchmark item, in resumable shards: ``<out>.shards/shard-00003.parquet`` -> ``<out>``.

Items are split into shards of ``shard_size`` items in file order. Each finished shard is written atomically and
carries a key (model manifest hash, sampling parameters, engine settings, its item ids) in its parquet metadata;
a later call skips every shard whose key matches (resume after a kill) and regenerates missing, corrupt or stale
ones. The shards are then merged into ``<out>`` (skipped when ``<out>`` and its sidecar already come from exactly these
shards) (columns id, sample_idx, response, n_tokens, finish_reason; exactly
n rows per item) with a sidecar ``<out>.json`` (model, sampling, engine, shard seeds, provenance).

Reproducibility: shard k is generated after ``Engine.reseed(shard_seed(seed, k, first item id))`` (worker RNGs
reseeded, prefix cache cleared), so its samples depend only on (seed, k, its items, sampling parameters, model, engine
settings,
hardware): deleting one shard regenerates the same samples on the same machine and software, whatever ran before.
Across GPU counts, batch sizes or library versions samples differ (floating-point reductions), not their law.

Data parallel (cluster): ``data_parallel_size=D`` starts D engine processes, process r on GPU group r
(CUDA_VISIBLE_DEVICES), generating the shards k with k % D == r; the parent merges. The per-shard seeds make the
result independent of D.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..benchmarks.records import read_records
from ..models.check import check_model_dir, manifest_hash
from .engine import Engine, check_sampling

META_KEY = b"brorl.samples"
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("sample_idx", pa.int32()),
        ("response", pa.string()),
        ("n_tokens", pa.int32()),
        ("finish_reason", pa.string()),
    ]
)
ENGINE_KINDS = ("embedded", "cluster")


class GenerationError(RuntimeError):
    """Generation cannot proceed or its output is inconsistent; the message says what and where."""


def shard_seed(seed: int, shard: int, first_id: str) -> int:
    """A 31-bit seed derived from (seed, shard index, the shard's first item id).

    The item id (which names its benchmark) keeps benchmarks on separate random streams: with the shard index alone,
    shard k of every benchmark would reuse one stream and their samples would be correlated.
    """
    key = f"brorl-shard:{seed}:{shard}:{first_id}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def shards_dir(out_path: Path) -> Path:
    return out_path.with_name(out_path.name + ".shards")


def shard_path(out_path: Path, shard: int) -> Path:
    return shards_dir(out_path) / f"shard-{shard:05d}.parquet"


def _atomic_write_table(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    pq.write_table(table, tmp)
    tmp.replace(path)


def _atomic_write_text(text: str, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _shard_key(run_key: dict, ids: list[str], shard: int) -> str:
    ids_hash = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    return hashlib.sha256(json.dumps({**run_key, "shard": shard, "ids": ids_hash}, sort_keys=True).encode()).hexdigest()


def _shard_is_done(path: Path, key: str) -> bool:
    """True when the shard file exists, reads, and was made for exactly this key."""
    if not path.is_file():
        return False
    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta.get(META_KEY, b"{}")).get("key") == key
    except Exception:  # a corrupt or foreign file is regenerated
        return False


def _rows(ids: list[str], completions, n: int) -> pa.Table:
    cols = {name: [] for name in SCHEMA.names}
    if len(completions) != len(ids):
        raise GenerationError(f"engine returned {len(completions)} results for {len(ids)} prompts")
    for item_id, comps in zip(ids, completions):
        if len(comps) != n:
            raise GenerationError(f"item {item_id!r}: engine returned {len(comps)} samples, expected {n}")
        for idx, c in enumerate(comps):
            cols["id"].append(item_id)
            cols["sample_idx"].append(idx)
            cols["response"].append(c.text)
            cols["n_tokens"].append(c.n_tokens)
            cols["finish_reason"].append(c.finish_reason)
    return pa.table(cols, schema=SCHEMA)


def make_engine(
    engine_kind: str, model_dir: Path, max_model_len: int, seed: int, dtype: str = "auto", tensor_parallel_size: int = 1
) -> Engine:
    """The vLLM engine for ``engine_kind`` ("embedded": CPU in-process; "cluster": GPU defaults)."""
    from .engine import VllmEngine

    if engine_kind not in ENGINE_KINDS:
        raise ValueError(f"engine must be one of {', '.join(ENGINE_KINDS)}, got {engine_kind!r}")
    return VllmEngine(
        model_dir,
        max_model_len,
        seed=seed,
        dtype=dtype,
        embedded=engine_kind == "embedded",
        tensor_parallel_size=tensor_parallel_size,
    )


def _dp_workers(argv: list[str], dp: int, tp: int) -> None:
    """Run ``python -m brorl.generation generate ARGV --dp-rank r --dp-size dp`` on GPU group r, wait for all."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = visible.split(",") if visible else [str(i) for i in range(dp * tp)]
    if len(gpus) < dp * tp:
        raise GenerationError(
            f"data_parallel_size={dp} x tensor_parallel_size={tp} needs {dp * tp} GPUs, "
            f"CUDA_VISIBLE_DEVICES has {len(gpus)}"
        )
    procs = []
    for r in range(dp):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(gpus[r * tp : (r + 1) * tp])}
        cmd = [sys.executable, "-m", "brorl.generation", "generate", *argv, "--dp-rank", str(r), "--dp-size", str(dp)]
        procs.append(subprocess.Popen(cmd, env=env))
    failed = [r for r, p in enumerate(procs) if p.wait() != 0]
    if failed:
        raise GenerationError(
            f"data-parallel generation process(es) {failed} failed; finished shards are kept, rerun to resume"
        )


def generate_samples(
    model_dir,
    benchmark_path,
    out_path,
    n: int,
    temperature: float,
    top_p: float,
    max_tokens: int,
    max_model_len: int,
    seed: int,
    shard_size: int,
    engine_kind: str,
    max_items: int | None = None,
    progress: bool = True,
    *,
    dtype: str = "auto",
    data_parallel_size: int = 1,
    tensor_parallel_size: int = 1,
    engine: Engine | None = None,
    dp_rank: int | None = None,
) -> dict:
    """Generate ``n`` samples per item of ``benchmark_path`` into ``out_path`` (parquet) + ``<out>.json``.

    ``engine``: an already started engine for ``model_dir`` (reused across calls, e.g. by tests); by default one
    is started only if some shard is missing. ``dp_rank``: internal, set in data-parallel worker processes (they
    generate their shards and do not merge). Returns the sidecar metadata (``dp_rank`` set: a small summary).
    """
    model_dir, out_path = Path(model_dir), Path(out_path)
    check_sampling(n, temperature, top_p, max_tokens)
    _check_settings(shard_size, max_model_len, max_items, engine_kind)
    check_model_dir(model_dir)  # before anything heavy: a bad folder never reaches the engine
    model_hash, records = manifest_hash(model_dir), read_records(benchmark_path)[:max_items]
    sampling = {"n": int(n), "temperature": float(temperature), "top_p": float(top_p), "max_tokens": int(max_tokens)}
    engine_key = {"kind": engine_kind, "max_model_len": int(max_model_len), "seed": int(seed), "dtype": dtype}
    plan = _plan(records, shard_size, {"model": model_hash, "sampling": sampling, "engine": engine_key})
    mine = range(len(plan.shards)) if dp_rank is None else range(dp_rank, len(plan.shards), data_parallel_size)
    pending = _pending(out_path, plan.keys, mine)
    if pending and dp_rank is None and data_parallel_size > 1 and engine is None:
        flags = dict(model=model_dir, benchmark=benchmark_path, out=out_path, n=n, temperature=temperature, top_p=top_p)
        flags |= dict(max_tokens=max_tokens, max_model_len=max_model_len, seed=seed, shard_size=shard_size)
        flags |= dict(engine=engine_kind, dtype=dtype, tensor_parallel_size=tensor_parallel_size)
        _dp_workers(_worker_argv(flags, max_items, progress), data_parallel_size, tensor_parallel_size)
        pending = _pending(out_path, plan.keys, mine)
        if pending:
            raise GenerationError(f"shards {pending} are still missing after the data-parallel run")
    engine_info = None
    if pending:
        _announce(out_path, pending, mine)
        if engine is None:
            engine = make_engine(engine_kind, model_dir, max_model_len, seed, dtype, tensor_parallel_size)
        engine_info = engine.info()
        _write_shards(engine, engine_info, plan, pending, out_path, seed, n, progress)
    if dp_rank is not None:
        return {"shards": list(mine), "generated": pending}
    gpus = data_parallel_size * tensor_parallel_size
    return _finish(plan, out_path, bool(pending), engine_info, benchmark_path, model_dir, seed, gpus)


@dataclass(frozen=True)
class _Plan:
    """One call's items in file order, their shards (lists of item indices), its run key and each shard's key."""

    records: list[dict]
    ids: list[str]
    shards: list[list[int]]
    run_key: dict
    keys: list[str]


def _check_settings(shard_size: int, max_model_len: int, max_items: int | None, engine_kind: str) -> None:
    """Nothing; ValueError for a shard size, context, item limit or engine kind that cannot run."""
    if shard_size < 1 or max_model_len < 2 or (max_items is not None and max_items < 1):
        raise ValueError(
            f"need shard_size >= 1, max_model_len >= 2, max_items >= 1 or None; got {shard_size}, "
            f"{max_model_len}, {max_items}"
        )
    if engine_kind not in ENGINE_KINDS:
        raise ValueError(f"engine must be one of {', '.join(ENGINE_KINDS)}, got {engine_kind!r}")


def _plan(records: list[dict], shard_size: int, run_key: dict) -> _Plan:
    """The shards of ``records`` (``shard_size`` items each, in file order) and their keys under ``run_key``."""
    ids = [r["id"] for r in records]
    shards = [list(range(i, min(i + shard_size, len(records)))) for i in range(0, len(records), shard_size)]
    keys = [_shard_key(run_key, [ids[i] for i in s], k) for k, s in enumerate(shards)]
    return _Plan(records, ids, shards, run_key, keys)


def _pending(out_path: Path, keys: list[str], mine: range) -> list[int]:
    """The shards of ``mine`` whose file is missing, unreadable or made for another key."""
    return [k for k in mine if not _shard_is_done(shard_path(out_path, k), keys[k])]


def _worker_argv(flags: dict, max_items: int | None, progress: bool) -> list[str]:
    """A data-parallel worker's arguments: ``--name=value`` per flag in order (``_`` in a name written ``-``)."""
    argv = [f"--{name.replace('_', '-')}={value}" for name, value in flags.items()]
    argv += [f"--max-items={max_items}"] if max_items else []
    return argv + ([] if progress else ["--no-progress"])


def _announce(out_path: Path, pending: list[int], mine: range) -> None:
    """Nothing; says on stderr how many of this process's shards are to be generated."""
    print(
        f"{out_path}: {len(pending)} of {len(mine)} shard(s) to generate ({len(mine) - len(pending)} done already)",
        file=sys.stderr,
        flush=True,
    )


def _write_shards(
    engine: Engine,
    engine_info: dict,
    plan: _Plan,
    pending: list[int],
    out_path: Path,
    seed: int,
    n: int,
    progress: bool,
) -> None:
    """Nothing; generates each pending shard with its shard seed and writes it atomically (``n`` samples per item)."""
    from tqdm import tqdm

    sampling = plan.run_key["sampling"]
    for k in tqdm(pending, desc=f"generate {out_path.name}", unit="shard", disable=not progress):
        items = [plan.records[i] for i in plan.shards[k]]
        k_seed = shard_seed(seed, k, items[0]["id"])
        comps = engine.generate([r["prompt"] for r in items], seed=k_seed, **sampling)
        table = _rows([r["id"] for r in items], comps, n)
        meta = {"key": plan.keys[k], "shard": k, "shard_seed": k_seed, "engine": engine_info}
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        _atomic_write_table(table, shard_path(out_path, k))


def _finish(
    plan: _Plan,
    out_path: Path,
    pending: bool,
    engine_info: dict | None,
    benchmark_path: Path | str,
    model_dir: Path,
    seed: int,
    gpus: int,
) -> dict:
    """The sidecar metadata: read back when ``out_path`` was merged from exactly these shards, else merged now."""
    keys_hash = hashlib.sha256("".join(plan.keys).encode()).hexdigest()
    sidecar = out_path.with_name(out_path.name + ".json")
    if not pending and out_path.is_file() and sidecar.is_file():
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
            if meta.get("shards", {}).get("keys_sha256") == keys_hash:
                return meta  # merged already from exactly these shards: nothing to do
        except (OSError, json.JSONDecodeError):
            pass
    shards, keys, ids, records, run_key = plan.shards, plan.keys, plan.ids, plan.records, plan.run_key
    return _merge(
        out_path, shards, keys, ids, records, run_key, engine_info, benchmark_path, model_dir, seed, keys_hash, gpus
    )


class StartedOnFirstUse:
    """An engine that starts when first used, so that benchmarks whose shards are all done never start vLLM."""

    def __init__(self, start) -> None:
        self._start, self._engine = start, None

    def __getattr__(self, name: str):
        if self._engine is None:
            self._engine = self._start()
        return getattr(self._engine, name)


def generate_many(model_dir, jobs: list[tuple[Path, Path]], **kwargs) -> list[dict]:
    """``generate_samples`` for several (benchmark, out) pairs of one checkpoint with one engine, started once.

    Each pair gets exactly the files, shards, seeds and sidecar it would get alone (a shard's seed depends on its own
    benchmark's items, never on the order here). One engine process only: ``data_parallel_size`` must be 1.
    """
    if not jobs:
        raise ValueError("no benchmark to generate")
    outs = [Path(out) for _, out in jobs]
    if len(set(outs)) != len(outs):
        raise ValueError(f"two benchmarks would write the same file: {sorted(str(o) for o in outs)}")
    if kwargs.get("data_parallel_size", 1) != 1 and len(jobs) > 1:
        raise ValueError("several benchmarks in one process run one engine: data_parallel_size must be 1")
    if "engine" not in kwargs or kwargs["engine"] is None:
        kind, dtype, tp = kwargs["engine_kind"], kwargs.get("dtype", "auto"), kwargs.get("tensor_parallel_size", 1)
        length, seed = kwargs["max_model_len"], kwargs["seed"]
        kwargs["engine"] = StartedOnFirstUse(lambda: make_engine(kind, Path(model_dir), length, seed, dtype, tp))
    return [generate_samples(model_dir, benchmark, out, **kwargs) for benchmark, out in jobs]


def _merge(
    out_path, shards, keys, ids, records, run_key, engine_info, benchmark_path, model_dir, seed, keys_hash, gpus=1
) -> dict:
    n = run_key["sampling"]["n"]
    tables, shard_engines = [], []
    for k in range(len(shards)):
        path = shard_path(out_path, k)
        if not _shard_is_done(path, keys[k]):
            raise GenerationError(f"{path}: missing or stale shard at merge time")
        table = pq.read_table(path)
        shard_engines.append(json.loads(table.schema.metadata[META_KEY]).get("engine"))
        tables.append(table.replace_schema_metadata(None))
    table = pa.concat_tables(tables)
    expected_ids = [i for i in ids for _ in range(n)]
    if table.column("id").to_pylist() != expected_ids or table.column("sample_idx").to_pylist() != list(range(n)) * len(
        ids
    ):
        raise GenerationError(f"{out_path}: merged shards do not hold exactly {n} samples (0..{n - 1}) per item")
    reasons = table.column("finish_reason").to_pylist()
    n_tokens = table.column("n_tokens").to_pylist()
    meta = {
        "benchmark": {
            "path": str(benchmark_path),
            "items": len(ids),
            "benchmarks": sorted({r["benchmark"] for r in records}),
        },
        "model": {"path": str(model_dir), "manifest_hash": run_key["model"]},
        "sampling": run_key["sampling"],
        "engine": {**run_key["engine"], "info": engine_info or next((e for e in shard_engines if e), None)},
        # the devices this job had (engines x tensor parallel; 1 on a CPU): the plan's measured tokens/s per GPU
        # divides by it. Not part of the shards' key: a rerun on another job size reuses finished shards.
        "resources": {"gpus": int(gpus)},
        "seed": seed,
        "shards": {
            "count": len(shards),
            "size": len(shards[0]) if shards else 0,
            "seeds": [shard_seed(seed, k, ids[s[0]]) for k, s in enumerate(shards)],
            "keys_sha256": keys_hash,
        },
        "summary": {
            "rows": table.num_rows,
            "length_finished": reasons.count("length"),
            "mean_n_tokens": sum(n_tokens) / max(1, len(n_tokens)),
        },
    }
    from ..reporting.provenance import provenance

    meta["provenance"] = provenance()
    _atomic_write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), out_path)
    _atomic_write_text(json.dumps(meta, indent=2) + "\n", out_path.with_name(out_path.name + ".json"))
    return meta
