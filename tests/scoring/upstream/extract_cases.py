"""Write the upstream test cases that tests/scoring/test_upstream_cases.py scores through the project's verifiers.

The cases are data taken from other projects' own tests (inputs and the verdict each test expects), never their
code. This script reads:

* IFEval, Google's ``instruction_following_eval`` directory (a checkout of the directory, e.g. the public copy
  github:CN-Steve-Lee/instruction_following_at_scale@9d37927, whose files equal google-research@83282e4):
  ``instructions_test.py`` is executed against recording stand-ins for ``instructions`` and absl's
  ``parameterized``/``absltest`` (no checker runs), which log every ``build_description`` argument set, every
  ``check_following`` response and the assertion applied to it; ``instructions_registry.py`` and the constants of
  ``instructions.py`` are read with ``ast``. Checks of google-research@45e9105's
  ``test_letter_frequency_checker_accepts_punctuation`` / ``..._rejects_invalid_explicit_args`` are added from
  ``--ifeval-supplement`` (that version of instructions_test.py) when given, else from the transcription in
  ``IFEVAL_45E9105`` below (the same inputs and verdicts, written down by hand from that file).
* Math-Verify, a checkout of github:huggingface/Math-Verify: ``tests/test_all.py``, ``test_boxed.py``,
  ``test_numina_cases.py``, ``test_open_thoughts.py``, ``test_strict.py`` and ``test_yujianll.py`` are read with
  ``ast`` (never imported or run): every ``pytest.mark.parametrize`` over gold/pred/expected, with the options the
  test passes (match types, precision, strict, allow_set_relation_comp), plus the literal ``compare_strings`` assert
  of ``test_precision``. The installed math-verify computes what the project receives in "prompt form" (the gold as a
  dataset stores it, the answer a model boxes) and checks that it still gives every upstream verdict itself.
* Reasoning Gym: the installed ``reasoning_gym`` (0.1.25) generates 15 items of each task in ``RG_TASKS`` with seed
  4242 through the project's own ``brorl.benchmarks.rg.generate_task`` (the record the scorer receives), and the
  library's ``score_answer`` scores three answers per item (gold, perturbed, wrong) on its own entry.

Rerun (from the repository root; PYTHONHASHSEED=0 is required, some Reasoning Gym tasks iterate over sets):

    git clone https://github.com/CN-Steve-Lee/instruction_following_at_scale /tmp/ifeval   # then: git -C /tmp/ifeval checkout 9d37927
    git clone https://github.com/huggingface/Math-Verify /tmp/math-verify                   # then: git -C /tmp/math-verify checkout 5d148cf
    PYTHONHASHSEED=0 .venv/bin/python tests/scoring/upstream/extract_cases.py \\
        --ifeval /tmp/ifeval --math-verify /tmp/math-verify [--ifeval-supplement <instructions_test.py@45e9105>]

``--only ifeval|math|rg`` rewrites one file. Output: ifeval_cases.jsonl, math_verify_cases.jsonl and
reasoning_gym_cases.jsonl next to this script (PROVENANCE.md there says where each comes from).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# ----------------------------------------------------------------------------------------------------------- common


def commit_of(checkout: Path) -> str | None:
    """The checkout's HEAD commit, or None when it is not a git work tree."""
    try:
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() or None


