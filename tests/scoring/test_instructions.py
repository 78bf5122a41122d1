"""Instruction-following family: IFEval's checkers (lighteval's maintained copy) on IFEval-format cases, the
fraction-followed reward, and Llama-Nemotron IF rows -> records with every unusable row counted by line."""

from __future__ import annotations

import json

import pytest
from brorl.benchmarks import train as train_mix
from brorl.benchmarks.instructions import instruction_records
from brorl.benchmarks.records import read_records
from brorl.scoring import score, score_batch
from brorl.scoring.instructions import check_ready, followed, registry

REQUEST = "Describe a lighthouse at night."
# IFEval format: (instruction id, kwargs as IFEval's input_data.jsonl gives them, a compliant and a non-compliant reply)
CASES = [
    ("keywords:existence", {"keywords": ["lamp", "rocks"]}, "The lamp turns above the rocks.", "It shines."),
    (
        "keywords:frequency",
        {"keyword": "light", "frequency": 2, "relation": "at least"},
        "Light, more light.",
        "A beam of light.",
    ),
    ("keywords:forbidden_words", {"forbidden_words": ["storm"]}, "Calm water.", "A storm rolls in."),
    (
        "keywords:letter_frequency",
        {"letter": "q", "let_frequency": 2, "let_relation": "at least"},
        "Quiet quays.",
        "Silent docks.",
    ),
    (
        "language:response_language",
        {"language": "en"},
        "The lighthouse stands on the cliff and its beam sweeps slowly across the dark and restless sea.",
        "Le phare se dresse sur la falaise et son faisceau balaie lentement la mer sombre et agitée.",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "The beam turns.",
        "The beam turns. Ships pass. Gulls sleep.",
    ),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "The tower.\n***\nThe beam.", "The tower."),
    (
        "length_constraints:number_words",
        {"num_words": 6, "relation": "at least"},
        "The old tower glows all night long.",
        "It glows.",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "ships"},
        "The tower glows.\n\nShips see it.",
        "The tower glows.\n\nBoats see it.",
    ),
    ("detectable_content:number_placeholders", {"num_placeholders": 1}, "Keeper: [name].", "Keeper: Ann."),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "It glows.\n\nP.S. Visit it.", "It glows."),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* tower\n* beam", "* tower"),
    ("detectable_format:constrained_response", {}, "My answer is no.", "Perhaps."),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 1}, "A *bright* beam.", "A bright beam."),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION 1\nThe tower.\nSECTION 2\nThe beam.",
        "The tower and the beam.",
    ),
    ("detectable_format:json_format", {}, '{"tower": "lit"}', "tower: lit"),
    ("detectable_format:title", {}, "<<Night Watch>>\nThe beam turns.", "Night Watch. The beam turns."),
    ("combination:two_responses", {}, "It glows.\n******\nIt shines.", "It glows."),
    ("combination:repeat_prompt", {"prompt_to_repeat": REQUEST}, REQUEST + " It glows.", "It glows."),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "It glows. Any other questions?", "It glows."),
    ("startend:quotation", {}, '"It glows all night."', "It glows all night."),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "The BEAM is VERY bright.",
        "The beam is bright.",
    ),
    (
        "change_case:english_capital",
        {},
        "THE LIGHTHOUSE STANDS ON THE CLIFF AND ITS BEAM SWEEPS SLOWLY ACROSS THE DARK AND RESTLESS SEA.",
        "The lighthouse stands on the cliff and its beam sweeps across the sea.",
    ),
    (
        "change_case:english_lowercase",
        {},
        "the lighthouse stands on the cliff all night long.",
        "The Lighthouse stands on the cliff all night long.",
    ),
    ("punctuation:no_comma", {}, "The beam turns and turns.", "The beam turns, and turns."),
]


def test_the_checkers_load_offline_and_cover_every_ifeval_instruction():
    check_ready()  # the checkers import and NLTK finds punkt_tab without a download
    assert {c[0] for c in CASES} == set(registry()) and len(CASES) == 25


