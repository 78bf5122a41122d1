"""Command line of the data stage: ``python -m brorl.benchmarks {list,prepare,generate-reasoning-gym,prepare-train-data}``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import run_command


def _cmd_list(a: argparse.Namespace) -> None:
    from .registry import load_registry

    for name, spec in load_registry(a.registry).items():
        kinds = ",".join(s.kind for s in spec.sources)
        print(f"{name}\t{spec.family}\t{spec.scorer}\t{kinds}\t{spec.expected_rows}")


def _cmd_prepare(a: argparse.Namespace) -> None:
    from .prepare import prepare

    spec = _spec(a.registry, a.name)
    manifest = prepare(spec, a.source, a.out, cache_dir=a.cache_dir, retries=a.retries, allow_unpinned=a.allow_unpinned)
    origin = manifest["source"].get("file") or manifest["source"].get("generator")
    print(f"{a.name}: {manifest['rows']} records from {origin} -> {a.out}")


def _cmd_generate_rg(a: argparse.Namespace) -> None:
    from ..reporting.provenance import provenance
    from ..scoring.reasoning_gym import audit
    from .prepare import manifest_path, sha256_file
    from .records import RECORD_VERSION, write_records
    from .rg import generate_category

    spec = _spec(a.registry, f"rg_{a.category}")
    records, facts = generate_category(a.category, a.items_per_task, a.seed, spec)
    if a.version and facts["reasoning_gym_version"] != a.version:
        sys.exit(f"reasoning-gym {facts['reasoning_gym_version']} is installed but the config pins {a.version}")
    scorer_audit = audit(records)  # the scoring side scores the golds: imports run scoring -> benchmarks
    write_records(a.out, records)
    manifest = {
        "benchmark": spec.name,
        "family": spec.family,
        "scorer": spec.scorer,
        "n_samples": spec.n_samples,
        "registry_version": spec.version,
        "record_version": RECORD_VERSION,
        "rows": len(records),
        **facts,
        "scorer_audit": scorer_audit,
        "output_sha256": sha256_file(a.out),
        "provenance": provenance(),
    }
    manifest_path(a.out).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    unsound = scorer_audit["unsound"]
    print(
        f"{spec.name}: {len(records)} records of {len(facts['tasks'])} tasks -> {a.out}; unsound scorers: "
        f"{', '.join(unsound) or 'none'}"
    )


def _cmd_prepare_train(a: argparse.Namespace) -> None:
    from .train import prepare_train_data

    train_data = json.loads(a.spec)
    manifest = prepare_train_data(train_data, a.out, cache_dir=a.cache_dir, allow_unpinned=a.allow_unpinned)
    print(f"train mix {manifest['name']}: {manifest['rows']} records -> {a.out}")


def _spec(registry, name):
    from .registry import load_registry

    specs = load_registry(registry)
    if name not in specs:
        sys.exit(f"unknown benchmark {name!r} (registry {registry}: {', '.join(specs)})")
    return specs[name]


def build_parser() -> argparse.ArgumentParser:
    from .registry import REGISTRY_DIR

    p = argparse.ArgumentParser(prog="python -m brorl.benchmarks", description=__doc__)
    p.add_argument("--registry", type=Path, default=REGISTRY_DIR, help="folder of benchmark entries (*.yaml)")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="the registered benchmarks").set_defaults(func=_cmd_list)

    q = sub.add_parser("prepare", help="a local file or hub dataset -> normalized JSONL + manifest")
    q.add_argument("--name", required=True, help="benchmark name (registry entry)")
    q.add_argument(
        "--source",
        required=True,
        help="'hub' (download at the pinned revision), 'local' (the registry's local file), "
        "'synthetic' (generated offline), or a file path",
    )
    q.add_argument("--out", required=True, type=Path, help="resources/benchmarks/NAME.jsonl")
    q.add_argument("--cache-dir", default=None, help="hub download cache (default: the hub's own)")
    q.add_argument("--retries", type=int, default=3, help="download attempts")
    q.add_argument(
        "--allow-unpinned",
        action="store_true",
        help="download a branch or tag that is not a commit hash (config allow_unpinned)",
    )
    q.set_defaults(func=_cmd_prepare)

    g = sub.add_parser("generate-reasoning-gym", help="freeze one Reasoning Gym category (run with PYTHONHASHSEED=0)")
    g.add_argument("--category", required=True)
    g.add_argument("--items-per-task", type=int, default=100)
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--version", default=None, help="required reasoning-gym version (fails on another)")
    g.add_argument("--out", required=True, type=Path, help="resources/benchmarks/rg_CATEGORY.jsonl")
    g.set_defaults(func=_cmd_generate_rg)

    t = sub.add_parser("prepare-train-data", help="the RL prompt mix (config train_data as JSON) -> JSONL + manifest")
    t.add_argument("--spec", required=True, help="the train_data config section as JSON")
    t.add_argument("--out", required=True, type=Path, help="resources/train/NAME.jsonl")
    t.add_argument("--cache-dir", default=None)
    t.add_argument(
        "--allow-unpinned",
        action="store_true",
        help="download a branch or tag that is not a commit hash (config allow_unpinned)",
    )
    t.set_defaults(func=_cmd_prepare_train)
    return p


def main(argv: list[str] | None = None) -> None:
    from .prepare import PrepareError
    from .records import RecordError
    from .registry import RegistryError

    a = build_parser().parse_args(argv)
    run_command(a, (PrepareError, RecordError, RegistryError), status=1)
