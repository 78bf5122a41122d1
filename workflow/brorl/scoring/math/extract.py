"""Extraction of the final answer: the text after the last ``</think>``, then the content of the last
``\\boxed{...}`` (balanced braces), ``\\boxed x`` or ``\\fbox{...}``. A response that opened ``<think>`` but never
closed it was truncated; a response with neither tag is read whole.
"""

from __future__ import annotations

import re

from ..reasoning import final_text

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")


def _balanced(text: str, start: int) -> tuple[str | None, int]:
    """Content of the brace group opening at text[start] == '{' and the index after it; (None, start) if open."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":  # \{ and \} are literal braces, \\ is a line break: skip the escaped character
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
        i += 1
    return None, start


def last_boxed(text: str) -> str | None:
    """Content of the last top-level \\boxed{...} / \\fbox{...} / \\boxed x in text, or None."""
    pos, last = 0, None
    while True:
        m = _BOX_RE.search(text, pos)
        if m is None:
            return last
        k = m.end()
        while k < len(text) and text[k] in " \t":
            k += 1
        if k < len(text) and text[k] == "{":
            content, end = _balanced(text, k)
            if content is None:  # never closed: not an answer
                pos = m.end()
                continue
            last, pos = content, end
        elif k > m.end() and k < len(text):  # "\boxed 5$": up to the closing $ or the end of the line
            content = re.split(r"[$\n]", text[k:], maxsplit=1)[0].strip()
            if content:
                last = content
            pos = k + max(1, len(content))
        else:
            pos = m.end()


def extract_final_answer(response: str) -> str | None:
    """The last boxed answer after the last </think> (whole response if no tags); None if truncated or unboxed."""
    text = final_text(response) if isinstance(response, str) else None
    if text is None:
        return None
    answer = last_boxed(text)
    if answer is None:
        return None
    answer = answer.strip()
    return answer or None
