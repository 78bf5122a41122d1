"""``python -m brorl.analysis register-decision|decide``: the decision experiment's registration record (written once,
before any F1 or F3 job) and its verdicts (brorl.analysis.decision)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def cmd_register(a: argparse.Namespace) -> None:
    from ..training.run_folder import atomic_json
    from .decision import registration

    record = registration(json.loads(a.block), json.loads(a.planned_steps))
    atomic_json(a.out, record)
    print(f"decision thresholds registered ({record['sha256'][:12]}) -> {a.out}")


def cmd_decide(a: argparse.Namespace) -> None:
    import pandas as pd

    from ..reporting.tables import write_table
    from .decision import decide, decision_rows, read_metrics_files

    block = json.loads(a.block)
    record = json.loads(a.registration.read_text())
    units = pd.read_parquet(a.units)
    start = (a.start_arm, a.start_step)
    result = decide(units, read_metrics_files(a.metrics), block, record, start, a.gpus)
    rows = decision_rows(result, block)
    write_table(rows, a.out_md, a.out_csv, title="The decision experiment: F1 and F3 against registered thresholds")
    a.out_json.write_text(json.dumps(result, indent=2, default=str) + "\n")
    for row in rows.itertuples():
        print(f"{row.test}: {row.verdict}")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The two subcommands, bound with set_defaults(func=...) (the rerun derivation reads them)."""
    r = sub.add_parser("register-decision", help="freeze the decision block's thresholds before any result")
    r.add_argument("--block", required=True, help="the config's decision block (JSON)")
    r.add_argument("--planned-steps", required=True, help="JSON: F3 arm -> its planned continued steps")
    r.add_argument("--out", required=True, type=Path)
    r.set_defaults(func=cmd_register)
    d = sub.add_parser("decide", help="F1 and F3 against the registered thresholds -> table and JSON")
    d.add_argument("--block", required=True, help="the config's decision block now (JSON)")
    d.add_argument("--registration", required=True, type=Path)
    d.add_argument("--units", required=True, type=Path, help="results/stats/instance_scores.parquet")
    d.add_argument("--metrics", nargs="*", default=[], type=Path, help="the F3 arms' metrics.jsonl")
    d.add_argument("--start-arm", required=True)
    d.add_argument("--start-step", required=True, type=int)
    d.add_argument("--gpus", required=True, type=int, help="GPUs of a training job (rates per GPU-hour)")
    d.add_argument("--out-md", required=True, type=Path)
    d.add_argument("--out-csv", required=True, type=Path)
    d.add_argument("--out-json", required=True, type=Path)
    d.set_defaults(func=cmd_decide)
