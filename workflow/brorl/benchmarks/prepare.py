"""Prepare one benchmark: a local file or a hub dataset at a pinned revision -> normalized JSONL + manifest.

Every source goes through ``prepare_from_file``: a hub source is first downloaded to a file (``download_hub``,
the only function that touches the network), then read exactly like a local file. So the tests, which cannot reach
the hub, run the same code path with a local file.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import os
import random
import re
import sys
from pathlib import Path

from ..hub.pins import UnpinnedRevisionError, require_pinned
from ..hub.retry import call_hub
from ..reporting.provenance import provenance, sha256_file
from .records import RECORD_VERSION, check_ids, write_records
from .registry import BenchmarkSpec, Source

REPO_ROOT = Path(__file__).resolve().parents[3]


class PrepareError(ValueError):
    """A source that cannot be turned into records; the message names the file, the row and the field."""


# ------------------------------------------------------------------------------------------------------ local files
def local_data_root() -> Path:
    """Root of local benchmark files: $BRORL_DATA_ROOT when set, else the repository's own data/benchmarks."""
    root = os.environ.get("BRORL_DATA_ROOT")
    return Path(root) if root else REPO_ROOT / "data" / "benchmarks"


def load_rows(path: Path | str) -> list[dict]:
    """Rows of a JSON list, JSONL, parquet or CSV (header row; every value a string) file, as plain Python objects."""
    path = Path(path)
    if not path.is_file():
        raise PrepareError(f"{path}: no such file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    elif path.suffix == ".csv":
        with open(path, encoding="utf-8-sig", newline="") as f:  # quoted values may span lines
            try:
                rows = [dict(r) for r in csv.DictReader(f, strict=True)]
            except csv.Error as e:
                raise PrepareError(f"{path}: malformed CSV: {e}") from e
        bad = next((i for i, r in enumerate(rows) if None in r or None in r.values()), None)
        if bad is not None:
            raise PrepareError(f"{path}: row {bad} has another number of values than the header")
    else:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            raise PrepareError(f"{path}: empty file")
        if text.lstrip().startswith("["):
            try:
                rows = json.loads(text)
            except json.JSONDecodeError as e:
                raise PrepareError(f"{path}: malformed JSON: {e.msg} at line {e.lineno}") from e
        else:
            rows = []
            for lineno, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise PrepareError(f"{path}:{lineno}: malformed JSON: {e.msg} at column {e.colno}") from e
    bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict)), None)
    if bad is not None:
        raise PrepareError(f"{path}: row {bad} is not an object")
    if not rows:
        raise PrepareError(f"{path}: no rows")
    return rows


_STEP = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def get_field(row: dict, dotted: str):
    """``row`` at a dotted path such as ``reward_model.ground_truth`` or ``prompt[-1].content``; KeyError if absent."""
    value = row
    for name, index in _STEP.findall(dotted):
        if name:
            if not isinstance(value, dict) or name not in value:
                raise KeyError(dotted)
            value = value[name]
        else:
            if not isinstance(value, list) or not -len(value) <= int(index) < len(value):
                raise KeyError(dotted)
            value = value[int(index)]
    return value


def _plain(value):
    """JSON-safe copy: NaN/inf -> None, tuples -> lists, bytes -> str."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def normalize_answer(value):
    """Math answer -> str or list of str: integral floats lose '.0' (142.0 -> "142"), strings are stripped."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not an answer: {value!r}")
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("empty answer")
        return value.strip()
    if isinstance(value, (list, tuple)) and value:
        return [normalize_answer(v) for v in value]
    raise ValueError(f"not an answer: {value!r}")


