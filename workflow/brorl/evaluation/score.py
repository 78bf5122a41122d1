"""Score generated samples: join them to the benchmark's items by id, check that every (item, sample) is there
exactly once, and run the verifiers through ``brorl.scoring.score_batch``.

Samples (brorl.generation): ``id, sample_idx, response, n_tokens, finish_reason``.
Scores (written here):     ``id, sample_idx, score, correct, error, correct_math_verify, tests_passed``, in the
samples' item order, then sample_idx. ``correct_math_verify`` is math-verify's verdict alone on the same extracted
answer (the math verifier's second verdict, beside ``correct`` = DeepScaleR OR math-verify); False for a math sample
that could not be judged (truncated, no answer, timeout: ``error`` says why), null (NA) for every non-math sample.
``tests_passed`` is a code sample's fraction of tests passed (0 when it could not run: no code, timeout), from the
same sandboxed run as its all-tests-pass ``score``; null for every non-code sample. The paper's code numbers may be
either: the summary and Table 4 give both.

Truncated responses (finish_reason "length") are scored like the others and keep the verifier's verdict: the math
verifier gives 0 to a response without ``</think>`` (the protocol's "truncated responses score 0"); the summary
reports the truncation rate from finish_reason. Where the model's chat template opened ``<think>`` itself, each
response is scored with that opening tag (brorl.scoring.reasoning), as in training.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from ..benchmarks.records import read_records
from ..cli import remake_hint

SAMPLE_COLUMNS = ("id", "sample_idx", "response", "n_tokens", "finish_reason")
SCORE_COLUMNS = ("id", "sample_idx", "score", "correct", "error")
MATH_VERIFY_COLUMN = "correct_math_verify"  # written for every benchmark; required by the summary of a math one
# the fraction of a code sample's tests that passed (null outside code): the second code score, beside `score`, the
# all-tests-pass verdict; written for every benchmark, read by the summary of a code one where present
TESTS_PASSED_COLUMN = "tests_passed"
SAMPLES_META_KEY = b"brorl.samples"  # = brorl.generation.generate.META_KEY (this stage never imports generation)


class EvaluationError(ValueError):
    """Samples or scores that do not match their benchmark; the message names the file and the id."""


def _names(ids, limit: int = 5) -> str:
    ids = list(ids)
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def load_items(benchmark: Path | str, max_items: int | None = None) -> list[dict]:
    """The benchmark's records, the first ``max_items`` of the file when capped (generation's --max-items)."""
    items = read_records(benchmark)
    return items[:max_items] if max_items else items


def read_table(path: Path | str, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    """A parquet file with at least ``columns``; EvaluationError naming the file when it cannot be read."""
    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except Exception as e:  # pyarrow raises several types for a missing or corrupt file
        raise EvaluationError(f"{path}: cannot read the {what}: {e}{remake_hint(path)}") from e
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise EvaluationError(f"{path}: the {what} lack column(s) {', '.join(missing)} (have {', '.join(df.columns)})")
    return df


def check_coverage(items: list[dict], df: pd.DataFrame, where: str, n: int | None = None) -> tuple[pd.DataFrame, int]:
    """Check that ``df`` has exactly one row per (item, sample_idx) for sample_idx in 0..n-1 and no other id.

    ``n`` defaults to the largest number of rows of any item. Returns the rows in item order, then sample_idx, and n.
    EvaluationError names the offending ids: unknown ids, duplicates, missing samples, sample_idx out of range.
    """
    order = {item["id"]: i for i, item in enumerate(items)}
    ids = df["id"].astype(str)
    unknown = sorted(set(ids) - set(order))
    if unknown:
        raise EvaluationError(
            f"{where}: {len(unknown)} id(s) not among the {len(order)} benchmark item(s) evaluated: {_names(unknown)}"
        )
    dup = df[df.duplicated(["id", "sample_idx"], keep=False)]
    if len(dup):
        pairs = sorted({(str(i), int(s)) for i, s in zip(dup["id"], dup["sample_idx"])})
        raise EvaluationError(
            f"{where}: duplicate sample(s) (id, sample_idx): {_names(pairs)}; each sample must appear once"
        )
    counts = ids.value_counts()
    if n is None:
        n = int(counts.max()) if len(counts) else 0
    if n < 1:
        raise EvaluationError(f"{where}: no samples")
    bad_idx = df[(df["sample_idx"] < 0) | (df["sample_idx"] >= n)]
    if len(bad_idx):
        pairs = sorted({(str(i), int(s)) for i, s in zip(bad_idx["id"], bad_idx["sample_idx"])})
        raise EvaluationError(f"{where}: sample_idx outside 0..{n - 1}: {_names(pairs)}")
    short = [(i, int(counts.get(i, 0))) for i in order if counts.get(i, 0) != n]
    if short:
        detail = _names([f"{i} ({c} of {n})" for i, c in short])
        raise EvaluationError(f"{where}: missing samples for {len(short)} item(s): {detail}")
    out = df.assign(_order=ids.map(order)).sort_values(["_order", "sample_idx"], kind="stable")
    return out.drop(columns="_order").reset_index(drop=True), n


def template_opened_reasoning(samples_path: Path | str) -> bool:
    """Whether the generating model's chat template opened the reasoning block itself (recorded by generation in
    the samples' metadata, brorl.generation.engine; files written before it was recorded: False)."""
    raw = (pq.read_schema(samples_path).metadata or {}).get(SAMPLES_META_KEY)
    engine = (json.loads(raw).get("engine") or {}) if raw else {}
    return bool((engine.get("info") or {}).get("template_opens_reasoning", False))


