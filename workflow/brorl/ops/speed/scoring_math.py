"""Throughput of math scoring on the real DeepScaleR golds: bare math-verify vs score_math vs score_batch.

    python -m brorl.ops.speed.scoring_math --out results/bench_math.json [--data DIR] [--limit N] [--repeats 3]

Pairs: every gold written as a model would ("<think>...</think> The answer is \\boxed{gold}") plus as many wrong
answers (another item's gold). Timed: (a) math-verify parse(gold) + parse(response) + verify in this process,
(b) score_math in this process, (c) score_math through brorl.scoring.score_batch(workers=2). Parse caches are
cleared before every repetition, so each repetition starts cold. Prints items/s (median and spread of the
repetitions) and the ratios b/a (target >= 0.8) and c/b (target >= 1.8 with 2 workers); writes a JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

MATH_FILES = ("aime", "amc", "math", "minerva", "olympiad_bench")


def default_data_dir() -> Path:
    from ...benchmarks.prepare import local_data_root

    return local_data_root() / "deepscaler"


def load_items(folder: Path) -> list[dict]:
    items = []
    for name in MATH_FILES:
        for k, row in enumerate(json.loads((folder / f"{name}.json").read_text())):
            items.append(
                {
                    "id": f"{name}/{k}",
                    "benchmark": name,
                    "family": "math",
                    "prompt": row["problem"],
                    "answer": row["answer"],
                    "scorer": "math",
                    "metadata": {},
                }
            )
    return items


def model_style(gold) -> str:
    first = gold[0] if isinstance(gold, list) else gold
    if isinstance(first, float) and first.is_integer():
        first = int(first)
    return f"<think>Let me work this out.</think> The answer is \\boxed{{{str(first).strip().replace('$', '')}}}."


def make_pairs(items: list[dict]) -> list[tuple[dict, str]]:
    """Each item with its own gold, then each item with another item's gold (one that differs from its own)."""
    from ...scoring.math import normalize_gold

    n = len(items)
    golds = [set(normalize_gold(it["answer"])) for it in items]
    pairs = [(it, model_style(it["answer"])) for it in items]
    for i, it in enumerate(items):
        j, step = (i + n // 2 + 1) % n, 1
        while (golds[i] & golds[j] or j == i) and step < n:
            j, step = (j + step) % n, step + 1
        pairs.append((it, model_style(items[j]["answer"])))
    return pairs


def _clear_caches() -> None:
    from ...scoring.math import grade

    grade._parse_gold.cache_clear()
    grade._parse_pred.cache_clear()


def bare_math_verify(pairs: list[tuple[dict, str]]) -> list[bool]:
    """(a): what a plain math-verify reward does: parse gold and response every call, then verify."""
    from math_verify import LatexExtractionConfig, parse, verify

    from ...scoring.math import normalize_gold

    config = [LatexExtractionConfig()]
    out = []
    for item, response in pairs:
        gold = parse("\\boxed{" + normalize_gold(item["answer"])[0] + "}", config)
        pred = parse(response.rsplit("</think>", 1)[-1], config)
        out.append(bool(pred) and verify(gold, pred))
    return out


def in_process(pairs: list[tuple[dict, str]]) -> list[bool]:
    """(b): score_math in this process."""
    from ...scoring.math import score_math

    return [score_math(item, response).correct for item, response in pairs]


def pooled(pairs: list[tuple[dict, str]], workers: int) -> list[bool]:
    """(c): score_math through brorl.scoring.score_batch."""
    from ...scoring import score_batch

    return [s.correct for s in score_batch(pairs, workers=workers)]


def _time(fn, pairs, repeats: int) -> dict:
    rates, correct = [], None
    for _ in range(repeats):
        _clear_caches()
        start = time.perf_counter()
        got = fn(pairs)
        rates.append(len(pairs) / (time.perf_counter() - start))
        correct = sum(got)
    med = statistics.median(rates)
    return {
        "items_per_s": med,
        "runs": rates,
        "spread": (max(rates) - min(rates)) / med if med else None,
        "accepted": correct,
        "n": len(pairs),
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="JSON report path")
    ap.add_argument("--data", type=Path, default=None, help="folder with the DeepScaleR math json files")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N items (quick runs)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)

    folder = args.data or default_data_dir()
    items = load_items(folder)[: args.limit] if args.limit else load_items(folder)
    pairs = make_pairs(items)
    # warm the imports (math_verify, sympy, antlr) so that no timing includes them
    in_process(pairs[:5])
    bare_math_verify(pairs[:5])

    results = {
        "a_bare_math_verify": _time(bare_math_verify, pairs, args.repeats),
        "b_score_math": _time(in_process, pairs, args.repeats),
        "c_score_batch": _time(lambda p: pooled(p, args.workers), pairs, args.repeats),
    }
    a, b, c = (results[k]["items_per_s"] for k in ("a_bare_math_verify", "b_score_math", "c_score_batch"))
    report = {
        "data": str(folder),
        "items": len(items),
        "pairs": len(pairs),
        "repeats": args.repeats,
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "results": results,
        "ratio_b_over_a": b / a,
        "ratio_c_over_b": c / b,
        "targets": {"ratio_b_over_a": 0.8, "ratio_c_over_b": 1.8},
        "meets_targets": {"ratio_b_over_a": b / a >= 0.8, "ratio_c_over_b": c / b >= 1.8},
    }
    for key, r in results.items():
        print(
            f"{key:20s} {r['items_per_s']:9.1f} items/s  (spread {100 * r['spread']:.1f}%, "
            f"accepted {r['accepted']}/{r['n']})"
        )
    print(f"b/a = {b / a:.2f} (target >= 0.8)   c/b = {c / b:.2f} (target >= 1.8, {args.workers} workers)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