def write_jsonl(path: Path, rows: list[dict]) -> None:
    ids = [row["id"] for row in rows]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SystemExit(f"{path.name}: duplicate ids {duplicates[:5]}")
    path.write_text("".join(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n" for row in rows), "utf-8")
    print(f"wrote {path.relative_to(ROOT)}: {len(rows)} cases, {path.stat().st_size:,} bytes", file=sys.stderr)


def module_constants(source: str) -> dict:
    """Module-level ``NAME = <literal>`` and ``NAME = "a" + NAME`` assignments of a Python source."""
    constants: dict = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = evaluate(node.value, constants)
            except ValueError:
                pass
    return constants


def evaluate(node: ast.AST, names: dict | None = None):
    """A literal, possibly built with + from known names, or a call of ``math``: ValueError for anything else."""
    names = names or {}
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return evaluate(node.left, names) + evaluate(node.right, names)
    if isinstance(node, ast.JoinedStr):  # f"{math.sqrt(17):.15f}" (test_float_precision)
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(value.value)
                continue
            inner = evaluate(value.value, names)
            spec = evaluate(value.format_spec, names) if value.format_spec else ""
            parts.append(format(inner, spec))
        return "".join(parts)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "math"
        and not node.keywords
    ):
        return getattr(math, node.func.attr)(*(evaluate(a, names) for a in node.args))
    raise ValueError(f"not a literal: {ast.unparse(node)[:80]}")


# ----------------------------------------------------------------------------------------------------------- IFEval

IFEVAL_REPO = "CN-Steve-Lee/instruction_following_at_scale"  # public copy of google-research's directory
IFEVAL_DIR = "instruction_following_eval"
IFEVAL_TEST = f"{IFEVAL_DIR}/instructions_test.py"
# google-research@45e9105 added tests the public copy predates; their inputs and verdicts, written down from that
# version of instructions_test.py (used when --ifeval-supplement is not given; the script checks they agree when it is)
IFEVAL_45E9105 = {
    "commit": "45e9105107b32edd1c0e88af4e129541f1caad7c",
    "tests": {
        "test_letter_frequency_checker_accepts_punctuation": [
            {
                "checker": "LetterFrequencyChecker",
                "kwargs": {"letter": "#", "let_frequency": 4, "let_relation": "at least"},
                "response": "#one #two #three #four",
                "expected": True,
            },
            {
                "checker": "LetterFrequencyChecker",
                "kwargs": {"letter": "#", "let_frequency": 4, "let_relation": "at least"},
                "response": "#one #two #three",
                "expected": False,
            },
        ],
        "test_letter_frequency_checker_rejects_invalid_explicit_args": [
            {
                "checker": "LetterFrequencyChecker",
                "kwargs": {"letter": "ab", "let_frequency": 1, "let_relation": "at least"},
                "response": None,
                "expected": "rejects",
            },
            {
                "checker": "LetterFrequencyChecker",
                "kwargs": {"letter": "a", "let_frequency": -1, "let_relation": "at least"},
                "response": None,
                "expected": "rejects",
            },
        ],
    },
}


class _Log:
    """What the stand-ins saw: one entry per check_following call (and per build_description refused)."""

    def __init__(self):
        self.entries: list[dict] = []
        self.test: str | None = None
        self.raising = 0  # > 0 inside an assertRaises block


def _recording_instructions(log: _Log, constants: dict) -> types.ModuleType:
    """A stand-in ``instructions`` module: constants from the real file, every class a recording checker."""
    classes: dict[str, type] = {}

    def make(name: str) -> type:
        class Recorder:
            def __init__(self, instruction_id):
                self.instruction_id, self.kwargs = instruction_id, {}

            def build_description(self, **kwargs):
                self.kwargs = dict(kwargs)
                if log.raising:
                    log.entries.append(self._entry(None, "rejects"))
                return f"{name} description: " + ", ".join(
                    f"letter {v}" if k == "letter" else f"{k} {v}" for k, v in kwargs.items()
                )

            def get_instruction_args(self):
                return dict(self.kwargs)

            def get_instruction_args_keys(self):
                return list(self.kwargs)

            def check_following(self, value):
                entry = self._entry(value, "raises" if log.raising else None)
                log.entries.append(entry)
                return _Verdict(entry)

            def _entry(self, response, expected):
                return {
                    "test": log.test,
                    "checker": name,
                    "upstream_instruction_id": self.instruction_id,
                    "kwargs": json.loads(json.dumps(self.kwargs, default=_jsonable)),
                    "response": response,
                    "expected": expected,
                }

        Recorder.__name__ = name
        return Recorder

    module = types.ModuleType("instructions")
    module.__dict__.update({k: v for k, v in constants.items() if k.startswith("_")})

    def getattr_(name: str):
        if name[:1].isupper():
            return classes.setdefault(name, make(name))
        raise AttributeError(name)

    module.__getattr__ = getattr_
    return module


def _jsonable(value):
    """JSON for the argument values plain JSON lacks (key_sentences passes a set)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot record an argument of type {type(value).__name__}")


class _Verdict:
    """What the stand-in's check_following returns: the assertion applied to it sets the expected verdict."""

    def __init__(self, entry: dict):
        self.entry = entry

    def expect(self, value: bool) -> None:
        if self.entry["expected"] not in (None, value):
            raise SystemExit(f"{self.entry['test']}: one check asserted both ways")
        self.entry["expected"] = value


def _recording_absl(log: _Log) -> dict[str, types.ModuleType]:
    """Stand-ins for absl.testing's absltest and parameterized: tests run in definition order, assertions logged."""

    def named_parameters(*cases):
        if len(cases) == 1 and isinstance(cases[0], list):
            cases = cases[0]

        def attach(function):
            function.upstream_cases = [dict(c) for c in cases]
            return function

        return attach

    class TestCase:
        def subTest(self, *args, **kwargs):
            return contextlib.nullcontext()

        def assertTrue(self, value, msg=None):
            if isinstance(value, _Verdict):
                value.expect(True)

        def assertFalse(self, value, msg=None):
            if isinstance(value, _Verdict):
                value.expect(False)

        def assertEqual(self, first, second, msg=None):
            for a, b in ((first, second), (second, first)):
                if isinstance(a, _Verdict) and isinstance(b, bool):
                    a.expect(b)

        def assertIn(self, *args, **kwargs):
            pass

        @contextlib.contextmanager
        def assertRaises(self, *args, **kwargs):
            log.raising += 1
            try:
                yield
            finally:
                log.raising -= 1

        assertRaisesRegex = assertRaises

    parameterized = types.ModuleType("absl.testing.parameterized")
    parameterized.named_parameters = named_parameters
    parameterized.parameters = named_parameters
    parameterized.TestCase = TestCase
    absltest = types.ModuleType("absl.testing.absltest")
    absltest.main = lambda *a, **k: None
    absltest.TestCase = TestCase
    testing = types.ModuleType("absl.testing")
    testing.parameterized, testing.absltest = parameterized, absltest
    absl = types.ModuleType("absl")
    absl.testing = testing
    return {
        "absl": absl,
        "absl.testing": testing,
        "absl.testing.parameterized": parameterized,
        "absl.testing.absltest": absltest,
    }


def record_ifeval_test(test_file: Path, constants: dict) -> list[dict]:
    """Execute an IFEval instructions_test.py against the stand-ins; one entry per check, in the file's order."""
    log = _Log()
    instructions = _recording_instructions(log, constants)
    package = types.ModuleType("instruction_following_eval")
    package.instructions = instructions
    stand_ins = {
        **_recording_absl(log),
        "instruction_following_eval": package,
        "instruction_following_eval.instructions": instructions,
    }
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        namespace = {"__name__": "upstream_instructions_test"}
        exec(compile(test_file.read_text("utf-8"), str(test_file), "exec"), namespace)
        base = stand_ins["absl.testing.parameterized"].TestCase
        classes = [v for v in namespace.values() if isinstance(v, type) and issubclass(v, base) and v is not base]
        for cls in classes:
            for name, function in list(vars(cls).items()):
                if not (name.startswith("test") and callable(function)):
                    continue
                for params in getattr(function, "upstream_cases", [{}]):
                    log.test = name
                    function(cls(), **{k: v for k, v in params.items() if k != "testcase_name"})
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    unasserted = [e for e in log.entries if e["expected"] is None]
    if unasserted:
        raise SystemExit(f"{test_file}: checks without an assertion: {[e['test'] for e in unasserted]}")
    return log.entries


def ifeval_registry(registry_file: Path) -> dict[str, str]:
    """Checker class name -> IFEval instruction id, from instructions_registry.py's INSTRUCTION_DICT (ast)."""
    tree = ast.parse(registry_file.read_text("utf-8"))
    constants = module_constants(registry_file.read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "INSTRUCTION_DICT":
            mapping: dict[str, str] = {}
            for key, value in zip(node.value.keys, node.value.values):
                name = value.attr  # instructions.<ClassName>
                if name in mapping:
                    raise SystemExit(f"{registry_file}: {name} is registered twice")
                mapping[name] = evaluate(key, constants)
            return mapping
    raise SystemExit(f"{registry_file}: no INSTRUCTION_DICT")


def ifeval_cases(checkout: Path, supplement: Path | None, commit: str | None) -> list[dict]:
    folder = checkout / IFEVAL_DIR
    commit = commit or commit_of(checkout)
    if not commit:
        raise SystemExit(f"{checkout}: not a git checkout; pass --ifeval-commit")
    registry = ifeval_registry(folder / "instructions_registry.py")
    constants = module_constants((folder / "instructions.py").read_text("utf-8"))
    rows: list[dict] = []
    counters: dict[str, int] = {}

    def add(entry: dict, source: str, **extra) -> None:
        k = counters.get(entry["test"], 0)
        counters[entry["test"]] = k + 1
        rows.append(
            {
                "id": f"{entry['test']}::{k}",
                "instruction_id": registry.get(entry["checker"]),
                "kwargs": entry["kwargs"],
                "response": entry["response"],
                "expected": entry["expected"],
                "checker": entry["checker"],
                "upstream_instruction_id": entry["upstream_instruction_id"],
                "source": source,
                **extra,
            }
        )

    for entry in record_ifeval_test(folder / "instructions_test.py", constants):
        add(entry, f"{IFEVAL_REPO}@{commit[:7]}:{IFEVAL_TEST}::InstructionsTest::{entry['test']}")

    later = IFEVAL_45E9105["tests"]
    if supplement is not None:
        recorded: dict[str, list] = {}
        for entry in record_ifeval_test(supplement, constants):
            if entry["test"] in later:
                recorded.setdefault(entry["test"], []).append(
                    {k: entry[k] for k in ("checker", "kwargs", "response", "expected")}
                )
        if recorded != later:
            raise SystemExit(f"{supplement}: its checks differ from the transcription IFEVAL_45E9105: {recorded}")
    how = "read from that file" if supplement is not None else "transcribed from that file"
    for test, checks in later.items():
        for check in checks:
            entry = {"test": test, "upstream_instruction_id": "keywords:letter_frequency", **check}
            source = f"google-research/google-research@{IFEVAL_45E9105['commit'][:7]}:{IFEVAL_TEST}::InstructionsTest::{test}"
            add(entry, source, origin=how)
    return rows


# ------------------------------------------------------------------------------------------------------ Math-Verify

MATH_VERIFY_REPO = "huggingface/Math-Verify"
MATH_VERIFY_FILES = (
    "tests/test_all.py",
    "tests/test_boxed.py",
    "tests/test_numina_cases.py",
    "tests/test_open_thoughts.py",
    "tests/test_strict.py",
    "tests/test_yujianll.py",
)
OPTION_NAMES = ("match_types", "precision", "strict", "allow_set_relation_comp")


def _helper_defaults(test_all: str) -> dict:
    """compare_strings' keyword defaults in test_all.py (match types, precision, strict, set relations)."""
    for node in ast.parse(test_all).body:
        if isinstance(node, ast.FunctionDef) and node.name == "compare_strings":
            names = [a.arg for a in node.args.args][-len(node.args.defaults) :]
            return {n: ast.literal_eval(d) for n, d in zip(names, node.args.defaults)}
    raise SystemExit("tests/test_all.py: no compare_strings")


def _checked_call(function: ast.FunctionDef) -> tuple[ast.Call, ast.AST] | None:
    """(the call under test, the expected side) of the function's ``assert <call> == <expected>``."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], ast.Eq):
            left = node.test.left
            if isinstance(left, ast.Call) and getattr(left.func, "id", None) == "int":  # int(verify(...)) == result
                left = left.args[0]
            if isinstance(left, ast.Call):
                return left, node.test.comparators[0]
    return None


def _options(call: ast.Call, params: dict, defaults: dict) -> tuple[str, dict]:
    """What a test's call passes to math-verify: ('compare_strings', options) or ('verify(parse(gold), parse(pred))', {})."""
    name = getattr(call.func, "id", None)
    if name == "verify":
        return "verify(parse(gold), parse(pred))", {}
    if name != "compare_strings":
        raise SystemExit(f"unknown call {ast.unparse(call)[:80]}")
    options = dict(defaults)
    for keyword in call.keywords:
        value = keyword.value
        options[keyword.arg] = params[value.id] if isinstance(value, ast.Name) else ast.literal_eval(value)
    return "compare_strings", options


def math_verify_raw_cases(checkout: Path) -> list[dict]:
    """Every parametrized gold/pred/expected case of the files (and test_precision's literal assert), with options."""
    defaults = _helper_defaults((checkout / "tests/test_all.py").read_text("utf-8"))
    rows: list[dict] = []
    for relative in MATH_VERIFY_FILES:
        tree = ast.parse((checkout / relative).read_text("utf-8"))
        stem = Path(relative).stem
        for function in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")):
            checked = _checked_call(function)
            marks = [
                d
                for d in function.decorator_list
                if isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.mark.parametrize"
            ]
            if not marks:
                if checked is None or getattr(checked[0].func, "id", None) != "compare_strings":
                    continue  # sympy-object asserts (test_precision's first four), configs, timeouts
                call, expected = checked
                gold, pred = (ast.literal_eval(a) for a in call.args[:2])
                kind, options = _options(call, {}, defaults)
                rows.append(
                    {
                        "id": f"{stem}::{function.name}::assert0",
                        "gold": gold,
                        "pred": pred,
                        "expected": int(ast.literal_eval(expected)),
                        "call": kind,
                        "options": options,
                        "source": f"{relative}::{function.name} (line {call.lineno})",
                    }
                )
                continue
            (mark,) = marks
            argnames = [a.strip() for a in ast.literal_eval(mark.args[0]).split(",")]
            call, expected_side = checked
            for k, element in enumerate(mark.args[1].elts):
                params = dict(zip(argnames, (evaluate(v) for v in element.elts)))
                kind, options = _options(call, params, defaults)
                rows.append(
                    {
                        "id": f"{stem}::{function.name}::{k}",
                        "gold": params["gold"],
                        "pred": params["pred"],
                        "expected": int(params[expected_side.id]),
                        "call": kind,
                        "options": options,
                        "source": f"{relative}::{function.name} (line {element.lineno})",
                    }
                )
    return rows


def _configs(match_types: list[str] | None):
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    if match_types is None:  # parse()'s own default
        return [LatexExtractionConfig(), ExprExtractionConfig()]
    table = {"latex": lambda: LatexExtractionConfig(boxed_match_priority=0), "expr": ExprExtractionConfig}
    return [table[m]() for m in match_types]


def upstream_verdict(case: dict) -> int:
    """The installed math-verify's verdict with the test's own extraction targets and verify options."""
    from math_verify import parse, verify

    options = case["options"]
    configs = _configs(options.get("match_types"))
    gold, pred = parse(case["gold"], configs), parse(case["pred"], configs)
    kwargs = {}
    if "precision" in options:
        kwargs = {k: options[k] for k in ("strict", "allow_set_relation_comp")}
        kwargs["float_rounding"] = options["precision"]
    return int(verify(gold, pred, **kwargs))


_LONE_MATH = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))


