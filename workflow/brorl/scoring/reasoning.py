"""The text the verifiers score, the same in training rewards (both engines) and evaluation.

The verifiers have one truncation rule, `final_text`: a response that opened ``<think>`` and never closed it was
cut off inside its reasoning, and scores 0; otherwise only the text after the last ``</think>`` is scored (every
family: math, STEM, code, instruction following, Reasoning Gym). Two things stand between a generated response and
that rule:

* Chat templates that open the reasoning block themselves. The DeepSeek-R1-Distill template (and those derived from
  it) ends the generation prompt with ``<think>\\n``, so the response holds only the closing tag; a response cut off
  mid-reasoning then holds neither tag, and its scratch ``\\boxed{}`` would be scored. `as_scored` gives such a
  response its opening tag back, so the one rule applies to it.
* Special tokens in the text. OpenRLHF decodes prompt + response with ``skip_special_tokens=False``, so a response
  that stopped on EOS ends with the EOS string (``<｜end▁of▁sentence｜>``), which fails "end your response with",
  quotation, JSON and all-caps checks. `strip_special_tail` removes the trailing special tokens, as vLLM's own
  detokenisation (``skip_special_tokens=True``, what the embedded engine and evaluation score) does.

Pure: string functions, and `template_opens_reasoning` for any tokenizer with ``apply_chat_template``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

OPEN, CLOSE = "<think>", "</think>"


def final_text(response: str) -> str | None:
    """The answer the verifiers score: the text after the last ``</think>``, left-stripped; the whole response where
    it has no reasoning tags; None where ``<think>`` was opened and never closed (cut off inside the reasoning).

    Left-stripped because a model writes a blank line after ``</think>``, and IFEval's paragraph checks (Google's
    ``nth_paragraph_first_word``) count it as an empty first paragraph yet index the unfiltered list, so paragraph n
    is read as n-1 and every right answer fails; lm-evaluation-harness's IFEval strips it the same way."""
    if CLOSE in response:
        return response.rsplit(CLOSE, 1)[1].lstrip()
    return None if OPEN in response else response


def opens_reasoning(prompt_text: str) -> bool:
    """Whether a templated prompt leaves a reasoning block open for the response (its last ``<think>`` unclosed)."""
    position = prompt_text.rfind(OPEN)
    return position >= 0 and CLOSE not in prompt_text[position:]


def template_opens_reasoning(tokenizer: Any) -> bool:
    """Whether `tokenizer`'s chat template opens the reasoning block in the generation prompt."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True)
    return opens_reasoning(text)


def as_scored(response: str, reasoning_opened: bool) -> str:
    """The response as the verifiers must see it: with the opening tag the template wrote, where it wrote one."""
    if reasoning_opened and not response.lstrip().startswith(OPEN):
        return OPEN + response
    return response


def strip_special_tail(text: str, special_tokens: Iterable[str]) -> str:
    """`text` without the special tokens at its end (EOS, end-of-turn, padding; repeated ones too)."""
    tokens = sorted({t for t in special_tokens if t}, key=len, reverse=True)
    stripped = True
    while stripped:
        stripped = False
        for token in tokens:
            if text.endswith(token):
                text, stripped = text[: -len(token)], True
                break
    return text
