"""The RL prompt mix (config ``train_data``) -> resources/train/<name>.jsonl + manifest, in the benchmark record
schema (the family selects the reward function).

Offline sources: ``synthetic:<generator>`` (brorl.benchmarks.synthetic) and ``reasoning_gym`` (all tasks of the 11
categories, items spread evenly, seeds disjoint from the evaluation seed). Hub sources download one file at the
pinned revision (``download_hub``; a revision that is not a commit hash is refused before anything starts unless
``allow_unpinned``) and map it with HUB_FIELDS; a dataset without a mapping stops with a clear error.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from .prepare import PrepareError, check_pinned, download_hub, load_rows, manifest_path, normalize_rows, sha256_file
from .records import RECORD_VERSION, write_records
from .registry import MATH_SUFFIX, BenchmarkSpec, Source

# generation seeds of training items are offset so they never equal the evaluation seed (our choice)
RG_TRAIN_SEED_OFFSET = 1_000_003
# hub datasets of the paper's mix with a known layout: file, field mapping, prompt template [ASSUMED file names]
HUB_FIELDS = {
    "agentica-org/DeepScaleR-Preview-Dataset": {
        "filename": "deepscaler.json",
        "fields": {"problem": "problem", "answer": "answer"},
        "template": "{problem} " + MATH_SUFFIX,
        "filter": {},
    },
    "PRIME-RL/Eurus-2-RL-Data": {
        "filename": "train.parquet",
        "fields": {"problem": "prompt[-1].content", "tests": "reward_model.ground_truth", "metadata": ["data_source"]},
        "template": "{problem}",
        "filter": {"ability": "code"},
    },
}


def _rg_records(src: dict, seed: int) -> list[dict]:
    from .registry import load_registry
    from .rg import CATEGORIES, category_tasks, generate_task

    render = load_registry()["rg_algebra"].render_prompt
    tasks = [t for c in CATEGORIES for t in category_tasks(c)]
    per_task = -(-src["items"] // len(tasks))
    records = []
    for task in tasks:
        records += generate_task(task, per_task, seed + RG_TRAIN_SEED_OFFSET, src["name"], render=render)
    return records


def _hub_records(src: dict, cache_dir=None) -> tuple[list[dict], dict]:
    layout = HUB_FIELDS.get(src["dataset"])
    if layout is None:
        raise PrepareError(
            f"train_data source {src['name']!r}: no field mapping for hub dataset {src['dataset']!r} yet "
            f"(known: {', '.join(HUB_FIELDS)}); add one to brorl.benchmarks.train.HUB_FIELDS"
        )
    source = Source(kind="hub", repo_id=src["dataset"], revision=src.get("revision"), filename=layout["filename"],
                    split=src.get("split"), fields=layout["fields"], filter=layout["filter"])  # fmt: skip
    spec = BenchmarkSpec(name=src["name"], family=src["family"], version=1, description="", sources=(source,),
                         prompt_template=layout["template"], scorer=src["family"], n_samples=1,
                         expected_rows=None)  # fmt: skip
    path, commit = download_hub(source, cache_dir=cache_dir)
    return normalize_rows(spec, source, load_rows(path), str(path)), {"resolved_revision": commit,
                                                                       "input_sha256": sha256_file(path)}


def build_mix(train_data: dict, cache_dir=None, allow_unpinned: bool = False) -> tuple[list[dict], list[dict]]:
    """Records of the mix (each source shuffled and cut to its items, then all shuffled and capped) + per-source facts."""
    from .synthetic import generate

    seed, mix, facts = train_data.get("seed", 0), [], []
    for src in train_data["sources"]:  # every hub source is checked before anything is downloaded or generated
        if src["dataset"] != "reasoning_gym" and not src["dataset"].startswith("synthetic:"):
            check_pinned(src["dataset"], src.get("revision"), f"train_data.sources[{src['name']}].revision",
                         allow_unpinned)  # fmt: skip
    for src in train_data["sources"]:
        print(f"train source {src['name']}: {src['items']} items of {src['dataset']}", file=sys.stderr)
        extra: dict = {}
        if src["dataset"].startswith("synthetic:"):
            records = generate(src["dataset"].split(":", 1)[1], src["items"], seed, src["name"])
        elif src["dataset"] == "reasoning_gym":
            records = _rg_records(src, seed)
        else:
            records, extra = _hub_records(src, cache_dir)
        for rec in records:
            rec["family"] = src["family"] if src["family"] in ("math", "code", "reasoning_gym") else rec["family"]
            rec["metadata"]["source"] = src["name"]
        random.Random(f"{seed}:{src['name']}").shuffle(records)
        records = records[: src["items"]]
        mix += records
        facts.append({**src, "rows": len(records), **extra})
    random.Random(seed).shuffle(mix)
    if train_data.get("max_prompts"):
        mix = mix[: train_data["max_prompts"]]
    return mix, facts


def prepare_train_data(train_data: dict, out: Path | str, cache_dir=None, allow_unpinned: bool = False) -> dict:
    """Write the mix to ``out`` and a manifest beside it; return the manifest."""
    from ..provenance import provenance

    mix, facts = build_mix(train_data, cache_dir, allow_unpinned)
    write_records(out, mix)
    manifest = {
        "name": train_data.get("name"),
        "record_version": RECORD_VERSION,
        "train_data": train_data,
        "sources": facts,
        "rows": len(mix),
        "output_sha256": sha256_file(out),
        "provenance": provenance(),
    }
    manifest_path(out).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
