"""The text the verifiers score: a chat template that opens <think> itself, and the special tokens OpenRLHF's decode
leaves at the end of a response (brorl.scoring.reasoning), with both template styles built offline."""

from __future__ import annotations

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