def lone_math(text: str) -> str | None:
    """The inside of a text that is one math segment ($..$, $$..$$, \\[..\\], \\(..\\)), else None."""
    text = text.strip()
    for opening, closing in _LONE_MATH:
        if len(text) > len(opening) + len(closing) and text.startswith(opening) and text.endswith(closing):
            inside = text[len(opening) : -len(closing)]
            if opening in ("$", "$$") and "$" in inside.replace("\\$", ""):
                continue
            return inside.strip()
    return None


def upstream_extraction(text: str, match_types: list[str] | None) -> str | None:
    """The string math-verify extracts from text with the test's extraction targets (None when nothing)."""
    from math_verify import parse

    parsed = parse(text, _configs(match_types))
    return parsed[1] if len(parsed) > 1 else None


def short_plain(text: str) -> bool:
    """A short answer with no LaTeX: '7,425,000', '1 000', '28 percent'."""
    return "$" not in text and "\\" not in text and len(text.strip()) <= 20


def prompt_form(case: dict) -> dict:
    """What the project receives in prompt form: the gold as a dataset stores it, and the response's boxed answer.

    gold: the inside of a lone math segment; a short plain answer as written; else (a solution, prose, several
    boxes) upstream's own extraction. Response: the pred as written where it holds \\boxed; else ``The final answer
    is $\\boxed{X}$.`` with X the inside of a lone math segment, a short plain answer as written, or upstream's own
    extraction from the prose; n/a where that extraction finds nothing (the test is about delimiters, not an
    answer)."""
    match_types = case["options"].get("match_types")
    gold, gold_rule = lone_math(case["gold"]), "inside lone math"
    if gold is None and short_plain(case["gold"]):
        gold, gold_rule = case["gold"].strip(), "short plain answer as written"
    if gold is None:
        gold, gold_rule = upstream_extraction(case["gold"], match_types), "upstream extraction from the gold"
    if gold is None:
        gold, gold_rule = case["gold"].strip(), "as written (nothing extracted)"
    pred = case["pred"]
    if "\\boxed" in pred:
        return {"gold_answer": gold, "gold_rule": gold_rule, "final_text": pred, "pred_rule": "pred as written (boxed)"}
    inside, rule = lone_math(pred), "inside lone math"
    if inside is None and short_plain(pred):
        inside, rule = pred.strip(), "short plain answer as written"
    if inside is None:
        inside, rule = upstream_extraction(pred, match_types), "upstream extraction from the prose"
    if inside is None:
        return {"gold_answer": gold, "gold_rule": gold_rule, "final_text": None, "pred_rule": "n/a: nothing extracted"}
    text = f"The final answer is $\\boxed{{{inside}}}$."
    return {"gold_answer": gold, "gold_rule": gold_rule, "final_text": text, "pred_rule": rule}


