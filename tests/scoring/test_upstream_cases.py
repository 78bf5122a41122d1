"""The project's verifiers against other projects' own test cases (carried as data in tests/scoring/upstream/).

* IFEval (Google's instructions_test.py): each check becomes an instruction-following item scored through the
  dispatcher, once with the response as the test wrote it and once after a reasoning block
  (``<think>...</think>\\n\\n`` + response, what a reasoning model writes).
* Math-Verify (Hugging Face's tests): each gold/pred case in "prompt form", the form the math template asks for:
  ``<think>...</think>`` then ``The final answer is $\\boxed{X}$.`` (or the pred as written where it already boxes
  its answer); the gold as a dataset stores it. The ProRL verdict (``correct``) and math-verify's alone
  (``Score.math_verify``) are both compared with upstream's.
* Reasoning Gym (the library's own ``score_answer`` on its own entry): three answers per item, each wrapped three
  ways in the template's ``<answer>`` format; plus the reasoning-block rule (scoring/reasoning.py): an answer that
  only appears inside ``<think>`` scores 0.

Every case must agree with upstream, except those in the KNOWN_DIFFERENCES_* tables below (each with its reason;
a listed case must still differ, so the tables stay exact). DEFECT_CASES names the cases that exercise the four
verifier defects (a)-(d) fixed in brorl.scoring: they expect what upstream expects and fail with a defect put back.
The case files, their sources and licences: tests/scoring/upstream/PROVENANCE.md; regenerate them with
tests/scoring/upstream/extract_cases.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from brorl.scoring import score
from brorl.scoring.instructions import instruction_problems

UPSTREAM = Path(__file__).resolve().parent / "upstream"


def _load(name: str) -> list[dict]:
    return [json.loads(line) for line in (UPSTREAM / name).read_text("utf-8").splitlines() if line.strip()]


IFEVAL = _load("ifeval_cases.jsonl")
MATH = _load("math_verify_cases.jsonl")
RG = _load("reasoning_gym_cases.jsonl")

# ---------------------------------------------------------------------------------------------------------- defects
# Cases that exercise a verifier defect; each expects upstream's verdict (fails while the defect is in the code):
# (a) the text after </think> kept its leading blank line: Google's nth_paragraph_first_word counts the empty first
#     paragraph but indexes the unfiltered list, so paragraph n is read as n-1 and right answers fail (think form);
# (b) the Reasoning Gym scorer ignored the reasoning-block rule: a tagged answer inside <think> (cut off, or in a
#     closed block with no answer after it) was scored;
# (c) math-verify 0.9.0 drops everything from \mathrm{e} on (\boxed{2\mathrm{e}} equal to 2, not to 2e);
# (d) keywords:letter_frequency with a non-letter: lighteval's copy checks a random letter (unseeded) and accepts
#     invalid arguments, where Google (since google-research@45e9105) counts the character itself and refuses them.
# Entries are pytest test ids in this module (a test function alone covers all its parameters); run one with
# pytest 'tests/scoring/test_upstream_cases.py::<entry>'.
DEFECT_CASES = {
    "a": [
        "test_ifeval_check_agrees_with_google[test_paragraph_first_word::0-think]",
        "test_ifeval_check_agrees_with_google[test_paragraph_first_word::3-think]",
        "test_ifeval_check_agrees_with_google[test_paragraph_first_word::4-think]",
    ],
    "b": [
        "test_reasoning_gym_answer_only_inside_the_reasoning_block_scores_zero",
    ],
    "c": [
        "test_math_mathrm_e_is_eulers_number[2e-vs-2]",
        "test_math_mathrm_e_is_eulers_number[2e^3-vs-2]",
        "test_math_mathrm_e_is_eulers_number[2e-vs-2e]",
    ],
    "d": [
        "test_ifeval_check_agrees_with_google[test_letter_frequency_checker_accepts_punctuation::0-plain]",
        "test_ifeval_check_agrees_with_google[test_letter_frequency_checker_accepts_punctuation::0-think]",
        "test_ifeval_arguments_google_refuses_are_refused[test_letter_frequency_checker_rejects_invalid_explicit_args::0]",
        "test_ifeval_arguments_google_refuses_are_refused[test_letter_frequency_checker_rejects_invalid_explicit_args::1]",
    ],
}

# ----------------------------------------------------------------------------------------------------------- IFEval
THINK_IF = "<think>The user gave formatting instructions; let me follow them exactly.</think>\n\n"

# (case id, form) -> reason. Empty: every applicable check agrees in both forms.
KNOWN_DIFFERENCES_IFEVAL: dict[tuple[str, str], str] = {}

IFEVAL_SCORED = [c for c in IFEVAL if c["instruction_id"] and isinstance(c["expected"], bool)]
# checks of checker classes that IFEval's registry leaves out (rephrasing, key sentences, constrained start,
# rephrase_paragraph): not IFEval instructions, so not applicable; the project rejects their ids
IFEVAL_UNREGISTERED = [c for c in IFEVAL if not c["instruction_id"]]
IFEVAL_REJECTS = [c for c in IFEVAL if c["expected"] == "rejects"]


def _if_item(case: dict) -> dict:
    return {
        "id": f"upstream-ifeval/{case['id']}",
        "scorer": "instruction_following",
        "metadata": {"instruction_id_list": [case["instruction_id"]], "kwargs": [case["kwargs"]]},
    }


@pytest.mark.parametrize("form", ["plain", "think"])
@pytest.mark.parametrize("case", IFEVAL_SCORED, ids=[c["id"] for c in IFEVAL_SCORED])
def test_ifeval_check_agrees_with_google(case, form):
    response = case["response"] if form == "plain" else THINK_IF + case["response"]
    result = score(_if_item(case), response)
    assert result.error is None, result.error
    known = KNOWN_DIFFERENCES_IFEVAL.get((case["id"], form))
    if known:
        assert result.correct != case["expected"], f"now agrees with upstream: remove it from the table ({known})"
    else:
        assert result.correct == case["expected"], f"{case['source']}: upstream expects {case['expected']}"


@pytest.mark.parametrize("case", IFEVAL_REJECTS, ids=[c["id"] for c in IFEVAL_REJECTS])
def test_ifeval_arguments_google_refuses_are_refused(case):
    assert instruction_problems([case["instruction_id"]], [case["kwargs"]]), case["source"]


def test_ifeval_checks_outside_the_registry_are_not_instructions_the_project_takes():
    ids = sorted({c["upstream_instruction_id"] for c in IFEVAL_UNREGISTERED})
    assert len(IFEVAL_UNREGISTERED) == 15 and len(ids) == 4
    for iid in ids:
        assert instruction_problems([iid], [{}]) == [f"unknown instruction id {iid!r}"]


# ------------------------------------------------------------------------------------------------------------- math
THINK_MATH = "<think>Let me work through the problem step by step.</think>\n\n"

SEVERAL_BOXES = (
    "format: the pred boxes several answers separately; the project reads only the last \\boxed{} (the "
    "ProRL/DeepScaleR extraction rule), where math-verify >= 0.8 joins the boxes into one set"
)
NON_DEFAULT = (
    "config: the test passes a non-default verify option ({}); the project calls math-verify with its defaults, "
    "as lighteval does"
)
DECIMAL_COMMA = (
    "format: a decimal comma ({}); upstream reads it with the expression extractor this test enables, while inside "
    "\\boxed{{}} LaTeX '1000,99' is a list, and the DeepScaleR leg reads commas as thousands separators"
)
# case id -> (the verdicts that differ: "correct" = the ProRL verdict, "math_verify" = math-verify alone; reason)
KNOWN_DIFFERENCES_MATH: dict[str, tuple[set[str], str]] = {
    **{
        f"test_open_thoughts::test_open_thoughts::{k}": ({"correct", "math_verify"}, SEVERAL_BOXES)
        for k in (12, 13, 14, 16, 18, 19, 23, 24, 25, 26)
    },
    "test_numina_cases::test_numina_cases::12": ({"correct", "math_verify"}, SEVERAL_BOXES),
    "test_all::test_math_extraction_additional_cases::28": ({"correct", "math_verify"}, SEVERAL_BOXES),
    "test_all::test_math_extraction_additional_cases::17": (
        {"correct", "math_verify"},
        "format: the pred boxes intermediate values (200, 255) and states its final answer $10,455$ unboxed; the "
        "project reads the last box, 255",
    ),
    "test_all::test_precision::assert0": ({"correct", "math_verify"}, NON_DEFAULT.format("float_rounding=4")),
    "test_all::test_complex_math_expressions::7": ({"correct", "math_verify"}, NON_DEFAULT.format("float_rounding=2")),
    "test_all::test_complex_math_expressions::13": ({"correct", "math_verify"}, NON_DEFAULT.format("float_rounding=2")),
    "test_all::test_set_rel_assymetry::2": (
        {"correct", "math_verify"},
        NON_DEFAULT.format("allow_set_relation_comp=True"),
    ),
    "test_strict::test_strict_variable_comparison::1": ({"correct", "math_verify"}, NON_DEFAULT.format("strict=False")),
    "test_all::test_number_extraction::5": ({"correct", "math_verify"}, DECIMAL_COMMA.format("pred 1000,99")),
    "test_all::test_number_extraction::6": ({"correct", "math_verify"}, DECIMAL_COMMA.format("gold 1,22")),
    "test_all::test_math_extraction_additional_cases::24": (
        {"correct"},
        "protocol: upstream expects 0 for gold 32349 vs \\boxed{32, 349}; the DeepScaleR leg removes spaces and "
        "strips properly formatted thousands commas (rllm's grade_answer_sympy), so the ProRL verdict is 1 (the "
        "math-verify verdict agrees with upstream); '32, 349' is ambiguous",
    ),
    "test_all::test_number_extraction::2": (
        {"math_verify"},
        "format: '1 000' (a space as thousands separator) is read by upstream's expression extractor, not by "
        "math-verify's LaTeX extraction in a box; the DeepScaleR leg rescues the ProRL verdict",
    ),
    "test_all::test_math_extraction_edge_cases::0": (
        {"math_verify"},
        "format: upstream's own extraction from the prose keeps the sentence's full stop ('2/3.'), which math-verify "
        "cannot read inside \\boxed{}; the DeepScaleR leg rescues the ProRL verdict",
    ),
    "test_yujianll::test_string_extraction::9": (
        {"correct", "math_verify"},
        "upstream disputed: it expects 1 - 1/e to equal 1 + 1/e, a verdict produced by the bug behind defect (c) "
        "(math-verify stops parsing at \\mathrm{e}, so both sides read as 1); mathematically they differ, and the "
        "project says 0",
    ),
    "test_numina_cases::test_numina_cases::24": (
        {"correct", "math_verify"},
        "upstream disputed: the gold is malformed (a literal '\\\\boxed{' never closed) and upstream matches only "
        "because both sides reduce to -1; what the project receives as the gold ('{W(n) = 1 \\,') means nothing",
    ),
}

# two tests only check that inline $..$ / \(..\) may not span lines: no answer to box, n/a in prompt form
MATH_SCORED = [c for c in MATH if c["prompt_form"]["final_text"] is not None]


@pytest.mark.parametrize("case", MATH_SCORED, ids=[c["id"] for c in MATH_SCORED])
def test_math_verify_case_agrees_in_prompt_form(case):
    form = case["prompt_form"]
    item = {"id": f"upstream-math/{case['id']}", "scorer": "math", "answer": form["gold_answer"]}
    result = score(item, THINK_MATH + form["final_text"])
    verdicts = {"correct": int(result.correct), "math_verify": int(bool(result.math_verify))}
    differ, reason = KNOWN_DIFFERENCES_MATH.get(case["id"], (set(), ""))
    for name, verdict in verdicts.items():
        if name in differ:
            assert verdict != case["expected"], f"{name} now agrees with upstream: update the table ({reason})"
        else:
            assert verdict == case["expected"], f"{name}: {case['source']} expects {case['expected']} ({result.error})"


def test_math_known_differences_name_real_cases():
    ids = {c["id"] for c in MATH_SCORED}
    assert set(KNOWN_DIFFERENCES_MATH) <= ids
    assert len(MATH) == 270 and len(MATH_SCORED) == 268


# defect (c), the inherited math-verify bug (not upstream cases: its own examples), in prompt form
MATHRM_E = [
    ("2e-vs-2", "2\\mathrm{e}", "2", False),
    ("2e^3-vs-2", "2\\mathrm{e}^{3}", "2", False),
    ("2e-vs-2e", "2\\mathrm{e}", "2e", True),
]


@pytest.mark.parametrize("pred, gold, expected", [c[1:] for c in MATHRM_E], ids=[c[0] for c in MATHRM_E])
def test_math_mathrm_e_is_eulers_number(pred, gold, expected):
    result = score(
        {"id": "mathrm-e", "scorer": "math", "answer": gold}, f"{THINK_MATH}The final answer is $\\boxed{{{pred}}}$."
    )
    assert (result.correct, bool(result.math_verify)) == (expected, expected)


# -------------------------------------------------------------------------------------------------- Reasoning Gym
RG_TASKS = list(dict.fromkeys(c["task"] for c in RG))
# (case id, answer kind) -> reason. Empty: every answer agrees in every wrapping.
KNOWN_DIFFERENCES_RG: dict[tuple[str, str], str] = {}


def _wrappings(answer: str, draft: str) -> dict[str, str]:
    """The answer in the template's <answer> format, three ways."""
    return {
        "tag": f"<think>Let me solve this.</think>\n<answer>{answer}</answer>",
        "spaced": f"<think>Let me solve this.</think>\n\n<answer>\n  {answer}  \n</answer>\n",
        "draft": f"<think>A first try: <answer>{draft}</answer> No, let me check again.</think>\n<answer>{answer}</answer>",
    }


