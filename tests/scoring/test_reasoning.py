"""The text the verifiers score: a chat template that opens <think> itself, and the special tokens OpenRLHF's decode
leaves at the end of a response (brorl.scoring.reasoning), with both template styles built offline."""

from __future__ import annotations

import pytest
from brorl.models.tiny import build_tokenizer
from brorl.scoring.math import score_math
from brorl.scoring.reasoning import as_scored, opens_reasoning, strip_special_tail, template_opens_reasoning
from helpers import r1_style_tokenizer

ITEM = {"id": "m/1", "scorer": "math", "answer": "4"}


def test_which_templates_open_the_reasoning_block():
    assert not template_opens_reasoning(build_tokenizer(1024))  # ChatML: the response writes both tags
    assert template_opens_reasoning(r1_style_tokenizer())  # R1-distill: "<｜Assistant｜><think>\n"
    assert opens_reasoning("…<｜Assistant｜><think>\n") and not opens_reasoning("<think>x</think> now answer")
    assert not opens_reasoning("no tags at all")


def test_a_response_cut_off_inside_a_template_opened_block_scores_zero():
    cut_off = "Let me try 2+2 = \\boxed{4} maybe, but wait"  # neither tag: the template opened the block
    finished = "2+2 is 4.</think> The answer is \\boxed{4}."
    assert score_math(ITEM, cut_off).correct  # what would be scored without the rule: the scratch box
    assert score_math(ITEM, as_scored(cut_off, True)).error == "truncated"
    assert score_math(ITEM, as_scored(finished, True)).correct
    assert as_scored(cut_off, False) == cut_off  # ChatML: unchanged
    assert as_scored("<think>x</think>y", True) == "<think>x</think>y"  # a model that wrote the tag anyway


def test_special_tokens_leave_the_end_only():
    tokens = ["<｜end▁of▁sentence｜>", "<|endoftext|>"]
    assert strip_special_tail("Any other questions?<｜end▁of▁sentence｜>", tokens) == "Any other questions?"
    assert strip_special_tail("a<|endoftext|><|endoftext|>", tokens) == "a"
    assert strip_special_tail("keep <|endoftext|> inside", tokens) == "keep <|endoftext|> inside"
    assert strip_special_tail("no tokens", []) == "no tokens"


def test_every_family_scores_the_left_stripped_text_after_the_reasoning_block():
    from brorl.scoring.reasoning import final_text

    assert final_text("<think>plan</think>\n\nFirst.\n\nSecond.") == "First.\n\nSecond."
    assert final_text("no tags\n\nkept as written") == "no tags\n\nkept as written"
    assert final_text("<think>cut off <answer>4</answer>") is None


def test_ifeval_paragraphs_are_counted_after_the_blank_line_a_model_writes_after_thinking():
    """Google's nth_paragraph_first_word counts an empty first paragraph but indexes the unfiltered list: with the
    blank line after </think> kept, paragraph 2 was read as paragraph 1 and every right answer failed."""
    from brorl.scoring.instructions import score_instructions

    item = {
        "metadata": {
            "instruction_id_list": ["length_constraints:nth_paragraph_first_word"],
            "kwargs": [{"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "second"}],
        }
    }
    right = "<think>two paragraphs, the second opens with 'second'</think>\n\nFirst one here.\n\nSecond one here."
    assert score_instructions(item, right).correct
    assert not score_instructions(item, right.replace("Second one", "Another one")).correct


def test_a_reasoning_gym_answer_inside_the_reasoning_block_is_never_scored():
    """The truncation rule of every family: a response cut off inside <think> scores 0, and a tagged draft inside a
    closed <think> is not the answer (reasoning-gym's extract_answer alone would take either)."""
    from brorl.benchmarks.rg import generate_task
    from brorl.scoring.reasoning_gym import score_reasoning_gym

    (item,) = generate_task("basic_arithmetic", 1, 4242, "rg_arithmetic")
    gold = item["answer"]
    assert score_reasoning_gym(item, f"<think>so</think>\n<answer>{gold}</answer>").correct
    assert score_reasoning_gym(item, f"<think>draft <answer>{gold}</answer> and then I ran out").error == "truncated"
    closed = score_reasoning_gym(item, f"<think>draft <answer>{gold}</answer></think> done")
    assert closed.score == 0 and closed.error.startswith("no <answer>")
    wrong_draft = score_reasoning_gym(item, f"<think><answer>0</answer></think>\n<answer>{gold}</answer>")
    assert wrong_draft.correct


@pytest.mark.parametrize(
    "pred, gold, right",
    [
        (r"2\mathrm{e}", "2", False),  # math-verify 0.9.0 read it as 2 (unit dropped)
        (r"2\mathrm{e}", "2e", True),  # ... and so missed 2e
        (r"2\mathrm{e}^{3}", "2", False),
        (r"1 - \frac{1}{\mathrm{e}}", r"1 + \frac{1}{e}", False),  # it stopped parsing at \mathrm{e}: both read as 1
        (r"1 - \frac{1}{\mathrm{e}}", r"1 - \frac{1}{e}", True),
        (r"\mathrm{e}^{2}", "e^2", True),  # \mathrm{e} alone was a symbol e, not Euler's number
        (r"2\text{i}", "2", False),
        (r"10\,\mathrm{cm}", "10", True),  # a real unit is still dropped
    ],
)
def test_eulers_number_and_i_in_a_font_are_constants_not_units(pred, gold, right):
    score = score_math({"id": "m/e", "scorer": "math", "answer": gold}, f"<think>x</think> \\boxed{{{pred}}}")
    assert score.correct is right and score.math_verify is right, score


def test_letter_frequency_counts_the_character_itself_on_every_call():
    """lighteval's copy drew a random letter for `!` (unseeded); Google's checker counts the character."""
    from brorl.scoring.instructions import instruction_problems, score_instructions

    kwargs = {"letter": "!", "let_frequency": 6, "let_relation": "at least"}
    item = {"metadata": {"instruction_id_list": ["keywords:letter_frequency"], "kwargs": [kwargs]}}
    assert all(score_instructions(item, "Yes!!!!!! Really! No?").correct for _ in range(20))
    assert not any(score_instructions(item, "Yes!! Really! No?").correct for _ in range(20))
    assert instruction_problems(["keywords:letter_frequency"], [dict(kwargs, letter="ab")])
    assert instruction_problems(["keywords:letter_frequency"], [dict(kwargs, let_frequency=-1)])