def normalize_tests(value) -> dict:
    """Code tests -> {"inputs": [...], "outputs": [...], "fn_name"?}: accepts a JSON/Python-literal string, that
    dict, or a list of {"input", "output"} pairs (DeepCoder's codeforces)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = ast.literal_eval(value)
    if isinstance(value, list):
        value = {"inputs": [t["input"] for t in value], "outputs": [t["output"] for t in value]}
    if not isinstance(value, dict) or "inputs" not in value or "outputs" not in value:
        raise ValueError("tests need 'inputs' and 'outputs'")
    tests = {"inputs": list(value["inputs"]), "outputs": list(value["outputs"])}
    if value.get("fn_name"):
        tests["fn_name"] = value["fn_name"]
    return _plain(tests)


LETTERS = "ABCDEFGHIJ"


def multiple_choice(row: dict, choices: dict, key) -> tuple[str, str, list[str]]:
    """(the options as lines "A) ...", the correct letter, the options in that order) of one row: its correct and
    incorrect options shuffled by a generator seeded with ``choices["seed"]`` and the row's id ``key``, so a row's
    letters depend on neither the other rows, their order nor the machine (str seeds hash with SHA-512)."""
    options = []
    for name in [choices["correct"], *choices["incorrect"]]:
        value = get_field(row, name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"option field {name!r} is not a non-empty string")
        options.append(value.strip())
    order = list(range(len(options)))
    random.Random(f"{choices['seed']}/{key}").shuffle(order)
    shown = [options[i] for i in order]
    lines = "\n".join(f"{LETTERS[i]}) {text}" for i, text in enumerate(shown))
    return lines, LETTERS[order.index(0)], shown


def normalize_rows(spec: BenchmarkSpec, source: Source, rows: list[dict], origin: str) -> list[dict]:
    """Registry field mapping, filter and prompt template applied to raw rows -> normalized records."""
    fields = source.fields
    kept = [r for r in rows if all(_safe_get(r, k) == v for k, v in source.filter.items())]
    records = []
    for index, row in enumerate(kept):
        where = f"{origin}: row {index}" + (f" (after filter {source.filter})" if source.filter else "")
        try:
            problem = get_field(row, fields["problem"])
            if not isinstance(problem, str) or not problem.strip():
                raise ValueError(f"field {fields['problem']!r} is not a non-empty string")
            if source.strip_suffix and problem.rstrip().endswith(source.strip_suffix.rstrip()):
                problem = problem.rstrip()[: -len(source.strip_suffix.rstrip())]
            problem = problem.strip()
            raw_id = get_field(row, fields["id"]) if "id" in fields else index
            if source.choices:
                lines, letter, shown = multiple_choice(row, source.choices, raw_id)
                problem = f"{problem}\n\n{lines}"
            rec = {
                "id": f"{spec.name}/{raw_id}",
                "benchmark": spec.name,
                "family": spec.family,
                "prompt": spec.render_prompt(problem),
                "scorer": spec.scorer,
                "metadata": {"row_index": index, "problem": problem, "registry_version": spec.version},
            }
            for key in fields.get("metadata", []):
                rec["metadata"][key] = _plain(_safe_get(row, key))
            if source.choices:
                rec["answer"] = letter
                rec["metadata"]["choices"] = shown
            if "answer" in fields:
                raw = get_field(row, fields["answer"])
                rec["answer"] = normalize_answer(raw)
                if rec["answer"] != raw:
                    rec["metadata"]["raw_answer"] = _plain(raw)
            if "tests" in fields:
                rec["tests"] = normalize_tests(get_field(row, fields["tests"]))
        except KeyError as e:
            raise PrepareError(f"{where}: missing field {e.args[0]!r}") from e
        except (ValueError, TypeError, SyntaxError) as e:
            raise PrepareError(f"{where}: {e}") from e
        records.append(rec)
    return records


def _safe_get(row, key):
    try:
        return get_field(row, key)
    except KeyError:
        return None


# ------------------------------------------------------------------------------------------------------------- hub
def download_hub(source: Source, cache_dir: Path | str | None = None, retries: int = 3) -> tuple[Path, str]:
    """Download ``source.filename`` of the hub dataset at ``source.revision`` (main when unpinned); return the
    local path and the resolved commit. HF_TOKEN comes from the environment (never an argument or a param)."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as e:  # not a dependency of the offline stages
        raise PrepareError("hub sources need the huggingface_hub package (pip install huggingface_hub)") from e
    revision = source.revision or "main"

    def download() -> str:
        return hf_hub_download(
            repo_id=source.repo_id,
            filename=source.filename,
            repo_type="dataset",
            revision=revision,
            cache_dir=cache_dir,
            token=os.environ.get("HF_TOKEN") or None,
        )

    what = f"{source.repo_id}@{revision}: {source.filename}"
    path = Path(call_hub(download, what, retries, PrepareError))
    # the hub cache keeps files under snapshots/<commit>/<filename>
    parts = path.parts
    commit = parts[parts.index("snapshots") + 1] if "snapshots" in parts else revision
    return path, commit


def check_pinned(repo_id: str, revision: str | None, config_key: str, allow_unpinned: bool) -> None:
    """Refuse (PrepareError) a hub dataset whose revision is not a commit hash unless allowed; warn when allowed."""
    try:
        warning = require_pinned(
            repo_id, revision, repo_type="dataset", config_key=config_key, allow_unpinned=allow_unpinned
        )
    except UnpinnedRevisionError as e:
        raise PrepareError(str(e)) from e
    if warning:
        print(warning, file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------- prepare
def manifest_path(out: Path | str) -> Path:
    """resources/benchmarks/NAME.jsonl -> resources/benchmarks/NAME.manifest.json"""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".jsonl") + ".manifest.json")


def source_kind(spec: BenchmarkSpec) -> str:
    """Where a benchmark is prepared from here: generated offline ("synthetic"), else the registry's local file when
    it exists under the local data root ("local"), else the hub ("hub", pinned)."""
    if spec.source("synthetic") is not None:
        return "synthetic"
    local = spec.source("local")
    if local is not None and (local_data_root() / local.path).is_file():
        return "local"
    return "hub"