def _expected(answer: dict) -> float:
    """The library's score as the project keeps it: clamped to [0, 1]; 0 where score_answer raised."""
    value = answer["upstream_score"]
    return 0.0 if value is None else min(1.0, max(0.0, value))


@pytest.mark.parametrize("task", RG_TASKS)
def test_reasoning_gym_scores_agree_with_the_library(task):
    cases = [c for c in RG if c["task"] == task]
    assert len(cases) == 15
    disagreements = []
    for case in cases:
        answers = {a["kind"]: a for a in case["answers"]}
        for kind, answer in answers.items():
            draft = answers["perturbed" if kind == "gold" else "gold"]["answer"]
            expected = _expected(answer)
            for wrapping, response in _wrappings(answer["answer"], draft).items():
                result = score(case["item"], response)
                agrees = abs(result.score - expected) < 1e-9 and result.correct == (expected == 1.0)
                if agrees == ((case["id"], kind) in KNOWN_DIFFERENCES_RG):
                    disagreements.append((case["id"], kind, wrapping, expected, result.score, result.error))
    assert disagreements == []


# defect (b): a response cut off inside <think>, and a tagged draft inside a closed <think> with none after it
REASONING_BLOCK_ONLY = {
    "cut_off": "<think>Let me solve this. <answer>{gold}</answer> Hmm, but wait",
    "closed": "<think>Let me solve this. <answer>{gold}</answer></think>\nThat is my answer.",
}