def math_verify_cases(checkout: Path, commit: str | None) -> list[dict]:
    commit = commit or commit_of(checkout)
    if not commit:
        raise SystemExit(f"{checkout}: not a git checkout; pass --math-verify-commit")
    rows = math_verify_raw_cases(checkout)
    stale = []
    for row in rows:
        row["source"] = f"{MATH_VERIFY_REPO}@{commit[:7]}:{row['source']}"
        row["prompt_form"] = prompt_form(row)
        if upstream_verdict(row) != row["expected"]:
            stale.append(row["id"])
    if stale:  # the installed math-verify no longer gives the upstream verdict: the case is outdated for the pin
        print(f"WARNING: the installed math-verify disagrees with these upstream cases: {stale}", file=sys.stderr)
    return rows


# ----------------------------------------------------------------------------------------------------- Reasoning Gym

RG_SEED, RG_ITEMS = 4242, 15
RG_BENCHMARK = "rg_upstream"
RG_WRONG = "definitely wrong"
# ~3 tasks per reasoning-gym category (module path), all with gold answers
RG_TASKS = (
    "complex_arithmetic", "polynomial_equations", "simple_equations", "simple_integration",  # algebra
    "base_conversion", "letter_counting", "number_sorting", "word_sorting", "spell_backward", "caesar_cipher",  # algorithmic
    "arc_1d", "arc_agi",  # arc
    "basic_arithmetic", "fraction_simplification", "gcd", "prime_factorization", "decimal_arithmetic", "calendar_arithmetic",  # arithmetic
    "bf",  # code
    "number_sequence", "color_cube_rotation",  # cognition
    "countdown", "puzzle24", "mini_sudoku", "n_queens", "maze",  # games
    "simple_geometry", "advanced_geometry",  # geometry
    "shortest_path", "family_relationships", "course_schedule",  # graphs
    "acre",  # induction
    "knights_knaves", "syllogism", "zebra_puzzles",  # logic
    "coin_flip",  # probability
)  # fmt: skip


