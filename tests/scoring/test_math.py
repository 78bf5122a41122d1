"""Math verifier (brorl.scoring.math) on the real DeepScaleR golds and on hand-made cases.

The real golds are the repository's copy of DeepScaleR's test sets (data/benchmarks/deepscaler, MIT).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import pytest
from brorl.ops.speed.scoring_math import MATH_FILES, load_items
from brorl.scoring.math import (
    deepscaler_equal,
    extract_final_answer,
    normalize_gold,
    score_math,
    set_timeouts,
)


def _deepscaler_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "benchmarks" / "deepscaler"


def load_math_items() -> list[dict]:
    """The 1,560 DeepScaleR math items as benchmark items (the repository's copy; a missing file fails)."""
    folder = _deepscaler_dir()
    missing = [name for name in MATH_FILES if not (folder / f"{name}.json").is_file()]
    assert not missing, f"the repository's DeepScaleR files are missing under {folder}: {missing}"
    return load_items(folder)


def model_style(gold) -> str:
    """A gold written the way a model answers: reasoning, </think>, then the first gold boxed."""
    first = gold[0] if isinstance(gold, list) else gold
    if isinstance(first, float) and first.is_integer():
        first = int(first)
    text = str(first).strip().replace("$", "")
    return f"<think>Let me work this out step by step.</think> The answer is \\boxed{{{text}}}."


@pytest.fixture(scope="module")
def items() -> list[dict]:
    return load_math_items()


def test_real_golds_score_correct(items):
    assert len(items) == 1560
    exceptions = []
    for item in items:
        s = score_math(item, model_style(item["answer"]))
        if not s.correct:
            exceptions.append((item["id"], repr(item["answer"])[:80], s.error or "rejected"))
    print(f"\n{len(items) - len(exceptions)}/{len(items)} golds accepted; exceptions: {exceptions}")
    assert exceptions == []  # the exact list: any change shows here
    assert len(exceptions) <= 0.01 * len(items)


def _derangement(items: list[dict]) -> list[int]:
    """For each item, another item whose golds share no normalised string with its own (deterministic)."""
    n = len(items)
    golds = [set(normalize_gold(it["answer"])) for it in items]
    perm = [(i + n // 2 + 1) % n for i in range(n)]  # a rotation: a permutation with no fixed point
    for i in range(n):
        step = 1
        while golds[i] & golds[perm[i]] or perm[i] == i:
            perm[i] = (perm[i] + step) % n
            step += 1
    return perm


# wrong answers that are the same value written another way (another item's gold equals this one's)
KNOWN_EQUAL_PAIRS: set[tuple[str, str]] = set()


def test_wrong_golds_rejected(items):
    perm = _derangement(items)
    accepted = []
    for i, item in enumerate(items):
        other = items[perm[i]]
        s = score_math(item, model_style(other["answer"]))
        if s.correct:
            accepted.append((item["id"], other["id"], repr(item["answer"])[:40], repr(other["answer"])[:40]))
    print(f"\n{len(accepted)}/{len(items)} wrong answers accepted: {accepted}")
    assert len(accepted) <= 0.01 * len(items)


# ---------------------------------------------------------------------------------------------------------------
# extraction


def _item(answer, id_="t/0") -> dict:
    return {
        "id": id_,
        "benchmark": "t",
        "family": "math",
        "prompt": "",
        "answer": answer,
        "scorer": "math",
        "metadata": {},
    }


def test_truncated_think_scores_zero():
    s = score_math(_item("5"), "<think>so the answer is \\boxed{5} but wait")
    assert (s.score, s.correct, s.error) == (0.0, False, "truncated")
    assert extract_final_answer("<think>\\boxed{5}") is None


def test_last_boxed_wins():
    r = "</think> First \\boxed{3}, no, actually \\boxed{5}."
    assert extract_final_answer(r) == "5"
    assert score_math(_item("5"), r).correct
    assert not score_math(_item("3"), r).correct


def test_nested_braces_and_variants():
    assert extract_final_answer("</think> \\boxed{\\frac{1}{\\sqrt{2}}}") == "\\frac{1}{\\sqrt{2}}"
    assert extract_final_answer("</think> \\boxed{\\{1,2\\}}") == "\\{1,2\\}"
    assert extract_final_answer("</think> $\\boxed 7$") == "7"
    assert extract_final_answer("</think> \\fbox{12}") == "12"
    assert extract_final_answer("no tags at all, \\boxed{4}") == "4"
    assert extract_final_answer("</think> \\boxed{\\boxed{6}}") == "\\boxed{6}"
    assert score_math(_item("6"), "</think> \\boxed{\\boxed{6}}").correct
    assert score_math(_item("\\frac{\\sqrt{2}}{2}"), "</think> \\boxed{\\frac{1}{\\sqrt{2}}}").correct


def test_no_boxed_is_an_error():
    s = score_math(_item("204"), "<think>hm</think> I think it is 204")
    assert (s.correct, s.error) == (False, "no_final_answer")
    assert score_math(_item("204"), "The answer is \\boxed{").error == "no_final_answer"


def test_answer_before_think_end_ignored():
    r = "<think>maybe \\boxed{5}</think> so the answer is 5"
    assert extract_final_answer(r) is None
    assert score_math(_item("5"), r).error == "no_final_answer"
    r2 = "<think>maybe \\boxed{5}</think> no: \\boxed{6}"
    assert not score_math(_item("5"), r2).correct
    assert score_math(_item("6"), r2).correct


# ---------------------------------------------------------------------------------------------------------------
# golds and equivalences


def test_normalize_gold():
    assert normalize_gold("4.5e33") == ["4.5 \\times 10^{33}"]
    assert normalize_gold(["6.4e-5\n"]) == ["6.4 \\times 10^{-5}"]
    assert normalize_gold(142.0) == ["142"]
    assert normalize_gold(7) == ["7"]
    assert normalize_gold(["$\\frac{1}{2}$", "0.5\n", "0.5"]) == ["\\frac{1}{2}", "0.5"]
    assert normalize_gold("['a', 'b']") == ["a", "b"]
    assert normalize_gold("[1, 2]") == ["[1, 2]"]  # an interval, not a list


@pytest.mark.parametrize(
    ("pred", "gold", "ok"),
    [
        ("4.5 \\times 10^{33}", ["4.5e33\n"], True),
        ("4.5e33", ["4.5e33"], True),
        ("6.4 \\times 10^{-5}", "6.4e-5", True),
        ("4.6 \\times 10^{33}", "4.5e33", False),
        ("7.5 \\times 10^{7}", ["7.5 \\times 10^7", "7.5 \\times 10^7\n"], True),
        ("6630", ["6630.65\n", "6630\n"], True),
        ("\\frac12", "0.5", True),
        ("0.5", "\\frac{1}{2}", True),
        ("142", 142.0, True),
        ("142.0", "142", True),
        ("143", 142.0, False),
        ("025", "25", True),
        ("1,000", "1000", True),
        ("(2,5]", "(2,5]", True),
        ("[2,5)", "(2,5]", False),
        ("(-\\infty, 3]", "(-\\infty,3]", True),
        ("\\left(3, \\frac{\\pi}{2}\\right)", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        ("(3, \\pi)", "\\left( 3, \\frac{\\pi}{2} \\right)", False),
        ("(1,2)", "(2,1)", False),
        ("90^\\circ", "90", True),
        ("41.8^{\\circ}", ["41.8^\\circ\n"], True),
        ("30", "30^\\circ", True),
        ("5 \\text{ cm}", "5", True),
        ("15000", ["15000 \\text{ kcal m}^{-2} \\text{yr}^{-1}\n"], True),
        ("10\\%", "10", True),
        ("x = 3", "3", True),
        ("\\sqrt{18}", "3\\sqrt{2}", True),
        ("2\\sqrt{3}", "3\\sqrt{2}", False),
        ("\\text{(C)}", "C", True),
        ("-1/3", "-\\frac{1}{3}", True),
        ("p - q", "p-q", True),
        ("q - p", "p-q", False),
        ("2^{1009}", "$2^{1009}$", True),
        ("2^{1008}", "$2^{1009}$", False),
        ("123456789012345678", "123456789012345679", False),
        ("\\frac{1}{2n+2}", "$\\frac{1}{2 n+2}$", True),
        ("\\frac{1}{2(n+1)}", "$\\frac{1}{2 n+2}$", True),
        ("\\frac{1}{2n+1}", "$\\frac{1}{2 n+2}$", False),
    ],
)
def test_equivalences(pred, gold, ok):
    s = score_math(_item(gold), f"<think>...</think> \\boxed{{{pred}}}")
    assert s.correct is ok, (pred, gold, s)
    assert s.score == (1.0 if ok else 0.0)


def test_deepscaler_equal_alone():
    # the fast grader must accept the common forms by itself (math-verify is the slower fallback)
    for pred, gold in [
        ("\\frac12", "0.5"),
        ("142.0", "142"),
        ("90^\\circ", "90"),
        ("x=3", "3"),
        ("4.5e33", "4.5 \\times 10^{33}"),
        ("1,000", "1000"),
        ("\\dfrac{3}{4}", "0.75"),
        ("2x+1", "1+2x"),
        ("(1, 2)", "(1,2)"),
    ]:
        assert deepscaler_equal(pred, gold), (pred, gold)
    for pred, gold in [("2", "3"), ("[2,5)", "(2,5]"), ("0.333", "\\frac13"), ("x", "y")]:
        assert not deepscaler_equal(pred, gold), (pred, gold)


def test_timeouts_can_be_disabled():
    set_timeouts(None, None)
    try:
        assert score_math(_item("\\frac{\\sqrt{2}}{2}"), "</think> \\boxed{\\frac{1}{\\sqrt{2}}}").correct
        assert not score_math(_item("3"), "</think> \\boxed{4}").correct
    finally:
        set_timeouts(5, 5)


def test_works_in_a_thread():
    # math-verify's signal.alarm only works in the main thread: elsewhere the timeouts must be switched off
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        s = pool.submit(score_math, _item("\\frac{\\sqrt{2}}{2}"), "</think> \\boxed{\\frac{1}{\\sqrt{2}}}").result()
    assert s.correct and s.error is None


# ---------------------------------------------------------------------------------------------------------------
# pathological answers: bounded time, scored 0


def _score_in_child(conn, answer, response):
    s = score_math(_item(answer), response)
    conn.send((s.score, s.correct, s.error))


@pytest.mark.slow  # each case waits for math-verify's 5 s alarm
@pytest.mark.parametrize("pred", ["9^{9^{9^{9}}}", "\\frac{10^{1000000}}{3}!", "10^{10^{10}}"])
def test_pathological_answer_is_bounded(pred):
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_score_in_child, args=(child, "5", f"</think> \\boxed{{{pred}}}"), daemon=True)
    start = time.monotonic()
    proc.start()
    got = parent.recv() if parent.poll(30) else None
    elapsed = time.monotonic() - start
    if proc.is_alive():
        proc.kill()
    proc.join(5)
    assert got is not None, f"{pred} still running after 30 s"
    assert elapsed < 15, elapsed
    assert got[1] is False and got[0] == 0.0


# ---------------------------------------------------------------------------------------------------------------
# the math-verify-only verdict beside the ProRL grader's


@pytest.mark.parametrize(
    ("pred", "gold", "prorl", "math_verify"),
    [
        ("4.5e33", "4.5e33", True, False),  # math-verify reads e as Euler's number; the DeepScaleR side rewrites it
        ("4.5 \\times 10^{33}", "4.5e33", True, True),
        ("\\frac12", "0.5", True, True),
        ("17", "17", True, True),  # plain integers: the ProRL verdict is exact equality, math-verify still runs
        ("18", "17", False, False),
        ("0.333", "\\frac13", False, False),
    ],
)
def test_math_verify_verdict_is_kept_beside_the_prorl_grader(pred, gold, prorl, math_verify):
    s = score_math(_item(gold), f"<think>...</think> \\boxed{{{pred}}}")
    assert (s.correct, s.math_verify, s.error) == (prorl, math_verify, None), s


def test_unjudged_math_responses_are_false_under_both_graders():
    for response, error in (("<think>no end", "truncated"), ("</think> no box", "no_final_answer")):
        s = score_math(_item("3"), response)
        assert (s.score, s.correct, s.math_verify, s.error) == (0.0, False, False, error)
