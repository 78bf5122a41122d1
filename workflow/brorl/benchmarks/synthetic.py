"""Small tasks generated offline, one generator per family, for the tiny preset and the tests.

``arithmetic`` and ``sums`` (math: exact integers in \\boxed{}), ``stem`` (a quantity from a formula, or a word
answer), ``code`` (a stdin/stdout program with tests), ``instructions`` (IFEval-style instructions with their ids and
arguments). Deterministic per (items, seed) and version; graded by the family's own verifier.
"""

from __future__ import annotations

import random

from .records import new_record
from .registry import MATH_SUFFIX

VERSION = "v1"


def arithmetic(items: int, seed: int, benchmark: str = "arithmetic") -> list[dict]:
    """``items`` problems a op b [op c] with small non-negative integers and an integer answer."""
    rng = random.Random(f"synthetic:arithmetic:{VERSION}:{seed}")
    records = []
    for i in range(items):
        a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
        form = rng.choice(("{a} + {b}", "{a} - {b}", "{a} * {c}", "{a} + {b} * {c}", "({a} + {b}) * {c}"))
        expr = form.format(a=a, b=b, c=c)
        value = eval(expr, {"__builtins__": {}})  # our own digits and operators only
        problem = f"Compute {expr}."
        records.append(
            {
                "id": f"{benchmark}/{i}",
                "benchmark": benchmark,
                "family": "math",
                "prompt": f"{problem} {MATH_SUFFIX}",
                "answer": str(value),
                "scorer": "math",
                "metadata": {
                    "generator": f"synthetic:arithmetic@{VERSION}",
                    "seed": seed,
                    "index": i,
                    "problem": problem,
                },
            }
        )
    return records


def sums(items: int, seed: int, benchmark: str = "sums") -> list[dict]:
    """``items`` sums a + b of digits 0..4 (25 problems, answers 0..8): the easy task the tiny model can learn within
    a few RL steps."""
    rng = random.Random(f"synthetic:sums:{VERSION}:{seed}")
    records = []
    for i in range(items):
        a, b = rng.randint(0, 4), rng.randint(0, 4)
        problem = f"Compute {a} + {b}."
        records.append(
            {
                "id": f"{benchmark}/{i}",
                "benchmark": benchmark,
                "family": "math",
                "prompt": f"{problem} {MATH_SUFFIX}",
                "answer": str(a + b),
                "scorer": "math",
                "metadata": {"generator": f"synthetic:sums@{VERSION}", "seed": seed, "index": i, "problem": problem},
            }
        )
    return records


# word answers of the stem generator: (question, answer)
STEM_FACTS = (
    ("Which gas do green plants take from the air for photosynthesis?", "carbon dioxide"),
    ("What is the chemical symbol of sodium?", "Na"),
    ("Which particle of an atom carries a negative charge?", "electron"),
    ("Is the melting of ice endothermic or exothermic?", "endothermic"),
)
# instructions of the instructions generator: (IFEval id, kwargs, the sentence that asks for it)
INSTRUCTIONS = (
    ("change_case:english_lowercase", {}, "Your entire response must be in lowercase letters, no capitals."),
    ("punctuation:no_comma", {}, "Do not use any commas in your response."),
    ("detectable_format:title", {}, "Give your answer a title wrapped in double angular brackets, like <<title>>."),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 40}, "Answer in less than 40 words."),
    (
        "startend:end_checker",
        {"end_phrase": "Is there anything else I can help with?"},
        "Finish your response with the exact phrase 'Is there anything else I can help with?'.",
    ),
)
TOPICS = ("the sea", "a red bicycle", "autumn leaves", "a quiet library", "the moon", "fresh bread")


def stem(items: int, seed: int, benchmark: str = "stem") -> list[dict]:
    """Distance = speed x time (a number) or a science fact (words), answer in \\boxed{}."""
    rng = random.Random(f"synthetic:stem:{VERSION}:{seed}")
    records = []
    for i in range(items):
        if i % 2:
            problem, answer = STEM_FACTS[rng.randrange(len(STEM_FACTS))]
        else:
            v, s = rng.randint(2, 9), rng.randint(2, 9)
            problem, answer = f"A cart moves at {v} m/s for {s} s. How many metres does it travel?", str(v * s)
        meta = {"generator": f"synthetic:stem@{VERSION}", "seed": seed, "index": i, "problem": problem}
        records.append(new_record(benchmark, i, "stem", f"{problem} {MATH_SUFFIX}", meta, answer=answer))
    return records


def code(items: int, seed: int, benchmark: str = "code") -> list[dict]:
    """Read two integers from standard input and print one combination of them; three tests each."""
    rng = random.Random(f"synthetic:code:{VERSION}:{seed}")
    ops = (
        ("sum", lambda a, b: a + b),
        ("product", lambda a, b: a * b),
        ("larger", max),
        ("difference a - b", lambda a, b: a - b),
    )
    records = []
    for i in range(items):
        name, fn = ops[rng.randrange(len(ops))]
        pairs = [(rng.randint(-20, 20), rng.randint(-20, 20)) for _ in range(3)]
        problem = (
            f"Read two integers a and b (one line, separated by a space) from standard input and print their "
            f"{name}. Put your Python program in a ```python code block."
        )
        tests = {"inputs": [f"{a} {b}\n" for a, b in pairs], "outputs": [f"{fn(a, b)}\n" for a, b in pairs]}
        meta = {"generator": f"synthetic:code@{VERSION}", "seed": seed, "index": i, "problem": problem}
        records.append(new_record(benchmark, i, "code", problem, meta, tests=tests))
    return records


def instructions(items: int, seed: int, benchmark: str = "instructions") -> list[dict]:
    """A short writing task with one or two IFEval instructions (ids and kwargs as IFEval records carry them)."""
    rng = random.Random(f"synthetic:instructions:{VERSION}:{seed}")
    records = []
    for i in range(items):
        chosen = rng.sample(INSTRUCTIONS, rng.randint(1, 2))
        problem = f"Write two sentences about {rng.choice(TOPICS)}. " + " ".join(c[2] for c in chosen)
        meta = {
            "generator": f"synthetic:instructions@{VERSION}",
            "seed": seed,
            "index": i,
            "problem": problem,
            "instruction_id_list": [c[0] for c in chosen],
            "kwargs": [dict(c[1]) for c in chosen],
        }
        records.append(new_record(benchmark, i, "instruction_following", problem, meta))
    return records


MAKERS = {"arithmetic": arithmetic, "sums": sums, "stem": stem, "code": code, "instructions": instructions}
GENERATORS = tuple(MAKERS)


def generate(name: str, items: int, seed: int, benchmark: str) -> list[dict]:
    """``items`` records of generator ``name``; ValueError naming the known generators for an unknown one."""
    if name not in MAKERS:
        raise ValueError(f"unknown synthetic generator {name!r} (known: {', '.join(GENERATORS)})")
    return MAKERS[name](items, seed, benchmark)
