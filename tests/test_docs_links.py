"""Every relative link and #anchor resolves: Markdown links in README.md and docs/*.md, and the `docs/<page>.md#anchor`
references in code, configs, profiles and tests (a comment that points at a section that moved is a broken promise)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# a page named in code: docs/<name>.md or README.md, with an optional anchor
REFERENCE = re.compile(r"(?<![\w/])((?:docs/)?[\w-]+\.md)(#[\w-]+)?")
CODE = [
    *(ROOT / "workflow").rglob("*.py"),
    *(ROOT / "workflow").rglob("*.smk"),
    *(ROOT / "workflow").rglob("*.sh"),
    *(ROOT / "workflow").rglob("*.yaml"),
    *(ROOT / "workflow").rglob("*.rst"),
    *(ROOT / "tests").rglob("*.py"),
    *(ROOT / "profiles").rglob("*.yaml"),
    *(ROOT / "envs").glob("*"),
    ROOT / "config.yaml",
    ROOT / "Makefile",
    ROOT / "Snakefile",
    ROOT / "pyproject.toml",
]


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`|\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (repeated headings get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = re.match(r"#{1,6} (.+)", line)
        if match and not in_code:
            base = slug(match.group(1))
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return found


def problem(target: Path, anchor: str | None, where: str) -> str | None:
    if not target.exists():
        return f"{where}: {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target} does not exist"
    if anchor and target.suffix == ".md" and anchor not in anchors(target):
        return f"{where}: no heading #{anchor} in {target.relative_to(ROOT)}"
    return None


def test_slugs_follow_githubs_rule():
    assert slug("BroRL's step partition") == "brorls-step-partition"
    assert slug("One 8-GPU node instead of 64 GPUs") == "one-8-gpu-node-instead-of-64-gpus"
    assert slug("`make plan` and PLAN_ARGS") == "make-plan-and-plan_args"


def test_markdown_links_resolve():
    problems = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked offline
                continue
            path, _, anchor = target.partition("#")
            found = problem((page.parent / path) if path else page, anchor or None, page.name)
            problems += [found] if found else []
    assert not problems, "\n".join(problems)


def test_page_references_in_code_resolve():
    problems = []
    for file in (f for f in CODE if f.is_file()):
        text = file.read_text(encoding="utf-8", errors="replace")
        for name, anchor in REFERENCE.findall(text):
            target = ROOT / name if name.startswith("docs/") or name == "README.md" else None
            if target is None:
                continue  # another project's file name (e.g. OpenRLHF's), not one of ours
            found = problem(target, anchor[1:] or None, str(file.relative_to(ROOT)))
            problems += [found] if found else []
    assert not problems, "\n".join(sorted(set(problems)))
