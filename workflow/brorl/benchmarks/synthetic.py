"""``synthetic:arithmetic``: small integer arithmetic problems generated offline (the tiny preset's math set).

Deterministic per (items, seed) and version: answers are exact integers, graded by the math verifier in \\boxed{}.
"""

from __future__ import annotations

import random

from .registry import MATH_SUFFIX

VERSION = "v1"
GENERATORS = ("arithmetic", "sums")


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
                "metadata": {"generator": f"synthetic:arithmetic@{VERSION}", "seed": seed, "index": i,
                             "problem": problem},  # fmt: skip
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


def generate(name: str, items: int, seed: int, benchmark: str) -> list[dict]:
    if name == "arithmetic":
        return arithmetic(items, seed, benchmark)
    if name == "sums":
        return sums(items, seed, benchmark)
    raise ValueError(f"unknown synthetic generator {name!r} (known: {', '.join(GENERATORS)})")
