"""The two optional benchmarks that ProRL reports and BroRL's tables do not: GPQA diamond (family stem, multiple
choice) and IFEval (family instruction_following). Both are hub-only; as in test_benchmarks.py only the download is
replaced, by a local file laid out as the hub's.

The fixtures are INVENTED rows written by hand in each dataset's format (columns, id fields, real IFEval instruction
ids), never real items: GPQA's authors ask that its questions not be posted in plain text, and this repository is
public. tests/benchmarks/fixtures/gpqa_diamond.csv mimics Idavidrein/gpqa's gpqa_diamond.csv (the correct answer in
its own column, a question spanning two lines, a quoted comma); ifeval_input_data.jsonl mimics google/IFEval's file
(one row's kwargs padded with nulls, as the hub's tables are).
"""

from __future__ import annotations

import csv
import dataclasses
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from brorl.benchmarks import prepare as prep
from brorl.benchmarks.records import read_records
from brorl.benchmarks.registry import REGISTRY_DIR, RegistryError, load_entry, load_registry
from brorl.config import load_schema
from brorl.hub.pins import is_pinned
from brorl.scoring import score

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FILES = {"gpqa_diamond": FIXTURES / "gpqa_diamond.csv", "ifeval": FIXTURES / "ifeval_input_data.jsonl"}
THINK = "<think>Let me work through it, step by step.</think>"


def prepared(name: str, tmp_path: Path, monkeypatch, rows: int = 3) -> list[dict]:
    """The registry entry prepared through the hub path (pin check, mapping, count, manifest) from its fixture."""
    spec = dataclasses.replace(load_registry()[name], expected_rows=rows)  # the fixture's size, not the real one's
    calls = []

    def fake_download(source, cache_dir=None, retries=3):
        calls.append((source.repo_id, source.revision, source.filename))
        return FILES[name], source.revision

    monkeypatch.setattr(prep, "download_hub", fake_download)
    out = tmp_path / f"{name}.jsonl"
    manifest = prep.prepare(spec, "hub", out)
    source = spec.source("hub")
    assert calls == [(source.repo_id, source.revision, source.filename)]
    assert manifest["rows"] == rows and manifest["source"]["resolved_revision"] == source.revision
    return read_records(out)


def fixture_rows(name: str) -> list[dict]:
    return prep.load_rows(FILES[name])


# --------------------------------------------------------------------------------------------------------- registry
@pytest.mark.parametrize(
    "name, family, repo_id, filename, rows",
    [
        ("gpqa_diamond", "stem", "Idavidrein/gpqa", "gpqa_diamond.csv", 198),
        ("ifeval", "instruction_following", "google/IFEval", "ifeval_input_data.jsonl", 541),
    ],
)
def test_each_entry_is_valid_pinned_and_off_by_default(name, family, repo_id, filename, rows):
    spec = load_entry(REGISTRY_DIR / f"{name}.yaml")  # the schema and the cross-key checks
    assert spec.family == spec.scorer == family and spec.n_samples == 16 and spec.expected_rows == rows
    [source] = spec.sources
    assert (source.kind, source.repo_id, source.filename) == ("hub", repo_id, filename)
    assert is_pinned(source.revision), source.revision  # a full 40-hex commit: prepare downloads it without a flag
    defaults = load_schema()["properties"]["evaluation"]["properties"]["benchmarks"]["default"]
    config = yaml.safe_load((ROOT / "config.yaml").read_text())["evaluation"]["benchmarks"]
    tiny = yaml.safe_load((ROOT / "workflow" / "presets" / "tiny.yaml").read_text())["evaluation"]["benchmarks"]
    assert name not in defaults and name not in config and name not in tiny  # BroRL's tables do not report it