def score_samples(
    items: list[dict],
    samples: pd.DataFrame,
    workers: int = 2,
    timeout_s: float | None = None,
    progress: bool = True,
    n: int | None = None,
    where: str = "samples",
    reasoning_opened: bool = False,
    code_limits: dict | None = None,
) -> pd.DataFrame:
    """One score row per sample, in item order then sample_idx (coverage checked first). `reasoning_opened`: the
    chat template opened <think>, so each response is scored with that tag (brorl.scoring.reasoning). `code_limits`:
    the code verifier's time_limit_s and memory_mb (config evaluation.code; None: the verifier's defaults)."""
    from ..scoring import score_batch
    from ..scoring.reasoning import as_scored

    samples, n = check_coverage(items, samples, where, n)
    by_id = {item["id"]: item for item in items}
    responses = [
        as_scored("" if r is None or (isinstance(r, float) and r != r) else str(r), reasoning_opened)
        for r in samples["response"]
    ]
    pairs = [(evaluation_item(by_id[i], code_limits), r) for i, r in zip(samples["id"].astype(str), responses)]
    results = score_batch(pairs, workers=workers, timeout_s=timeout_s, progress=progress)
    math_verify = [
        (bool(r.math_verify) if item.get("scorer") == "math" else pd.NA) for (item, _), r in zip(pairs, results)
    ]
    code = [item.get("scorer") == "code" for item, _ in pairs]
    return pd.DataFrame(
        {
            "id": samples["id"].astype(str).to_numpy(),
            "sample_idx": samples["sample_idx"].astype("int64").to_numpy(),
            # code: the all-tests-pass verdict (the protocol's pass@1); the fraction goes to TESTS_PASSED_COLUMN
            "score": [float(r.correct) if c else float(r.score) for r, c in zip(results, code)],
            "correct": [bool(r.correct) for r in results],
            "error": pd.array([r.error for r in results], dtype="string"),
            MATH_VERIFY_COLUMN: pd.array(math_verify, dtype="boolean"),
            TESTS_PASSED_COLUMN: pd.array([r.score if c else None for r, c in zip(results, code)], dtype="Float64"),
        }
    )


def evaluation_item(item: dict, code_limits: dict | None = None) -> dict:
    """The item as evaluation scores it. Code runs every test of the program in one sandboxed run (the training
    reward's fraction mode, within the limits of config evaluation.code), so one run yields both verdicts: all tests
    passed, and the fraction of tests passed."""
    if item.get("scorer") == "code":
        options = {**item.get("scorer_options", {}), **(code_limits or {}), "reward": "fraction"}
        return {**item, "scorer_options": options}
    return item


def write_scores(df: pd.DataFrame, out: Path | str) -> None:
    """Write scores atomically (a temporary file, then rename)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(out)