def resolve_source(spec: BenchmarkSpec, source_arg: str) -> tuple[Source, str | None]:
    """Which registry source maps a given --source: ``hub`` -> the hub source; ``local`` -> the local source's
    file under the local data root; a path -> the local source's mapping (or the hub one: a downloaded copy)."""
    if source_arg == "hub":
        src = spec.source("hub")
        if src is None:
            raise PrepareError(f"{spec.path}: benchmark {spec.name!r} has no hub source")
        return src, None
    if source_arg == "local":
        src = spec.source("local")
        if src is None:
            raise PrepareError(f"{spec.path}: benchmark {spec.name!r} has no local source; use --source hub")
        return src, str(local_data_root() / src.path)
    src = spec.source("local") or spec.source("hub")
    if src is None:
        raise PrepareError(f"{spec.path}: benchmark {spec.name!r} is generated, not prepared from a file")
    return src, source_arg


def prepare_from_file(
    spec: BenchmarkSpec, source: Source, path: Path | str, out: Path | str, origin: dict | None = None
) -> dict:
    """Normalize one file with ``source``'s mapping, check the row count, write records and manifest; return it."""
    path = Path(path)
    records = normalize_rows(spec, source, load_rows(path), str(path))
    if spec.expected_rows is not None and len(records) != spec.expected_rows:
        raise PrepareError(
            f"{path}: {len(records)} rows for {spec.name!r} after filtering, expected {spec.expected_rows} "
            f"(key 'expected_rows' of {spec.path})"
        )
    check_ids(records, path)  # a duplicate is named in the source, not in the output a failure deletes
    write_records(out, records)
    source_info = {
        "kind": source.kind,
        "path": source.path,
        "repo_id": source.repo_id,
        "filename": source.filename,
        "split": source.split,
        "revision": source.revision,
        "license": source.license,
        **(origin or {}),
        "file": str(path),
    }
    return _write_manifest(spec, source_info, records, out, input_sha256=sha256_file(path))


def prepare_synthetic(spec: BenchmarkSpec, out: Path | str) -> dict:
    """A synthetic benchmark (brorl.benchmarks.synthetic): expected_rows items of its generator and seed, offline."""
    from .synthetic import VERSION, generate

    source = spec.source("synthetic")
    if source is None:
        raise PrepareError(f"{spec.path}: benchmark {spec.name!r} has no synthetic source")
    try:
        records = generate(source.generator, spec.expected_rows, source.seed, spec.name)
    except ValueError as e:
        raise PrepareError(f"{spec.path}: {e}") from e
    for rec in records:  # the registry's template, like every prepared benchmark
        rec["prompt"] = spec.render_prompt(rec["metadata"]["problem"])
        rec["metadata"]["registry_version"] = spec.version
    write_records(out, records)
    source_info = {
        "kind": "synthetic",
        "generator": f"{source.generator}@{VERSION}",
        "seed": source.seed,
        "license": source.license,
        "requested": "synthetic",
    }
    return _write_manifest(spec, source_info, records, out)


def _write_manifest(spec: BenchmarkSpec, source_info: dict, records: list, out: Path | str, **extra) -> dict:
    """The manifest beside a prepared benchmark: what was read, what was written, by which code."""
    manifest = {
        "benchmark": spec.name,
        "family": spec.family,
        "scorer": spec.scorer,
        "n_samples": spec.n_samples,
        "registry_version": spec.version,
        "registry_sha256": sha256_file(spec.path) if spec.path else None,
        "record_version": RECORD_VERSION,
        "source": source_info,
        "rows": len(records),
        "expected_rows": spec.expected_rows,
        **extra,
        "output_sha256": sha256_file(out),
        "provenance": provenance(),
    }
    manifest_path(out).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def prepare(
    spec: BenchmarkSpec,
    source_arg: str,
    out: Path | str,
    cache_dir=None,
    retries: int = 3,
    allow_unpinned: bool = False,
) -> dict:
    """``--source`` (hub | local | synthetic | a file path) -> records at ``out`` and a manifest beside it; a hub
    source must be pinned to a commit (check_pinned) unless ``allow_unpinned``."""
    if source_arg == "synthetic":
        return prepare_synthetic(spec, out)
    source, path = resolve_source(spec, source_arg)
    origin: dict = {"requested": source_arg}
    if path is None:
        check_pinned(source.repo_id, source.revision, f"the hub source's revision in {spec.path}", allow_unpinned)
        path, commit = download_hub(source, cache_dir=cache_dir, retries=retries)
        origin["resolved_revision"] = commit
    return prepare_from_file(spec, source, path, out, origin)