def perturbed(answer: str) -> str:
    """The gold with its last integer increased by one, or reversed where it holds no digit."""
    numbers = list(re.finditer(r"\d+", answer))
    if numbers:
        m = numbers[-1]
        return answer[: m.start()] + str(int(m.group()) + 1) + answer[m.end() :]
    return answer[::-1] if answer[::-1] != answer else answer + " not"


def reasoning_gym_cases() -> list[dict]:
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise SystemExit("set PYTHONHASHSEED=0: some Reasoning Gym tasks iterate over sets")
    sys.path.insert(0, str(ROOT / "workflow"))
    import reasoning_gym
    from brorl.benchmarks.rg import generate_task, package_version

    rows = []
    for task in RG_TASKS:
        print(f"reasoning gym: {task}", file=sys.stderr)
        with contextlib.redirect_stdout(sys.stderr):
            reference = reasoning_gym.create_dataset(task, size=RG_ITEMS, seed=RG_SEED)
            entries = [reference[i] for i in range(RG_ITEMS)]
        records = generate_task(task, RG_ITEMS, RG_SEED, RG_BENCHMARK)
        for i, (entry, record) in enumerate(zip(entries, records)):
            if entry["answer"] is None:
                raise SystemExit(f"{task}: no gold answer")
            gold = str(entry["answer"])
            answers = []
            for kind, answer in (("gold", gold), ("perturbed", perturbed(gold)), ("wrong", RG_WRONG)):
                try:
                    value, error = float(reference.score_answer(answer=answer, entry=entry)), None
                except Exception as e:  # prime_factorization's scorer raises on a non-number
                    value, error = None, f"{type(e).__name__}: {e}"[:120]
                answers.append({"kind": kind, "answer": answer, "upstream_score": value})
                if error:
                    answers[-1]["upstream_error"] = error
            record = {k: v for k, v in record.items() if k != "prompt"}  # the question is in metadata.entry too
            rows.append(
                {
                    "id": f"{task}::{i}",
                    "task": task,
                    "item": record,
                    "answers": answers,
                    "source": f"reasoning_gym {package_version()} create_dataset({task!r}, size={RG_ITEMS}, seed={RG_SEED})[{i}], score_answer",
                }
            )
    return rows


