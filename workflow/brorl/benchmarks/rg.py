"""Reasoning Gym: generate a category's evaluation items once, with a fixed seed, and freeze them to JSONL.

Generation is only reproducible with PYTHONHASHSEED=0 (isomorphic_strings, knight_swap, polynomial_multiplication,
ransom_note and word_ladder iterate over sets), and codeio and list_functions are not reproducible even then: the
frozen file, not the seed, is the evaluation set. Downstream stages read only the frozen file.

Each record keeps the library entry (question, answer, metadata) that ``score_answer`` needs, in a tagged JSON
encoding that brings tuples and sets back (plain JSON turns arc_agi/rearc's tuple grids into lists, and their gold
answers then score 0.05).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
from decimal import Decimal
from fractions import Fraction
from functools import cache
from importlib import metadata as importlib_metadata

# tasks whose items differ between processes even with PYTHONHASHSEED=0 (reasoning-gym 0.1.25;
# docs/design.md#reasoning-gym-sets-are-frozen-not-regenerated)
NONDETERMINISTIC_TASKS = ("codeio", "list_functions")
CATEGORIES = (
    "algebra",
    "algorithmic",
    "arc",
    "arithmetic",
    "code",
    "cognition",
    "games",
    "geometry",
    "graphs",
    "induction",
    "logic",
)


# ------------------------------------------------------------------------------------------------------- json codec
def encode(obj):
    """JSON-safe copy of a Reasoning Gym value that ``decode`` restores: tuples, sets and non-string dict keys are
    tagged; numpy scalars and arrays become Python values. Sets are sorted by repr, so the bytes never depend on
    the hash seed."""
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v) for v in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"__set__": [encode(v) for v in sorted(obj, key=repr)]}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not (k.startswith("__") and k.endswith("__")) for k in obj):
            return {k: encode(v) for k, v in obj.items()}
        return {"__items__": [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if hasattr(obj, "tolist"):  # numpy scalar or array
        return encode(obj.tolist())
    if isinstance(obj, Fraction):
        return {"__fraction__": str(obj)}
    if isinstance(obj, Decimal):
        return {"__decimal__": str(obj)}
    if isinstance(obj, (datetime.date, datetime.time)):  # datetime.datetime is a date
        return {f"__{type(obj).__name__}__": obj.isoformat()}
    if isinstance(obj, datetime.timedelta):
        return {"__timedelta__": obj.total_seconds()}
    raise TypeError(f"cannot freeze a value of type {type(obj).__name__}: {obj!r:.80}")


_DECODERS = {
    "__fraction__": Fraction,
    "__decimal__": Decimal,
    "__datetime__": datetime.datetime.fromisoformat,
    "__date__": datetime.date.fromisoformat,
    "__time__": datetime.time.fromisoformat,
    "__timedelta__": lambda s: datetime.timedelta(seconds=s),
}


def _hashable(v):
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def decode(obj):
    """Inverse of ``encode``."""
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if isinstance(obj, dict):
        if set(obj) == {"__tuple__"}:
            return tuple(decode(v) for v in obj["__tuple__"])
        if set(obj) == {"__set__"}:
            return {_hashable(decode(v)) for v in obj["__set__"]}
        if set(obj) == {"__items__"}:
            return {_hashable(decode(k)): decode(v) for k, v in obj["__items__"]}
        if len(obj) == 1:
            ((tag, value),) = obj.items()
            if tag in _DECODERS:
                return _DECODERS[tag](value)
        return {k: decode(v) for k, v in obj.items()}
    return obj


# ------------------------------------------------------------------------------------------------------------ tasks
def category_of(task: str) -> str:
    from reasoning_gym.factory import DATASETS

    return DATASETS[task][0].__module__.split(".")[1]


def category_tasks(category: str) -> list[str]:
    """Task names of one category (the module path, as the official eval YAMLs group them), sorted."""
    from reasoning_gym.factory import DATASETS

    tasks = sorted(name for name in DATASETS if name != "composite" and category_of(name) == category)
    if not tasks:
        raise ValueError(f"no Reasoning Gym tasks in category {category!r} (categories: {', '.join(CATEGORIES)})")
    return tasks


@cache
def dataset(task: str, size: int, seed: int):
    """The library dataset an item came from (cached: scoring calls its score_answer with the frozen entry)."""
    import reasoning_gym

    with contextlib.redirect_stdout(sys.stderr):  # bf prints progress dots while it generates
        return reasoning_gym.create_dataset(task, size=size, seed=seed)


def package_version() -> str:
    return importlib_metadata.version("reasoning-gym")


# ------------------------------------------------------------------------------------------------------- generation
def generate_task(task: str, items: int, seed: int, benchmark: str, family: str = "reasoning_gym", render=None):
    """``items`` records of one task; ``render(question) -> prompt``."""
    ds = dataset(task, items, seed)
    records = []
    for i in range(items):
        with contextlib.redirect_stdout(sys.stderr):
            item = ds[i]
        entry = encode({"question": item["question"], "answer": item["answer"], "metadata": item["metadata"]})
        answer = item["answer"]
        records.append(
            {
                "id": f"{benchmark}/{task}/{i}",
                "benchmark": benchmark,
                "family": family,
                "prompt": render(item["question"]) if render else item["question"],
                "answer": None if answer is None else str(answer),
                "scorer": "reasoning_gym",
                "metadata": {"task": task, "index": i, "size": items, "seed": seed, "entry": entry},
            }
        )
    return records


def generate_category(category: str, items_per_task: int, seed: int, spec=None) -> tuple[list[dict], dict]:
    """Records of every task of ``category`` and the facts for its manifest (tasks, versions; the scorer audit
    is brorl.scoring.reasoning_gym.audit)."""
    benchmark = spec.name if spec else f"rg_{category}"
    render = spec.render_prompt if spec else None
    tasks = category_tasks(category)
    if spec is not None and spec.tasks is not None and spec.tasks != len(tasks):
        # the workflow counts this benchmark's problems (and sizes its generation jobs) from the registry's number
        raise ValueError(
            f"{spec.path}: key 'tasks' is {spec.tasks} but reasoning-gym {package_version()} has {len(tasks)} "
            f"tasks in category {category!r}: set tasks: {len(tasks)}"
        )
    records: list[dict] = []
    for task in tasks:
        print(f"generating {task}: {items_per_task} items, seed {seed}", file=sys.stderr)
        records += generate_task(task, items_per_task, seed, benchmark, render=render)
    facts = {
        "category": category,
        "tasks": tasks,
        "items_per_task": items_per_task,
        "seed": seed,
        "reasoning_gym_version": package_version(),
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "nondeterministic_tasks": [t for t in tasks if t in NONDETERMINISTIC_TASKS],
    }
    if os.environ.get("PYTHONHASHSEED") != "0":
        print("WARNING: PYTHONHASHSEED is not 0: some tasks will not regenerate identically", file=sys.stderr)
    return records, facts