@pytest.mark.parametrize(
    "name, mutate, words",
    [
        ("gpqa_diamond", lambda s: s.pop("choices"), "key 'sources[0].fields.answer': required for family 'stem'"),
        (
            "gpqa_diamond",
            lambda s: s["fields"].update(answer="Correct Answer"),
            "a multiple-choice source's answer is the letter",
        ),
        ("gpqa_diamond", lambda s: s["choices"].pop("seed"), "'seed' is a required property"),
        ("gpqa_diamond", lambda s: s["choices"].update(incorrect=[]), "key 'sources[0].choices.incorrect'"),
        ("ifeval", lambda s: s["fields"].update(metadata=["instruction_id_list"]), "must list 'kwargs'"),
    ],
)
def test_a_bad_optional_entry_names_the_key(tmp_path, name, mutate, words):
    entry = yaml.safe_load((REGISTRY_DIR / f"{name}.yaml").read_text())
    mutate(entry["sources"][0])
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(entry))
    with pytest.raises(RegistryError) as err:
        load_entry(path)
    assert str(path) in str(err.value) and words in str(err.value)


# ------------------------------------------------------------------------------------------------------------- GPQA
def test_gpqa_records_letter_the_shuffled_options_and_keep_the_correct_one(tmp_path, monkeypatch):
    records = prepared("gpqa_diamond", tmp_path, monkeypatch)
    rows = {r["Record ID"]: r for r in fixture_rows("gpqa_diamond")}
    assert [r["id"] for r in records] == [f"gpqa_diamond/{key}" for key in rows]
    for rec in records:
        row = rows[rec["id"].split("/", 1)[1]]
        options = [row["Correct Answer"], *(row[f"Incorrect Answer {i}"] for i in (1, 2, 3))]
        choices = rec["metadata"]["choices"]
        assert sorted(choices) == sorted(options) and rec["answer"] in "ABCD" and len(rec["answer"]) == 1
        assert choices["ABCD".index(rec["answer"])] == row["Correct Answer"]
        lettered = "\n".join(f"{letter}) {text}" for letter, text in zip("ABCD", choices))
        assert rec["prompt"].startswith(f"{row['Question']}\n\n{lettered}\n\n")
        assert rec["prompt"].endswith("the letter of the correct option, within \\boxed{}.")
        assert rec["metadata"]["Subdomain"] == row["Subdomain"] and rec["family"] == rec["scorer"] == "stem"
    assert [r["answer"] for r in records] == ["A", "C", "D"]  # seed 0 with these Record IDs: fixed forever


def test_gpqa_letters_depend_on_the_row_id_not_the_file_order(tmp_path, monkeypatch):
    first = {r["id"]: r for r in prepared("gpqa_diamond", tmp_path / "a", monkeypatch)}
    rows = fixture_rows("gpqa_diamond")
    reversed_file = tmp_path / "gpqa_diamond.csv"
    with open(reversed_file, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[::-1])
    monkeypatch.setitem(FILES, "gpqa_diamond", reversed_file)
    again = {r["id"]: r for r in prepared("gpqa_diamond", tmp_path / "b", monkeypatch)}
    assert {k: (r["answer"], r["prompt"]) for k, r in again.items()} == {
        k: (r["answer"], r["prompt"]) for k, r in first.items()
    }


def test_the_shuffle_spreads_the_correct_letter_over_a_to_d():
    choices = {"correct": "c", "incorrect": ["w1", "w2", "w3"], "seed": 0}
    rows = [{"c": f"right {i}", "w1": "x", "w2": "y", "w3": "z"} for i in range(200)]
    letters = Counter(prep.multiple_choice(row, choices, f"rec{i}")[1] for i, row in enumerate(rows))
    # A-D: 54, 55, 30, 61 here; even over 20,000 rows (4,986, 5,099, 4,948, 4,967)
    assert set(letters) == set("ABCD") and min(letters.values()) > 20, letters
    assert prep.multiple_choice(rows[0], choices, "rec0") == prep.multiple_choice(rows[0], choices, "rec0")
    other_seed = Counter(prep.multiple_choice(r, choices | {"seed": 1}, f"rec{i}")[1] for i, r in enumerate(rows))
    assert other_seed != letters
    with pytest.raises(ValueError, match="option field 'w2' is not a non-empty string"):
        prep.multiple_choice(rows[0] | {"w2": "  "}, choices, "rec0")