# -------------------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ifeval", type=Path, help="checkout holding instruction_following_eval/")
    parser.add_argument("--ifeval-commit", help="its commit, where the checkout is not a git work tree")
    parser.add_argument("--ifeval-supplement", type=Path, help="instructions_test.py of google-research@45e9105")
    parser.add_argument("--math-verify", type=Path, help="checkout of huggingface/Math-Verify")
    parser.add_argument("--math-verify-commit", help="its commit, where the checkout is not a git work tree")
    parser.add_argument("--only", choices=("ifeval", "math", "rg"), action="append")
    args = parser.parse_args(argv)
    only = set(args.only or ("ifeval", "math", "rg"))
    if "ifeval" in only:
        if args.ifeval is None:
            parser.error("--ifeval is required (or --only math/rg)")
        write_jsonl(HERE / "ifeval_cases.jsonl", ifeval_cases(args.ifeval, args.ifeval_supplement, args.ifeval_commit))
    if "math" in only:
        if args.math_verify is None:
            parser.error("--math-verify is required (or --only ifeval/rg)")
        write_jsonl(HERE / "math_verify_cases.jsonl", math_verify_cases(args.math_verify, args.math_verify_commit))
    if "rg" in only:
        write_jsonl(HERE / "reasoning_gym_cases.jsonl", reasoning_gym_cases())


if __name__ == "__main__":
    main()
