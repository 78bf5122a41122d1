"""The rerun derivation without Snakemake: digests that ignore comments, docstrings and formatting (and agree between
Python 3.11 and 3.12), the closure of a command on small packages built here and on this package, and the policy's
refusals (brorl.reporting.source_digest, source_closure, rerun_policy)."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from brorl.ops.reruns import rerun_policy
from brorl.ops.reruns.rerun_policy import RerunPolicyError, rule_commands, trigger_params
from brorl.reporting import source_closure
from brorl.reporting.code_record import code_sources
from brorl.reporting.source_closure import ClosureError, command_closure, module_index
from brorl.reporting.source_digest import python_text, shell_digest
from brorl.reporting.source_paths import WORKFLOW

SOURCE = '''
"""Module docstring."""
import os


def area(width, height):
    """Docstring."""
    return width * height  # a comment
'''


# ---------------------------------------------------------------------------------------------------- digests
@pytest.mark.parametrize(
    "edited",
    [
        SOURCE.replace("# a comment", "# another comment"),
        SOURCE.replace('"""Docstring."""', '"""Another docstring, longer."""'),
        SOURCE.replace('"""Module docstring."""', ""),
        SOURCE.replace("return width * height", "return (\n        width\n        * height\n    )"),
        SOURCE.replace("def area(width, height):", "def area(\n    width,\n    height,\n):"),
        SOURCE + '\n"a string used as a comment"\n',
    ],
    ids=["comment", "docstring", "module-docstring", "line-breaks", "trailing-comma", "bare-string"],
)
def test_cosmetic_edits_keep_the_digest(edited):
    assert python_text(edited) == python_text(SOURCE)


@pytest.mark.parametrize(
    "edited",
    [
        SOURCE.replace("width * height", "width + height"),
        SOURCE.replace("import os", "import sys"),
        SOURCE + "\nAREA_UNIT = 'm2'\n",
        SOURCE.replace("return width * height  # a comment", 'return f"{width * height}"'),
    ],
    ids=["operator", "import", "constant", "f-string"],
)
def test_behaviour_edits_change_the_digest(edited):
    assert python_text(edited) != python_text(SOURCE)


def test_a_shell_digest_ignores_whitespace_but_not_a_flag():
    command = "python -m brorl.evaluation score \\\n    --n {params.n} \\\n    --out {output:q}"
    assert shell_digest(command) == shell_digest(command.replace("    --n", "  --n   "))
    assert shell_digest(command) != shell_digest(command.replace("--n {params.n}", "--n {params.n} --fast"))


def python_312() -> str | None:
    """A Python 3.12 interpreter (pyenv's own, not its shim, which answers only where 3.12 is selected)."""
    found = sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    if found:
        return str(found[-1])
    path = shutil.which("python3.12")
    return path if path and "shims" not in path else None


PYTHON_312 = python_312()


@pytest.mark.skipif(PYTHON_312 is None, reason="no Python 3.12 on this machine")
def test_every_file_of_the_package_has_the_same_digest_under_python_3_12():
    # the driver environment may run another Python than the engines' (ast.dump differs between 3.11 and 3.12)
    files = sorted(str(p) for p in module_index().values())
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from brorl.reporting.source_digest import python_text; "
        "print(json.dumps({f: python_text(open(f, 'rb').read()) for f in sys.argv[2:]}))"
    )
    proc = subprocess.run([str(PYTHON_312), "-c", script, str(WORKFLOW), *files], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    other = json.loads(proc.stdout)
    differing = [f for f in files if other[f] != python_text(Path(f).read_bytes())]
    assert not differing, differing


# ---------------------------------------------------------------------------------------- closures of small trees
def package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A workflow folder holding a package `brorl` made of ``files`` (path under brorl/ -> source)."""
    workflow = tmp_path / "workflow"
    for name, text in {"__init__.py": "", **files}.items():
        path = workflow / "brorl" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return workflow


CLI = """
    import argparse
    from .common import helper


    def cmd_one(args):
        from .one import work
        work()


    def cmd_two(args):
        from brorl.two import work
        helper()
        work()


    def main():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        p = sub.add_parser("one")
        p.set_defaults(func=cmd_one)
        p = sub.add_parser("two")
        p.set_defaults(func=cmd_two)
        args = parser.parse_args()
        args.func(args)
"""


def modules(workflow: Path, *commands: tuple[str, str | None]) -> set[str]:
    return command_closure(commands, workflow).modules


def test_a_subcommand_reaches_its_own_handler_and_imports_only(tmp_path):
    workflow = package(
        tmp_path,
        {
            "stage/__init__.py": "",
            "stage/__main__.py": "from .cli import main\nmain()\n",
            "stage/cli.py": CLI,
            "stage/common.py": "def helper():\n    from brorl.deep import x\n",
            "stage/one.py": "def work():\n    pass\n",
            "two.py": "def work():\n    pass\n",
            "deep.py": "x = 1\n",
        },
    )
    one = modules(workflow, ("brorl.stage", "one"))
    two = modules(workflow, ("brorl.stage", "two"))
    assert "brorl.stage.one" in one and "brorl.two" not in one
    assert "brorl.two" in two and "brorl.stage.one" not in two
    # a function's own import is followed only when the function is reached: helper() runs for `two` only
    assert "brorl.deep" in two and "brorl.deep" not in one
    assert {"brorl", "brorl.stage", "brorl.stage.__main__", "brorl.stage.cli", "brorl.stage.common"} <= one


def test_lazily_exported_names_and_tables_of_module_names_are_followed(tmp_path, monkeypatch):
    workflow = package(
        tmp_path,
        {
            "__init__.py": "def lazy_exports(package, homes):\n    import importlib\n    importlib.import_module(homes)\n",
            "lib/__init__.py": "from .. import lazy_exports\nHOMES = {'fast': 'speed'}\nlazy_exports(__name__, HOMES)\n",
            "lib/speed.py": "def fast():\n    pass\n",
            "table.py": (
                "from importlib import import_module\n"
                "ENGINES = {'a': 'brorl.engine_a'}\n\n"
                "def names():\n    return list(ENGINES)\n\n"
                "def load(name):\n    return import_module(ENGINES[name])\n"
            ),
            "engine_a.py": "",
            "uses_names.py": "from brorl.lib import fast\nfrom brorl.table import names\n",
            "uses_load.py": "from brorl.table import load\n\nload('a')\n",
        },
    )
    monkeypatch.setattr(source_closure, "DYNAMIC_IMPORTS", {"brorl": "lazy", "brorl.table": "ENGINES"})
    names = modules(workflow, ("brorl.uses_names", None))
    assert "brorl.lib.speed" in names  # `from brorl.lib import fast` loads its home
    assert "brorl.engine_a" not in names  # naming the table loads no engine ...
    assert "brorl.engine_a" in modules(workflow, ("brorl.uses_load", None))  # ... importing by it does


def test_an_unmodelled_computed_import_stops_the_derivation_naming_file_and_line(tmp_path):
    workflow = package(
        tmp_path,
        {"plugin.py": "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n"},
    )
    with pytest.raises(ClosureError, match=r"workflow/brorl/plugin.py:5 imports a module whose name is computed"):
        modules(workflow, ("brorl.plugin", None))


def test_a_missing_module_or_main_stops_the_derivation(tmp_path):
    workflow = package(tmp_path, {"stage/__init__.py": ""})
    with pytest.raises(ClosureError, match="no such module"):
        modules(workflow, ("brorl.nothing", "run"))
    with pytest.raises(ClosureError, match="has no __main__"):
        modules(workflow, ("brorl.stage", "run"))


# ------------------------------------------------------------------------------------- closures of this package
def sources(entry: str, subcommand: str | None) -> set[str]:
    return set(code_sources([(entry, subcommand)]))


def test_scoring_runs_the_verifiers_and_generation_does_not():
    score = sources("brorl.evaluation", "score")
    assert {"brorl/scoring/math/grade.py", "brorl/evaluation/score.py", "brorl/scoring/code.py"} <= score
    for entry, sub in (("brorl.generation", "generate"), ("brorl.probe", "select"), ("brorl.training", "finish")):
        assert "brorl/scoring/math/grade.py" not in sources(entry, sub), (entry, sub)


def test_training_runs_the_job_hook_and_its_modules_but_finishing_an_arm_does_not():
    segment = sources("brorl.training", "segment")
    assert {
        "scripts/openrlhf_site/sitecustomize.py",  # loaded through `site` in every OpenRLHF process
        "brorl/training/openrlhf/advantage_hook.py",  # which it installs
        "brorl/training/embedded/advantages.py",  # the embedded engine, through ENGINES
        "rehearsal/sitecustomize.py",
        "scripts/ray_on_slurm.sh",
    } <= segment
    finish = sources("brorl.training", "finish")
    assert not {p for p in finish if "/embedded/" in p or p.endswith("_hook.py")}, finish


def test_package_data_is_hashed_with_the_modules_that_read_it():
    assert "brorl/analysis/paper_results.yaml" in sources("brorl.analysis", "tables")
    assert "brorl/models/vllm_architectures.txt" in sources("brorl.generation", "generate")
    # the developer benchmarks (the ops wing) are in no stage's closure
    scoring = sources("brorl.evaluation", "score")
    assert "brorl/scoring/sandbox.py" in scoring
    assert not any(p.startswith("brorl/ops/") for p in scoring)


def test_exempt_modules_are_left_out_of_every_trigger():
    assert not {"brorl/reporting/provenance.py", "brorl/reporting/source_closure.py"} & sources(
        "brorl.training", "segment"
    )


# ----------------------------------------------------------------------------------------------------- policy
def test_rule_commands_and_the_refusals_that_name_the_rule():
    shell = "PYTHONHASHSEED=0 python -m brorl.models build-tiny --out x\npython -m brorl.models check x"
    assert rule_commands("r", shell) == [("brorl.models", "build-tiny"), ("brorl.models", "check")]
    assert rule_commands("r", "python -m brorl.ops.preflight --scope eval") == [("brorl.ops.preflight", None)]
    with pytest.raises(RerunPolicyError, match="rule r: its command runs no `python -m brorl"):
        rule_commands("r", "bash workflow/scripts/x.sh")
    with pytest.raises(RerunPolicyError, match="rule r: python -m brorl.nothing: no such module"):
        trigger_params("r", "python -m brorl.nothing run")


def test_exempt_rules_get_no_trigger_and_an_exemption_of_nothing_is_refused():
    assert trigger_params("train_ppo", "python -m brorl.training segment") == []
    params = trigger_params("score_samples", "python -m brorl.evaluation score --n 1")
    assert params[-1].startswith("shell ") and any(p.startswith("brorl/scoring/math/grade.py ") for p in params)
    with pytest.raises(RerunPolicyError, match="exempts what does not exist: rule train_ppo"):
        rerun_policy.check_exemptions(set(rerun_policy.EXEMPT_RULES) - {"train_ppo"} | {"x"})


# ------------------------------------------------------------------------------------------------ the oracle
def test_the_oracle_records_a_jobs_imports_and_flags_what_its_closure_lacks(tmp_path):
    import os
    import sys

    from import_oracle import FOLDER_ENV, audited, outside_closure

    folder = tmp_path / "audit"
    env = {**os.environ, FOLDER_ENV: str(folder), "PYTHONPATH": str(WORKFLOW)}
    proc = subprocess.run(
        [sys.executable, "-m", "brorl.analysis", "tables", "--help"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "brorl.analysis.cli" in audited(folder)["brorl.analysis tables"]["module"]
    assert outside_closure(folder) == {}
    # a module no closure of that command holds is reported
    (folder / "1.jsonl").write_text(json.dumps({"job": "brorl.analysis tables", "module": "brorl.scoring.code"}) + "\n")
    assert outside_closure(folder) == {"brorl.analysis tables": ["brorl.scoring.code"]}


# ------------------------------------------------------------------------------------------------ stale code
def test_arms_trained_by_older_code_are_named_with_the_files_changed(tmp_path):
    from brorl.ops.reruns.stale_code import stale_lines, stale_training

    current = {"brorl/a.py": "1", "brorl/b.py": "2"}
    for arm, code in (("same", current), ("older", {"brorl/a.py": "0", "brorl/c.py": "3"}), ("unrecorded", None)):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "segment0.json").write_text(json.dumps({"code": code} if code else {"steps": []}))
    (tmp_path / "fresh").mkdir()  # no finished segment: nothing to say
    stale = stale_training(tmp_path, ["same", "older", "unrecorded", "fresh"], current)
    assert stale == {"older": ["brorl/a.py", "brorl/b.py", "brorl/c.py"], "unrecorded": None}
    lines = stale_lines(stale)
    assert "arm older was trained by code that has changed since: brorl/a.py, brorl/b.py, brorl/c.py" in lines[0]
    assert "not recorded" in lines[1]


def test_outputs_of_exempt_rules_are_counted_by_the_code_comment_in_snakemakes_metadata(tmp_path):
    from brorl.ops.reruns.stale_code import code_comment, keep_record, stale_output_lines, stale_outputs

    old, new = {"brorl/g.py": "1"}, {"brorl/g.py": "2"}
    keep_record(tmp_path, "a" * 12, old)
    metadata = tmp_path / ".snakemake" / "metadata"
    metadata.mkdir(parents=True)
    records = [
        ("generate_samples", code_comment("a" * 12)),  # older code, recorded
        ("generate_samples", code_comment("b" * 12)),  # the current code
        ("generate_probe", ""),  # made before code comments
        ("score_samples", ""),  # not an exempt rule here
    ]
    for i, (rule, comment) in enumerate(records):
        (metadata / f"r{i}").write_text(json.dumps({"rule": rule, "shellcmd": comment + "python -m brorl.x y"}))
    stale = stale_outputs(tmp_path, {"generate_samples": ("b" * 12, new), "generate_probe": ("c" * 12, new)})
    assert stale == {
        "generate_samples": {"outputs": 1, "changed": ["brorl/g.py"]},
        "generate_probe": {"outputs": 1, "changed": None},
    }
    lines = stale_output_lines(stale)
    assert lines[0].startswith("1 output(s) of generate_samples were made by code that has changed since: brorl/g.py")
    assert lines[1] == "outputs made before code records (the code that made them is not known): generate_probe 1"


def test_summary_names_what_older_code_made_and_says_nothing_otherwise():
    from brorl.analysis.summary import stale_code_lines

    assert stale_code_lines({"arms": {}, "outputs": {}}) == []
    text = "\n".join(
        stale_code_lines(
            {
                "arms": {"prorl_n4": ["brorl/training/reward.py"]},
                "outputs": {"generate_samples": {"outputs": 3, "changed": None}},
            }
        )
    )
    assert "- arm `prorl_n4`: `brorl/training/reward.py` changed." in text
    assert "- 3 output(s) of `generate_samples`: made before code records." in text


def test_a_kept_closure_is_recomputed_after_any_edit_under_the_tree_and_only_then(tmp_path, monkeypatch):
    from brorl.reporting import source_cache

    tree = tmp_path / "workflow"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(source_cache, "CLOSURES_PATH", tmp_path / "closures.json")
    monkeypatch.setattr(source_cache, "_STORES", {})
    monkeypatch.setattr(source_cache, "_VERSIONS", {})
    calls = []

    def derive():
        calls.append(1)
        return [["pkg/a.py", str(len(calls))]]

    assert source_cache.cached_closure(tree, "cmd", derive) == [["pkg/a.py", "1"]]
    source_cache.save_cache()
    monkeypatch.setattr(source_cache, "_STORES", {})  # a new parse: read back from the file
    monkeypatch.setattr(source_cache, "_VERSIONS", {})
    assert source_cache.cached_closure(tree, "cmd", derive) == [["pkg/a.py", "1"]] and len(calls) == 1
    for edit in (lambda: (tree / "pkg" / "a.py").write_text("x = 22\n"), lambda: (tree / "pkg" / "b.py").touch()):
        before = source_cache.tree_version(tree)
        edit()
        assert source_cache.tree_version(tree) != before
        monkeypatch.setattr(source_cache, "_VERSIONS", {})
        source_cache.cached_closure(tree, "cmd", derive)
    assert len(calls) == 3
    source_cache.save_cache()
    kept = json.loads((tmp_path / "closures.json").read_text())["files"][str(tree)]  # outside workflow/: absolute
    assert kept[0] == source_cache.tree_version(tree) and kept[1] == {"cmd": [["pkg/a.py", "3"]]}  # older dropped
