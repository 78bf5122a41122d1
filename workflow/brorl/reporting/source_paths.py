"""Paths the package's modules name, placed for the rerun derivation (brorl.reporting.source_closure): code they
launch in other processes (hashed with them), package data they read (hashed), or a file that reaches the rules
another way (named in NOT_CODE, with how)."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

WORKFLOW = Path(__file__).resolve().parents[2]  # holds brorl/, scripts/, rehearsal/, stubs/
REPO = WORKFLOW.parent

# Folders whose files run as code or are read as data by the package: a named path under one is hashed.
CODE_ROOTS = ("workflow/brorl", "workflow/scripts", "workflow/rehearsal", "workflow/stubs")
# Paths under the workflow folder that a module names and that are not code, and how each reaches the rules instead.
# (Paths outside it are never code: the config and profiles reach rules as params, outputs and local data files as
# inputs or params; they are not followed.)
NOT_CODE = {
    "workflow/schemas": "the schemas' defaults reach the rules filled into their params",
    "workflow/benchmarks": "each benchmark's parsed registry entry is a param of its preparation",
    "workflow/.cache": "the rerun derivation's own cache of what it read (brorl.reporting.source_cache)",
}


class ClosureError(ValueError):
    """A command whose code the derivation cannot follow (names the module and why)."""


def _path_parts(node: ast.BinOp) -> list[str] | None:
    """``base / "a" / "b"`` -> ["a", "b"]; None when a right operand is not a string constant."""
    parts: list[str] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        if not (isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)):
            return None
        parts.insert(0, node.right.value)
        node = node.left  # type: ignore[assignment]
    return parts


def _first_existing(candidates: Iterable[Path]) -> list[Path]:
    """[the first candidate that exists], or []."""
    return next(([c] for c in candidates if c.exists()), [])


def named_paths(path: Path, nodes: list[ast.AST], workflow: Path = WORKFLOW) -> set[Path]:
    """Existing files and folders these nodes (every node, already walked) of the file ``path`` name under the
    workflow folder: string chains (``X / "a" / "b"``, tried from the workflow folder and the file's folder), and
    string constants naming a file beside it (``with_name("paper_results.yaml")``)."""
    found: set[Path] = set()
    divisions = [n for n in nodes if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    inner = {id(n.left) for n in divisions}  # a chain is read from its outermost division only
    for node in divisions:
        parts = None if id(node) in inner else _path_parts(node)
        if parts:
            found.update(_first_existing(root.joinpath(*parts) for root in (workflow, path.parent)))
    for node in nodes:
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        if 0 < len(text) < 80 and "/" not in text and "." in text.strip(".") and not text.endswith(".py"):
            found.update(_first_existing([path.parent / text]))
    return {p.resolve() for p in found if p.resolve().is_relative_to(workflow)}


def _root_of(found: Path, repo: Path) -> str | None:
    """The CODE_ROOTS or NOT_CODE entry a path falls under, or None."""
    if not found.is_relative_to(repo):
        return None
    rel = found.relative_to(repo).as_posix()
    return next((r for r in (*CODE_ROOTS, *NOT_CODE) if rel == r or rel.startswith(r + "/")), None)


def code_paths(path: Path, nodes: list[ast.AST], workflow: Path = WORKFLOW) -> set[Path]:
    """The code and data files and folders these nodes (every node, already walked) of the file ``path`` (under the
    workflow folder ``workflow``) name; ClosureError for a path that is neither code nor a NOT_CODE entry."""
    files: set[Path] = set()
    for found in named_paths(path, nodes, workflow):
        root = _root_of(found, workflow.parent)
        if root in CODE_ROOTS:
            files.add(found)
        elif root is None:
            raise ClosureError(
                f"{os.path.relpath(path, REPO)} names {found}, which the rerun derivation cannot place: code under "
                + ", ".join(CODE_ROOTS)
                + " (hashed), or an entry of NOT_CODE (brorl.reporting.source_paths) saying how it reaches the rules"
            )
    return files


def files_under(found: Path) -> list[Path]:
    """A named file, or every file of a named folder (caches aside)."""
    if found.is_file():
        return [found]
    return sorted(p.resolve() for p in found.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
