"""The normalized benchmark record (one JSON object per line) and its reader/writer.

Schema version RECORD_VERSION; every record carries it in ``schema_version``:

    id              str, unique within the file
    benchmark       str, the registry name (aime24, rg_games, ...) or the train source name
    family          "math" | "code" | "reasoning_gym" | "stem" | "instruction_following"
    prompt          str, the full prompt given to the model (template already applied)
    answer          math, stem: str or non-empty list of acceptable str; reasoning_gym: str or null (scored via
                    metadata); absent for code and instruction_following
    tests           code only: {"inputs": [...], "outputs": [...], "fn_name"?: str}
    scorer          one of the families (the verifier of brorl.scoring of that name)
    metadata        dict, free (raw fields, the Reasoning Gym entry needed by score_answer, ...);
                    instruction_following: "instruction_id_list" (IFEval ids) and "kwargs" (one dict per id)
    schema_version  int

``read_records`` and ``write_records`` check every record; a malformed line, an empty file or a missing field
raises RecordError naming the file and the line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

RECORD_VERSION = 1
FAMILIES = ("math", "code", "reasoning_gym", "stem", "instruction_following")
REQUIRED = ("id", "benchmark", "family", "prompt", "scorer", "metadata")
ALLOWED = set(REQUIRED) | {"answer", "tests", "schema_version"}


class RecordError(ValueError):
    """A malformed record or records file; the message names the file and line."""


def record_problems(rec) -> list[str]:
    """Plain-words problems of one record (empty when it is valid)."""
    if not isinstance(rec, dict):
        return [f"a record must be a JSON object, not {type(rec).__name__}"]
    problems = [f"missing field '{k}'" for k in REQUIRED if k not in rec]
    problems += [f"unknown field '{k}'" for k in sorted(set(rec) - ALLOWED)]
    if problems:
        return problems
    for key in ("id", "benchmark", "prompt"):
        if not isinstance(rec[key], str) or not rec[key]:
            problems.append(f"field '{key}' must be a non-empty string")
    if rec["family"] not in FAMILIES:
        problems.append(f"field 'family': {rec['family']!r} is not one of {', '.join(FAMILIES)}")
    if rec["scorer"] not in FAMILIES:
        problems.append(f"field 'scorer': {rec['scorer']!r} is not one of {', '.join(FAMILIES)}")
    if not isinstance(rec["metadata"], dict):
        problems.append("field 'metadata' must be an object")
    if rec.get("schema_version", RECORD_VERSION) != RECORD_VERSION:
        problems.append(f"field 'schema_version': {rec['schema_version']!r}, this code reads {RECORD_VERSION}")
    family = rec["family"]
    if family == "code":
        problems += _tests_problems(rec.get("tests"))
    elif family in ("math", "stem"):
        ans = rec.get("answer")
        ok = (isinstance(ans, str) and ans.strip()) or (
            isinstance(ans, list) and ans and all(isinstance(a, str) and a.strip() for a in ans)
        )
        if not ok:
            problems.append(f"field 'answer': a {family} record needs a non-empty string or list of strings")
    elif family == "reasoning_gym":
        if "answer" not in rec or not (rec["answer"] is None or isinstance(rec["answer"], str)):
            problems.append("field 'answer': a reasoning_gym record needs a string or null")
        if not isinstance(rec["metadata"], dict) or "task" not in rec["metadata"] or "entry" not in rec["metadata"]:
            problems.append("field 'metadata': a reasoning_gym record needs 'task' and 'entry' (for score_answer)")
    elif family == "instruction_following" and isinstance(rec["metadata"], dict):
        problems += _instructions_problems(rec["metadata"])
    return problems


def _instructions_problems(meta: dict) -> list[str]:
    ids, kwargs = meta.get("instruction_id_list"), meta.get("kwargs")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        return ["field 'metadata.instruction_id_list': an instruction_following record needs a non-empty list of ids"]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        return [f"field 'metadata.kwargs': needs one object per instruction id ({len(ids)})"]
    return []


def new_record(benchmark: str, key, family: str, prompt: str, metadata: dict, **fields) -> dict:
    """A record scored by its family's verifier, with id ``<benchmark>/<key>`` (answer/tests in ``fields``)."""
    return {
        "id": f"{benchmark}/{key}",
        "benchmark": benchmark,
        "family": family,
        "prompt": prompt,
        "scorer": family,
        "metadata": metadata,
        **fields,
    }


def _tests_problems(tests) -> list[str]:
    if not isinstance(tests, dict):
        return ["field 'tests': a code record needs {'inputs': [...], 'outputs': [...]}"]
    ins, outs = tests.get("inputs"), tests.get("outputs")
    if not isinstance(ins, list) or not isinstance(outs, list) or not ins:
        return ["field 'tests': needs non-empty lists 'inputs' and 'outputs'"]
    if len(ins) != len(outs):
        return [f"field 'tests': {len(ins)} inputs but {len(outs)} outputs"]
    if "fn_name" in tests and not isinstance(tests["fn_name"], str):
        return ["field 'tests.fn_name' must be a string"]
    return []


def check_record(rec, where: str) -> dict:
    """Return ``rec`` with schema_version filled in; RecordError (prefixed by ``where``) when it is malformed."""
    problems = record_problems(rec)
    if problems:
        raise RecordError(f"{where}: " + "; ".join(problems))
    rec.setdefault("schema_version", RECORD_VERSION)
    return rec


def check_ids(records: list[dict], path) -> None:
    """RecordError naming the line of the first id seen twice."""
    seen: dict[str, int] = {}
    for i, rec in enumerate(records, 1):
        if rec["id"] in seen:
            raise RecordError(f"{path}:{i}: duplicate id {rec['id']!r} (also on line {seen[rec['id']]})")
        seen[rec["id"]] = i


def read_records(path: Path | str) -> list[dict]:
    """All records of a JSONL file, each checked; RecordError names the file and the line of the first problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RecordError(f"{path}: cannot read records: {e}") from e
    records = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            raise RecordError(f"{path}:{lineno}: blank line (one JSON record per line expected)")
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path}:{lineno}: malformed JSON: {e.msg} at column {e.colno}") from e
        records.append(check_record(rec, f"{path}:{lineno}"))
    if not records:
        raise RecordError(f"{path}: empty file, no records")
    check_ids(records, path)
    return records


def dumps_record(rec: dict) -> str:
    """One record as a canonical JSON line (sorted keys, so the same records give the same bytes)."""
    return json.dumps(rec, ensure_ascii=False, sort_keys=True, allow_nan=False)


def write_records(path: Path | str, records: Iterable[dict]) -> int:
    """Check and write records as JSONL (atomically, via a temporary file); return the number written."""
    path = Path(path)
    records = [check_record(dict(rec), f"{path}: record {i}") for i, rec in enumerate(records, 1)]
    if not records:
        raise RecordError(f"{path}: refusing to write an empty records file")
    check_ids(records, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for rec in records:
            f.write(dumps_record(rec) + "\n")
    tmp.replace(path)
    return len(records)
