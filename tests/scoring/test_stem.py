"""STEM family: SCP-116K rows -> records (reference answer from the data's own solutions, drops counted by line)
and the STEM verifier (math graders, word answers as text)."""

from __future__ import annotations

import json

import pytest
from brorl.benchmarks import train as train_mix
from brorl.benchmarks.records import read_records
from brorl.benchmarks.stem import reference_answer, stem_records
from brorl.scoring import score
from brorl.scoring.stem import is_textual, normalize_text

# rows laid out as SCP-116K's card documents them (domain, problem, matched_solution, o1/qwq solutions and flags)
ROWS = [
    {
        "domain": "Physics",
        "problem": "A ball falls freely for 2 s (g = 9.8 m/s^2). How far does it fall?",
        "matched_solution": "d = g t^2 / 2 = \\boxed{19.6 \\text{ m}}",
        "o1_solution": "19.6 m",
        "is_o1_solution_same_with_matched_solution": True,
        "qwq_solution": "",
        "is_qwq_solution_same_with_matched_solution": False,
    },
    {
        "domain": "Chemistry",
        "problem": "Is the dissolution of NH4NO3 in water endothermic or exothermic?",
        "matched_solution": "The solution cools, so the process is endothermic.",
        "qwq_solution": "The temperature drops ... so it is \\[ \\boxed{\\text{endothermic}} \\]",
        "is_qwq_solution_same_with_matched_solution": True,
        "o1_solution": "",
        "is_o1_solution_same_with_matched_solution": False,
    },
    {
        "domain": "Chemistry",
        "problem": "What is the pH of 0.01 M HCl?",
        "matched_solution": "pH = 2.",
        "qwq_solution": "\\boxed{3}",
        "is_qwq_solution_same_with_matched_solution": False,
        "o1_solution": "**pH = 2**",
        "is_o1_solution_same_with_matched_solution": True,
    },
    {"domain": "Physics", "problem": "", "matched_solution": "\\boxed{1}"},
    {"domain": "Physics", "problem": "State Newton's first law.", "matched_solution": ""},
]


def test_reference_answers_come_from_the_source_solution_or_an_agreeing_model_solution():
    assert reference_answer(ROWS[0]) == ("19.6 \\text{ m}", "matched_solution")
    assert reference_answer(ROWS[1]) == ("\\text{endothermic}", "qwq_solution")
    assert reference_answer(ROWS[2])[0] is None  # the boxed QwQ answer disagrees with the source: not used


def test_rows_without_a_checkable_answer_are_dropped_and_counted_by_line():
    records, dropped = stem_records(enumerate(ROWS, 1), "stem", "scp.jsonl")
    assert [r["metadata"]["line"] for r in records] == [1, 2]
    assert dropped == {
        "no boxed answer in the matched solution or in an agreeing model solution": [3],
        "no problem text": [4],
        "no matched_solution": [5],
    }
    assert all(r["family"] == r["scorer"] == "stem" and r["prompt"].endswith("\\boxed{}.") for r in records)


def test_stem_verifier_grades_quantities_like_math_and_words_as_text():
    falls, heat = stem_records(enumerate(ROWS, 1), "stem", "scp.jsonl")[0]
    assert score(falls, "<think>d = 4.9 * 4</think> It falls \\boxed{19.6 \\text{ m}}.").correct
    assert score(falls, "<think>...</think> \\boxed{19.6}").correct  # the unit is not required (math graders)
    assert not score(falls, "<think>...</think> \\boxed{9.8}").correct
    assert score(heat, "<think>it gets cold</think> \\boxed{Endothermic}").correct
    assert score(heat, "<think>...</think> The answer is $\\boxed{\\textbf{endothermic.}}$").correct
    assert not score(heat, "<think>...</think> \\boxed{exothermic}").correct
    assert score(heat, "<think>never closed \\boxed{endothermic}").error == "truncated"
    assert is_textual("\\text{NaCl}") and is_textual("carbon dioxide") and not is_textual("\\frac{x}{2} + 3")
    assert normalize_text("\\mathrm{Na}\\,. ") == "na"


def test_scp_file_through_the_train_mix_with_counts_in_the_manifest(tmp_path, monkeypatch):
    data = tmp_path / "SCP_116K_in_open_source_format.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    monkeypatch.setattr(train_mix, "download_hub", lambda source, cache_dir=None: (data, "c" * 40))
    spec = {
        "name": "m",
        "seed": 0,
        "sources": [
            {
                "name": "stem",
                "family": "stem",
                "dataset": "EricLu/SCP-116K",
                "revision": "c" * 40,
                "split": "train",
                "items": 10,
            }
        ],
    }
    manifest = train_mix.prepare_train_data(spec, tmp_path / "m.jsonl")
    assert manifest["families"] == {"stem": 2} and len(read_records(tmp_path / "m.jsonl")) == 2
    assert manifest["sources"][0]["dropped"]["no problem text"] == {"count": 1, "lines": [4]}


def test_a_malformed_scp_line_is_an_error_naming_the_file_and_line(tmp_path, monkeypatch):
    data = tmp_path / "scp.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    monkeypatch.setattr(train_mix, "download_hub", lambda source, cache_dir=None: (data, "c" * 40))
    spec = {
        "name": "m",
        "seed": 0,
        "sources": [
            {
                "name": "stem",
                "family": "stem",
                "dataset": "EricLu/SCP-116K",
                "revision": "c" * 40,
                "split": "train",
                "items": 10,
            }
        ],
    }
    with pytest.raises(train_mix.PrepareError, match=r"scp.jsonl:2: malformed JSON"):
        train_mix.prepare_train_data(spec, tmp_path / "m.jsonl")
