"""What the rerun derivation reads in one module (brorl.reporting.source_closure): its units and what each one
imports, names, reads and launches, as a record of plain values that is kept across processes per file version
(brorl.reporting.source_cache), so that a dry run parses only the files that changed since the last one.

A unit is what runs together: TOP (on import: imports, statements with calls, decorators, base classes, default
values), each function and class, and each plain-literal assignment (a table such as SCORERS, which runs nothing).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from .source_cache import cached
from .source_paths import code_paths

TOP = "<top>"  # the unit that runs on import

Binding = tuple  # (module, name in it; None: the module itself)


def parse(path: Path) -> ast.Module:
    """The syntax tree of one file."""
    return ast.parse(path.read_bytes(), filename=str(path))


def _prefixes(name: str) -> Iterator[str]:
    """brorl.a.b -> brorl, brorl.a, brorl.a.b: importing a module runs each package above it."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name an ImportFrom refers to, from inside ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def walk(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes``, leaving out ``if TYPE_CHECKING:`` bodies (imports that never run)."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        yield node
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in {getattr(test, "id", None), getattr(test, "attr", None)}:
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _is_plain(value: ast.AST | None) -> bool:
    """An expression that calls nothing (a literal table, a name, a path built with /): it runs nothing on import."""
    return value is not None and not any(isinstance(n, (ast.Call, ast.Await, ast.Yield)) for n in ast.walk(value))


def _split(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """A module's units: TOP (what runs on import), each function and class, each plain-literal assignment."""
    units: dict[str, list[ast.AST]] = {TOP: []}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            units[node.name] = [node]
            # decorators, base classes and default values run on import
            extra = node.decorator_list + getattr(node, "bases", []) + getattr(node, "keywords", [])
            if not isinstance(node, ast.ClassDef):
                extra += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            else:
                extra += [s for s in node.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
            units[TOP].extend(extra)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_plain(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if len(names) == len(targets):
                for name in names:
                    units[name] = [node]
                continue
            units[TOP].append(node)
        else:
            units[TOP].append(node)
    return units


def _bindings(module: str, is_package: bool, node: ast.AST, index: frozenset[str]) -> dict[str, Binding]:
    """The names an import statement binds -> (module, name in it; None: the module itself)."""
    if isinstance(node, ast.Import):
        return {
            a.asname or a.name.split(".")[0]: (a.name if a.asname else a.name.split(".")[0], None) for a in node.names
        }
    if isinstance(node, ast.ImportFrom):
        base = _absolute(module, is_package, node)
        return {
            a.asname or a.name: ((f"{base}.{a.name}", None) if f"{base}.{a.name}" in index else (base, a.name))
            for a in node.names
        }
    return {}


def _subparser_handlers(tree: ast.Module) -> dict[str, str]:
    """Subcommand -> the function ``set_defaults(func=...)`` binds to its parser in this module."""
    parsers: dict[str, str | None] = {}  # variable -> the subcommand its parser was last assigned for
    handlers: dict[str, str] = {}

    def named(call: ast.AST) -> str | None:
        if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "add_parser" and call.args:
            first = call.args[0]
            return first.value if isinstance(first, ast.Constant) else None
        return None

    calls = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Call))]
    for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            parsers[node.targets[0].id] = named(node.value)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "set_defaults":
            owner = node.func.value  # type: ignore[attr-defined]
            sub = named(owner) if isinstance(owner, ast.Call) else parsers.get(getattr(owner, "id", ""))
            bound = next((k.value for k in node.keywords if k.arg == "func"), None)
            if sub is not None and isinstance(bound, ast.Name):
                handlers.setdefault(sub, bound.id)
    return handlers


def _lazy_homes(package: str, units: dict[str, list[ast.AST]]) -> dict[str, str]:
    """A package's lazily exported names -> their modules (``lazy_exports(__name__, TABLE)`` in its __init__)."""
    for node in walk(units[TOP]):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports" and len(node.args) == 2:
            (table,) = units.get(getattr(node.args[1], "id", ""), [None])
            if isinstance(table, ast.Assign) and isinstance(table.value, ast.Dict):
                keys, values = table.value.keys, table.value.values
                return {k.value: f"{package}.{v.value}" for k, v in zip(keys, values)}  # type: ignore[union-attr]
    return {}


def module_root(module: str, path: Path) -> Path:
    """The workflow folder holding a module's package (brorl.a.b at <root>/brorl/a/b.py)."""
    depth = len(module.split(".")) + (path.name == "__init__.py")
    return path.parents[depth - 1]


def _unit_record(module: str, is_package: bool, path: Path, unit: str, nodes: list, index: frozenset[str]) -> dict:
    """What one unit imports, names, reads and launches, from one pass over its nodes (paths relative to the folder
    above the module's workflow folder: the repository, or a copy of it)."""
    root = module_root(module, path)
    everything = list(walk(nodes))
    imports = [b for node in everything for b in _bindings(module, is_package, node, index).items()]
    local = {name for name, _ in imports} if unit != TOP else set()
    # handlers bound with set_defaults(func=...) run for their own subcommand only: the parser builder, which names
    # every handler, does not use them
    skip: set[int] = set()
    dynamic, attributes, strings = None, set(), set()
    for node in everything:
        if isinstance(node, ast.Call):
            if getattr(node.func, "attr", None) == "set_defaults":
                skip.update(id(k.value) for k in node.keywords if k.arg == "func")
            called = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if called in {"import_module", "__import__"} and not (node.args and isinstance(node.args[0], ast.Constant)):
                dynamic = node.lineno
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.add((node.value.id, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in index:
            strings.add(node.value)
    names = {n.id for n in everything if isinstance(n, ast.Name) and n.id not in local and id(n) not in skip}
    return {
        "imports": [list(b) for _, b in imports],
        "locals": {name: list(b) for name, b in imports} if unit != TOP else {},
        "names": sorted(names),
        "attributes": sorted(map(list, attributes)),
        "strings": sorted(strings),
        "paths": sorted(p.relative_to(root.parent).as_posix() for p in code_paths(path, everything, root)),
        "dynamic": dynamic,
    }


@cache
def _layout(index: frozenset[str]) -> str:
    """A digest of the package's module names: a record depends on which names are modules."""
    return hashlib.sha256("\n".join(sorted(index)).encode()).hexdigest()[:12]


@cache
def module_record(module: str, path: Path, index: frozenset[str]) -> dict[str, Any]:
    """Everything the derivation reads in one module, as plain values (kept per file version and package layout)."""
    return cached(path, f"facts-{_layout(index)}", lambda p: _compute_record(module, p, index))


def _compute_record(module: str, path: Path, index: frozenset[str]) -> dict[str, Any]:
    tree = parse(path)
    is_package = path.name == "__init__.py"
    units = _split(tree)
    aliases: dict[str, Binding] = {}
    for node in walk(units[TOP]):
        aliases.update(_bindings(module, is_package, node, index))
    return {
        "units": {name: _unit_record(module, is_package, path, name, nodes, index) for name, nodes in units.items()},
        "aliases": {name: list(b) for name, b in aliases.items()},
        "homes": _lazy_homes(module, units) if is_package else {},
        "handlers": _subparser_handlers(tree),
    }


def script_record(path: Path) -> list[list[str]]:
    """(module, name) pairs a launched script imports (absolute imports: it runs outside the package)."""

    def compute(p: Path) -> list[list[str]]:
        found: list[list[str]] = []
        for node in walk([parse(p)]):
            if isinstance(node, ast.Import):
                found += [[alias.name, "*"] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found += [[node.module, alias.name] for alias in node.names]
        return found

    return cached(path, "script", compute)