@pytest.mark.parametrize("iid, kwargs, good, bad", CASES, ids=[c[0] for c in CASES])
def test_each_instruction_passes_a_compliant_reply_and_fails_a_non_compliant_one(iid, kwargs, good, bad):
    assert followed(good, [iid], [kwargs], REQUEST) == [True]
    assert followed(bad, [iid], [kwargs], REQUEST) == [False]


def _item(ids, kwargs):
    return {
        "id": "if/1",
        "benchmark": "if",
        "family": "instruction_following",
        "prompt": REQUEST,
        "scorer": "instruction_following",
        "metadata": {"problem": REQUEST, "instruction_id_list": ids, "kwargs": kwargs},
    }


def test_reward_is_the_fraction_followed_after_the_thinking():
    item = _item(["punctuation:no_comma", "startend:end_checker"], [{}, {"end_phrase": "Any other questions?"}])
    half = score(item, "<think>commas, commas</think>The beam turns and turns.")
    assert (half.score, half.correct) == (0.5, False)  # the thinking's commas do not count
    full = score(item, "<think>plan</think>It glows. Any other questions?")
    assert (full.score, full.correct) == (1.0, True)
    assert score(item, "<think>never finished, Any other questions?").error == "truncated"
    assert score(item, "<think>x</think>   ").score == 0.0  # an empty answer follows nothing


def test_the_verifier_runs_under_the_hard_timeout_pool():
    item = _item(["detectable_format:title"], [{}])
    results = score_batch([(item, "<<T>>\nok"), (item, "no title")], workers=1)
    assert [r.correct for r in results] == [True, False] and all(r.error is None for r in results)


# rows laid out as Llama-Nemotron's RL/instruction_following file: input (messages), args (ids and kwargs)
def _row(ids, kwargs, text="Describe a harbour. Use no commas."):
    return {
        "input": [{"role": "user", "content": text}],
        "category": "instruction_following",
        "license": "odc-by",
        "args": {"instruction_id_list": ids, "instruction_kwargs": kwargs, "task": "instruction_following"},
    }


ROWS = [
    _row(
        ["punctuation:no_comma", "length_constraints:number_words"],
        [{"num_words": None}, {"relation": "less than", "num_words": 50, "keywords": None}],
    ),
    _row(["keywords:no_such_check"], [{}]),
    _row(["length_constraints:number_words"], [{"relation": "about", "num_words": 50}]),
    _row(["punctuation:no_comma", "detectable_format:title"], [{}]),
    {"input": [], "args": {"instruction_id_list": ["punctuation:no_comma"], "instruction_kwargs": [{}]}},
]


def test_nemotron_rows_become_records_and_unusable_rows_are_counted_by_line():
    records, dropped = instruction_records(enumerate(ROWS, 1), "if", "if.jsonl")
    assert [r["metadata"]["line"] for r in records] == [1]
    assert records[0]["metadata"]["kwargs"] == [{}, {"relation": "less than", "num_words": 50}]  # nulls removed
    assert dropped == {
        "unknown instruction id": [2],
        "arguments a checker rejects": [3],
        "malformed instruction_kwargs (not one object per instruction id)": [4],
        "no user request in input": [5],
    }
    assert score(records[0], "<think>x</think>A quiet harbour at dawn.").correct


def test_nemotron_file_through_the_train_mix_with_counts_in_the_manifest(tmp_path, monkeypatch):
    data = tmp_path / "instruction_following.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    monkeypatch.setattr(train_mix, "download_hub", lambda source, cache_dir=None: (data, "d" * 40))
    spec = {
        "name": "m",
        "seed": 0,
        "sources": [
            {
                "name": "instruction_following",
                "family": "instruction_following",
                "split": "train",
                "items": 10,
                "dataset": "nvidia/Llama-Nemotron-Post-Training-Dataset",
                "revision": "d" * 40,
            }
        ],
    }
    manifest = train_mix.prepare_train_data(spec, tmp_path / "m.jsonl")
    assert manifest["families"] == {"instruction_following": 1} and len(read_records(tmp_path / "m.jsonl")) == 1
    assert manifest["sources"][0]["dropped"]["unknown instruction id"] == {"count": 1, "lines": [2]}
