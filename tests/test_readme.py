"""The README as a page a researcher reads in five minutes: at most 110 lines, a median sentence under 20 words, the
six common changes each one hop away, and the rule graph it shows drawn from the workflow as it is.

Sentences are counted in the prose only: lines outside fenced code blocks, tables, headings and images, with each
link's text kept and its target dropped; a sentence ends at ".", "!" or "?" followed by a space and a capital, a
backtick, a bracket or an asterisk. Words are what whitespace separates.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMON_CHANGES = (
    "change N",
    "add a benchmark",
    "add an arm",
    "add an estimator",
    "use another cluster",
    "evaluate a checkpoint",
)


def prose_sentences(markdown: str) -> list[str]:
    """The sentences of the page's prose (the rule in the module docstring)."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        prose = not fenced and line.strip() and not line.startswith(("|", "#", "!["))
        lines.append(line if prose else "\n")
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", " ".join(lines))
    paragraphs = [p for p in re.split(r"\s*\n\s*", text) if p.strip()]
    return [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*`(\[])", p) if s.strip()]


def test_prose_sentences_split_at_sentence_ends_and_skip_code_and_tables():
    page = "One two three. Four [five](x.md) six!\n\n```bash\nnot prose. At all.\n```\n| a. | B |\nSeven `eight`."
    assert prose_sentences(page) == ["One two three.", "Four five six!", "Seven `eight`."]


def test_the_readme_is_short_and_its_sentences_are_short():
    text = README.read_text()
    lengths = [len(s.split()) for s in prose_sentences(text)]
    assert len(text.splitlines()) <= 110
    assert len(lengths) >= 20 and statistics.median(lengths) < 20, sorted(lengths)


def test_each_common_change_is_one_row_with_one_link():
    rows = {row.split("|")[1].strip(): row for row in README.read_text().splitlines() if row.startswith("| ")}
    for change in COMMON_CHANGES:
        row = rows.get(f"to {change}") or rows.get(change)
        assert row is not None, f"no row for {change!r} in the README's common changes"
        assert len(re.findall(r"\]\(([^)]+)\)", row)) == 1, row


@pytest.mark.workflow
def test_the_rule_graph_picture_shows_the_workflows_rules(tmp_path):
    """docs/rulegraph.svg against `snakemake --rulegraph` of the paper config now (regenerate it as the README
    says when this fails)."""
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--rulegraph", "--directory", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rules = set(re.findall(r'label = "(\w+)"', proc.stdout))
    drawn = set(re.findall(r">(\w+)</text>", (ROOT / "docs" / "rulegraph.svg").read_text()))
    assert rules and rules == drawn, (rules - drawn, drawn - rules)
