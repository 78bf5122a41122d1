"""Command line of the evaluation stage: ``python -m brorl.evaluation {score,summarize,collect,track}``.

Generation is ``python -m brorl.generation generate``; these commands read its samples and never import it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import run_command


def _cmd_score(a: argparse.Namespace) -> None:
    from ..cli import writable_problem
    from .score import (
        SAMPLE_COLUMNS,
        EvaluationError,
        load_items,
        read_table,
        score_samples,
        template_opened_reasoning,
        write_scores,
    )

    if writable_problem(a.out):  # before any sample is scored: the work would be lost
        raise EvaluationError(writable_problem(a.out))
    items = load_items(a.benchmark, a.max_items)
    if any(item.get("scorer") == "code" for item in items):  # refuse before any model-written program runs
        from ..scoring.sandbox import isolation_mode, isolation_problem

        problem = isolation_problem(isolation_mode(), a.allow_unsandboxed, "evaluation.allow_unsandboxed_code")
        if problem:
            raise EvaluationError(problem)
    samples = read_table(a.samples, SAMPLE_COLUMNS, "samples")
    reasoning_opened = template_opened_reasoning(a.samples)
    print(
        f"scoring {len(samples)} samples of {len(items)} items of {a.benchmark} with {a.workers} workers",
        file=sys.stderr,
    )
    if reasoning_opened:
        print("the chat template opened <think>: responses are scored with that tag", file=sys.stderr)
    scores = score_samples(
        items,
        samples,
        workers=a.workers,
        timeout_s=a.timeout_s,
        progress=True,
        n=a.n,
        where=str(a.samples),
        reasoning_opened=reasoning_opened,
        code_limits={"time_limit_s": a.code_timeout_s, "memory_mb": a.code_memory_mb},
    )
    write_scores(scores, a.out)
    errors = int(scores["error"].notna().sum())
    print(f"{len(scores)} samples scored: mean score {scores['score'].mean():.4f}, {errors} scorer error(s) -> {a.out}")


def _cmd_summarize(a: argparse.Namespace) -> None:
    from .score import load_items
    from .summary import summary_record

    items = load_items(a.benchmark, a.max_items)
    record = summary_record(items, a.samples, a.scores, a.benchmark, a.arm, a.step, n=a.n, max_items=a.max_items)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(record, indent=2) + "\n")
    ks = ", ".join(f"pass@{k} {v:.4f}" for k, v in record["pass_at_k"].items())
    print(
        f"{a.arm} step {a.step} {record['benchmark']}: {record['n_items']} items x {record['n_samples']} samples, "
        f"{ks}, truncated {record['truncation_rate']:.1%} -> {a.out}"
    )


# eval_summary.md within the printed width (the CSV keeps every column)
COLLECTED_PRINTED = {
    "arm / step": ("arm", "step"),
    "pass@2 / 4 / 8 / 16": ("pass@2", "pass@4", "pass@8", "pass@16"),
    "samples the graders split: ProRL only / math-verify only": ("ProRL only", "math-verify only"),
    "mean tokens / truncated": ("mean_response_tokens", "truncation_rate"),
    "no answer / scorer errors": ("no_answer", "scorer_errors"),
}


def _cmd_collect(a: argparse.Namespace) -> None:
    from ..reporting.tables import write_table
    from .summary import agreement_table, collect, display_agreement, display_collected

    summaries = [json.loads(Path(p).read_text()) for p in a.summaries]
    df = collect(summaries)
    title = (
        "Evaluation: pass@k per arm, step and benchmark, with family averages "
        "(pass@1 ± standard error; n = problems x samples)"
    )
    write_table(display_collected(df), a.out_md, a.out_csv, title=title, printed_groups=COLLECTED_PRINTED)
    df.to_csv(a.out_csv, index=False)  # the CSV keeps the numbers (standard errors and 95% intervals as columns)
    print(f"{len(summaries)} summaries -> {len(df)} rows -> {a.out_md}, {a.out_csv}")
    if a.agreement_md:
        agree = agreement_table(df)
        title = (
            "Math: pass@1 under the ProRL grader (DeepScaleR OR math-verify) and math-verify alone, "
            "and the samples they disagree on"
        )
        write_table(display_agreement(agree), a.agreement_md, a.agreement_csv, title=title)
        agree.to_csv(a.agreement_csv, index=False)  # fractions and counts
        print(f"{len(agree)} math rows -> {a.agreement_md}, {a.agreement_csv}")


def _cmd_track(a: argparse.Namespace) -> None:
    from ..training.tracking import Tracking, TrackingError
    from .tracking import checkpoint_of, track_checkpoint, write_marker

    summaries = [json.loads(Path(p).read_text()) for p in a.summaries]
    if checkpoint_of(summaries) != (a.arm, a.step):
        raise TrackingError(f"the summaries are of {checkpoint_of(summaries)}, not of ({a.arm!r}, {a.step})")
    record = track_checkpoint(Tracking.from_json(a.tracking), summaries, a.folder)
    record["summaries"] = [str(p) for p in a.summaries]
    write_marker(record, a.out)
    where = [w for w in ("wandb", "tensorboard") if record[w]] or ["nowhere (tracking is off)"]
    print(f"{a.arm} step {a.step}: {len(record['metrics'])} metrics -> {', '.join(where)}; marker {a.out}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m brorl.evaluation", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("score", help="samples -> one score per (item, sample) via the verifiers")
    s.add_argument("--benchmark", required=True, type=Path, help="resources/benchmarks/BENCH.jsonl")
    s.add_argument("--samples", required=True, type=Path, help="BENCH.samples.parquet of brorl.generation")
    s.add_argument("--max-items", type=int, default=None, help="the first K items were generated (as --max-items)")
    s.add_argument("--n", type=int, default=None, help="samples per item (default: the most any item has)")
    s.add_argument("--workers", type=int, default=2, help="scoring worker processes")
    s.add_argument("--timeout-s", type=float, default=None, help="hard timeout per call (default: each scorer's)")
    s.add_argument("--code-timeout-s", type=float, default=5.0, help="code: seconds for all tests of one program")
    s.add_argument("--code-memory-mb", type=int, default=2048, help="code: memory cap of each program's processes")
    s.add_argument("--out", required=True, type=Path, help="BENCH.scores.parquet")
    s.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="score code where bubblewrap cannot isolate it (config evaluation.allow_unsandboxed_code)",
    )
    s.set_defaults(func=_cmd_score)

    m = sub.add_parser("summarize", help="samples + scores -> pass@k, lengths, truncation, errors (JSON)")
    m.add_argument("--benchmark", required=True, type=Path)
    m.add_argument("--samples", required=True, type=Path)
    m.add_argument("--scores", required=True, type=Path)
    m.add_argument("--arm", required=True, help="arm name (base = the start checkpoint)")
    m.add_argument("--step", required=True, type=int, help="RL step of the checkpoint")
    m.add_argument("--max-items", type=int, default=None)
    m.add_argument("--n", type=int, default=None)
    m.add_argument("--out", required=True, type=Path, help="BENCH.summary.json")
    m.set_defaults(func=_cmd_summarize)

    c = sub.add_parser("collect", help="summaries -> one table row per (arm, step, benchmark) + family averages")
    c.add_argument("--summaries", required=True, nargs="+", type=Path)
    c.add_argument("--out-csv", required=True, type=Path)
    c.add_argument("--out-md", required=True, type=Path)
    c.add_argument("--agreement-md", type=Path, default=None, help="math-verify agreement table (markdown)")
    c.add_argument("--agreement-csv", type=Path, default=None, help="... and CSV (both or neither)")
    c.set_defaults(func=_cmd_collect)

    t = sub.add_parser("track", help="one checkpoint's summaries -> W&B and TensorBoard (config `logging`)")
    t.add_argument("--summaries", required=True, nargs="+", type=Path, help="the checkpoint's BENCH.summary.json")
    t.add_argument("--arm", required=True)
    t.add_argument("--step", required=True, type=int)
    t.add_argument("--tracking", default=None, help="config `logging` as JSON (never the W&B key: WANDB_API_KEY)")
    t.add_argument("--folder", required=True, type=Path, help="results/eval/ARM: tensorboard/, wandb/ and a lock")
    t.add_argument("--out", required=True, type=Path, help="the marker JSON: what was logged where")
    t.set_defaults(func=_cmd_track)
    return p


def main(argv: list[str] | None = None) -> None:
    """Entry point; a mismatch between samples, scores and benchmark ends with one clear line and exit status 2."""
    from ..benchmarks.records import RecordError
    from ..training.tracking import TrackingError
    from .score import EvaluationError

    parser = build_parser()
    a = parser.parse_args(argv)
    if a.command == "collect" and (a.agreement_md is None) != (a.agreement_csv is None):
        parser.error("--agreement-md and --agreement-csv go together")
    run_command(a, (EvaluationError, RecordError, TrackingError), hard_exit=True)
