"""Instruction-following verifier (the IFEval family): Google's IFEval checkers, as maintained in lighteval 0.13.0.

Each item lists IFEval instruction ids and their arguments (``metadata.instruction_id_list`` / ``metadata.kwargs``,
the layout of IFEval and of Llama-Nemotron's instruction-following data). The response after ``</think>`` is checked
against each instruction with the library's own ``check_following`` (strict: the response as written);
score = the fraction of instructions followed (ProRL's continuous IF reward), correct = all of them followed.

Offline: two checkers split sentences with NLTK's ``punkt_tab`` data, which NLTK downloads from GitHub. The data is
taken from the copy inside the pinned llama-index-core wheel (installed without dependencies and never imported);
``check_ready`` says clearly when it is missing. langdetect is seeded, since it is random otherwise.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import tempfile
from pathlib import Path

from .reasoning import final_text
from .result import Score, failed

REGISTRY_MODULE = "lighteval.tasks.tasks.ifeval.instructions_registry"


class InstructionsUnavailable(RuntimeError):
    """The IFEval checkers or the sentence-splitting data they need cannot be loaded here."""


def punkt_folder() -> Path | None:
    """NLTK data folder inside the installed llama-index-core wheel (found without importing it), or None."""
    spec = importlib.util.find_spec("llama_index")
    for root in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(root) / "core" / "_static" / "nltk_cache"
        if (folder / "tokenizers" / "punkt_tab" / "english").is_dir():
            return folder
    return None


@functools.cache
def registry() -> dict:
    """IFEval id -> checker class, with NLTK pointed at local data (no download attempt) and langdetect seeded."""
    import nltk

    folder = punkt_folder()
    if folder is not None and str(folder) not in nltk.data.path:
        nltk.data.path.insert(0, str(folder))
    # lighteval downloads the old `punkt` resource at import when it cannot find it; an empty folder of that name
    # satisfies the lookup (sentence splitting itself uses punkt_tab above)
    stub = Path(tempfile.gettempdir()) / f"brorl-nltk-{os.getuid()}"
    (stub / "tokenizers" / "punkt").mkdir(parents=True, exist_ok=True)
    if str(stub) not in nltk.data.path:
        nltk.data.path.append(str(stub))
    import langdetect

    langdetect.DetectorFactory.seed = 0
    try:
        module = importlib.import_module(REGISTRY_MODULE)
    except ImportError as e:
        raise InstructionsUnavailable(
            f"the IFEval checkers are not installed ({e}); install them with "
            "`pip install --no-deps -r envs/ifeval.txt` (make setup does)"
        ) from e
    return dict(module.INSTRUCTION_DICT)


def check_ready() -> None:
    """InstructionsUnavailable unless the checkers import and NLTK finds punkt_tab (needed to count sentences)."""
    import nltk

    registry()
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError as e:
        raise InstructionsUnavailable(
            "NLTK's punkt_tab data is missing (the IFEval sentence checks need it): install the pinned "
            "llama-index-core wheel that carries it (`pip install --no-deps -r envs/ifeval.txt`), or run "
            "`python -m nltk.downloader punkt_tab` where the network allows"
        ) from e


LETTER_FREQUENCY = "keywords:letter_frequency"


def _checker(iid: str, kwargs: dict | None):
    """The library's checker of instruction ``iid`` with its arguments (nulls removed); KeyError for an unknown id."""
    checker = registry()[iid](iid)
    kwargs = clean_kwargs(kwargs)
    checker.build_description(**kwargs)
    if iid == LETTER_FREQUENCY:
        _count_the_character(checker, kwargs)
    return checker


def _count_the_character(checker, kwargs: dict) -> None:
    """letter_frequency as Google's checker has it since google-research@45e9105: the given character itself is
    counted (lighteval 0.13.0's copy draws a random letter, unseeded, for anything outside a-z, so two IFEval prompts
    with `#` and `!` scored differently from call to call), and a letter of several characters or a negative
    frequency is refused (the copy drew random values instead)."""
    letter, frequency = kwargs.get("letter"), kwargs.get("let_frequency")
    if letter is not None and len(str(letter).strip()) != 1:
        raise ValueError(f"letter must be one character, not {letter!r}")
    if frequency is not None and int(frequency) < 0:
        raise ValueError(f"let_frequency must be >= 0, not {frequency}")
    if letter is not None:
        checker._letter = str(letter).strip().lower()  # the attribute check_following counts


def instruction_problems(ids: list[str], kwargs: list[dict]) -> list[str]:
    """Why these instructions cannot be checked (unknown id, arguments the checker does not take), or []."""
    known = registry()
    problems = []
    for iid, kw in zip(ids, kwargs):
        if iid not in known:
            problems.append(f"unknown instruction id {iid!r}")
            continue
        try:
            _checker(iid, kw)
        except (TypeError, ValueError) as e:
            problems.append(f"instruction {iid!r}: arguments {kw} rejected ({type(e).__name__}: {e})"[:240])
    return problems


def clean_kwargs(kwargs: dict | None) -> dict:
    """The arguments without null values (tables of the dataset pad every row with all argument names)."""
    return {k: v for k, v in (kwargs or {}).items() if v is not None}


def followed(response: str, ids: list[str], kwargs: list[dict], prompt: str | None = None) -> list[bool]:
    """Strict IFEval result of each instruction (an empty response follows none)."""
    results = []
    for iid, kw in zip(ids, kwargs):
        checker = _checker(iid, kw)
        if prompt is not None and "prompt" in (checker.get_instruction_args() or {}):
            checker.build_description(prompt=prompt)  # repeat_prompt compares with the request
        results.append(bool(response.strip()) and bool(checker.check_following(response)))
    return results


def score_instructions(item: dict, response: str) -> Score:
    """Fraction of the item's instructions the final answer follows; correct when it follows all."""
    text = final_text(response) if isinstance(response, str) else None
    if text is None:
        return failed("truncated")
    meta = item["metadata"]
    results = followed(text, meta["instruction_id_list"], meta["kwargs"], meta.get("problem"))
    share = sum(results) / len(results)
    return Score(share, all(results))