def test_gpqa_scores_the_boxed_letter_through_dispatch(tmp_path, monkeypatch):
    for rec in prepared("gpqa_diamond", tmp_path, monkeypatch):
        right, wrong = rec["answer"], next(c for c in "ABCD" if c != rec["answer"])
        for response in (f"{THINK} So the answer is \\boxed{{{right}}}.", f"{THINK} \\boxed{{({right})}}"):
            result = score(rec, response)
            assert result.correct and result.score == 1.0, (response, result)
        result = score(rec, f"{THINK} \\boxed{{{wrong}}}")
        assert not result.correct and result.score == 0.0 and result.error is None
        text = rec["metadata"]["choices"]["ABCD".index(right)]
        assert score(rec, f"{THINK} \\boxed{{{text}}}").score == 0.0  # the option's text is not its letter
        assert score(rec, f"<think>\\boxed{{{right}}} maybe").error == "truncated"  # thinking never ended


def test_a_csv_row_with_the_wrong_number_of_values_names_the_file(tmp_path):
    bad = tmp_path / "bad.csv"
    shutil.copy(FILES["gpqa_diamond"], bad)
    with open(bad, "a", encoding="utf-8") as f:
        f.write("Only a question,and one answer\n")
    with pytest.raises(prep.PrepareError, match=r"bad\.csv: row 3 has another number of values than the header"):
        prep.load_rows(bad)


def test_the_real_row_count_is_enforced(tmp_path, monkeypatch):
    monkeypatch.setattr(prep, "download_hub", lambda source, cache_dir=None, retries=3: (FILES["ifeval"], "x"))
    with pytest.raises(prep.PrepareError, match=r"3 rows for 'ifeval' after filtering, expected 541"):
        prep.prepare(load_registry()["ifeval"], "hub", tmp_path / "ifeval.jsonl")


# ----------------------------------------------------------------------------------------------------------- IFEval
def test_ifeval_records_carry_what_the_checkers_read(tmp_path, monkeypatch):
    from brorl.scoring.instructions import instruction_problems

    records = prepared("ifeval", tmp_path, monkeypatch)
    rows = {row["key"]: row for row in fixture_rows("ifeval")}
    assert [r["id"] for r in records] == [f"ifeval/{key}" for key in rows]
    for rec in records:
        row, meta = rows[int(rec["id"].split("/")[1])], rec["metadata"]
        assert rec["prompt"] == meta["problem"] == row["prompt"] and "answer" not in rec
        assert meta["instruction_id_list"] == row["instruction_id_list"] and meta["kwargs"] == row["kwargs"]
        assert instruction_problems(meta["instruction_id_list"], meta["kwargs"]) == []  # known ids, accepted args


# response -> (score, correct), hand-written for each invented row
IFEVAL_RESPONSES = {
    "ifeval/9001": {
        "Our cat Miso is lost. Please call us if you see her.": (1.0, True),
        "Miso, our cat, is lost.": (0.0, False),
    },
    "ifeval/9002": {
        "* a tall white tower stands on the rocky shore\n* its bright lamp turns slowly through the night\n"
        "* ships far out at sea steer safely past the rocks": (1.0, True),
        "* A tall white tower stands on the rocky shore\n* Its bright lamp turns slowly through the night\n"
        "* Ships far out at sea steer safely past the rocks": (0.5, False),  # three bullets, but capitals
        "A tall white tower.": (0.0, False),
    },
    "ifeval/9003": {
        "Start early and carry *plenty of water*. Wear *boots with good grip*.\n\nP.S. Tell someone your route.": (
            1.0,
            True,
        ),
        "Start early and carry water.": (0.0, False),
    },
}


def test_ifeval_scores_the_fraction_followed_through_dispatch(tmp_path, monkeypatch):
    records = {r["id"]: r for r in prepared("ifeval", tmp_path, monkeypatch)}
    assert set(records) == set(IFEVAL_RESPONSES)
    for key, cases in IFEVAL_RESPONSES.items():
        for response, (expected, correct) in cases.items():
            result = score(records[key], f"{THINK}{response}")
            assert (result.score, result.correct, result.error) == (expected, correct, None), (key, response)