@pytest.mark.parametrize("form", REASONING_BLOCK_ONLY)
@pytest.mark.parametrize("task", RG_TASKS)
def test_reasoning_gym_answer_only_inside_the_reasoning_block_scores_zero(task, form):
    """Defect (b): an answer that appears only inside <think> is never scored, as in every family."""
    scored = []
    for case in (c for c in RG if c["task"] == task):
        gold = case["answers"][0]["answer"]
        result = score(case["item"], REASONING_BLOCK_ONLY[form].format(gold=gold))
        if result.score != 0 or result.correct:
            scored.append((case["id"], result.score))
    assert scored == []


@pytest.mark.parametrize("task", ["basic_arithmetic", "gcd", "maze", "family_relationships"])
def test_reasoning_gym_items_are_what_the_project_generates(task):
    """The stored items are brorl.benchmarks.rg.generate_task's records (less the prompt), so the scorer receives
    what it receives in the workflow (tasks whose generation does not depend on the hash seed)."""
    from brorl.benchmarks.rg import generate_task

    records = generate_task(task, 15, 4242, "rg_upstream")
    stored = [c["item"] for c in RG if c["task"] == task]
    assert [{k: v for k, v in json.loads(json.dumps(r)).items() if k != "prompt"} for r in records] == stored


# ----------------------------------------------------------------------------------------------------------- shared


def test_case_files_carry_their_sources():
    assert len(IFEVAL) == 100 and len(IFEVAL_SCORED) == 83
    assert len(RG) == 540 and len(RG_TASKS) == 36
    for rows in (IFEVAL, MATH, RG):
        ids = [r["id"] for r in rows]
        assert len(set(ids)) == len(ids)
        assert all(r.get("source") for r in rows)
    assert (UPSTREAM / "PROVENANCE.md").is_file()
    assert sum(f.stat().st_size for f in UPSTREAM.iterdir() if f.is_file()) < 2_000_000


def test_defect_cases_name_real_tests():
    """Every DEFECT_CASES entry is a parametrized test id of this module or one of its test functions."""
    ids = {f"test_ifeval_check_agrees_with_google[{c['id']}-{f}]" for c in IFEVAL_SCORED for f in ("plain", "think")}
    ids |= {f"test_ifeval_arguments_google_refuses_are_refused[{c['id']}]" for c in IFEVAL_REJECTS}
    ids |= {f"test_math_mathrm_e_is_eulers_number[{c[0]}]" for c in MATHRM_E}
    for entry in (e for entries in DEFECT_CASES.values() for e in entries):
        assert entry in ids or (entry.startswith("test_") and callable(globals().get(entry))), entry
