"""The files a command of this package runs, found statically: the code ``python -m brorl.<stage> <subcommand>`` can
reach, with the package data it reads and the code it launches in other processes.

Reachability is followed per unit of a module (brorl.reporting.source_facts: its top level, each function and
class, each plain-literal table); a module's file is in the closure once its top level runs. Followed: imports at any
level (a function's only when the function is reached), relative imports, the packages above every imported module,
names a package exports lazily (``lazy_exports`` tables), string constants naming a module of the package (the scorer
and engine tables, ``python -m`` launches: the whole module), files beside a module that it names
(``paper_results.yaml``) and paths it builds from string parts (``WORKFLOW / "scripts" / "openrlhf_site"``: the job
hook every OpenRLHF process loads through ``site``). The entry is the package's ``__main__`` and the handler
``set_defaults(func=...)`` binds to the subcommand, so one subcommand's closure leaves out another's. Nothing is
imported: standard library only, so the driver environment (no torch) derives the same closures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .source_facts import TOP, module_record, script_record
from .source_paths import REPO, WORKFLOW, ClosureError, files_under

PACKAGE = "brorl"
WHOLE = "*"  # every unit of a module

# Modules that import a module whose name is computed at run time, and why the derivation still sees what they load.
DYNAMIC_IMPORTS = {
    "brorl": "lazy_exports: followed where a name is imported from a package (its table of homes)",
    "brorl.scoring.dispatch": "SCORERS names each verifier's module in a string constant, which is followed",
    "brorl.training.cli": "ENGINES names each engine's module in a string constant, which is followed",
    "brorl.scoring.instructions": "imports lighteval's checkers, not a module of this package",
}

__all__ = ["REPO", "WORKFLOW", "ClosureError", "Closure", "command_closure", "module_index", "DYNAMIC_IMPORTS"]


@dataclass
class Closure:
    """The package modules a command runs (their top level executes) and every file it runs or reads."""

    modules: set[str] = field(default_factory=set)
    files: set[Path] = field(default_factory=set)


@cache
def module_index(workflow: Path = WORKFLOW) -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package is its ``__init__.py``)."""
    index = {}
    for path in sorted((workflow / PACKAGE).rglob("*.py")):
        parts = path.relative_to(workflow).with_suffix("").parts
        if "__pycache__" not in parts:
            index[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.resolve()
    return index


def _prefixes(name: str) -> Iterator[str]:
    """brorl.a.b -> brorl, brorl.a, brorl.a.b: importing a module runs each package above it."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


class _Reach:
    """A worklist of (module, unit) pairs reached from a command's entry, and the files they run or read."""

    def __init__(self, workflow: Path):
        self.workflow, self.index = workflow, module_index(workflow)
        self.names = frozenset(self.index)
        self.seen: set[tuple[str, str]] = set()
        self.todo: list[tuple[str, str]] = []
        self.closure = Closure()
        # a module of DYNAMIC_IMPORTS loads the modules its strings name only once its computed import runs
        self.loading: set[str] = set()
        self.named: dict[str, set[str]] = {}

    def record(self, module: str) -> dict[str, Any]:
        return module_record(module, self.index[module], self.names)

    def add(self, module: str, unit: str = TOP) -> None:
        """Reach ``unit`` of ``module`` (a name it defines, imports or exports lazily; WHOLE: all of it)."""
        if module not in self.index:
            return  # not this package's (numpy, vllm, ...)
        for package in _prefixes(module):
            if package in self.index:
                self._push(package, TOP)
        record = self.record(module)
        if unit == WHOLE:
            for name in record["units"]:
                self._push(module, name)
        elif unit in record["units"]:
            self._push(module, unit)
        elif unit in record["aliases"]:
            self.add(*_target(record["aliases"][unit]))
        elif f"{module}.{unit}" in self.index:
            self.add(f"{module}.{unit}", WHOLE)
        elif unit in record["homes"]:
            self.add(record["homes"][unit], unit)
        else:
            self.add(module, WHOLE)  # a name the module makes some other way: all of it, to be safe

    def _push(self, module: str, unit: str) -> None:
        if (module, unit) not in self.seen:
            self.seen.add((module, unit))
            self.todo.append((module, unit))

    def run(self) -> Closure:
        while self.todo:
            module, unit = self.todo.pop()
            self.closure.modules.add(module)
            self._visit(module, unit)
        self.closure.files |= {self.index[m] for m in self.closure.modules}
        return self.closure

    def _visit(self, module: str, unit: str) -> None:
        """Reach what one unit imports, names, launches and reads."""
        record = self.record(module)
        facts = record["units"][unit]
        if facts["dynamic"] is not None and module not in DYNAMIC_IMPORTS:
            raise ClosureError(
                f"{self.index[module].relative_to(self.workflow.parent)}:{facts['dynamic']} imports a module whose name is "
                "computed, which the rerun derivation does not follow: name the modules in string constants and add "
                "the module to DYNAMIC_IMPORTS (brorl.reporting.source_closure) saying why"
            )
        for binding in facts["imports"]:
            self.add(binding[0])  # the import runs the module's top level
            lazy = binding[0] in self.index and binding[1] in self.record(binding[0])["homes"]
            if unit != TOP or lazy:  # a function's own import is used by it; a lazy name loads its home at once
                self.add(*_target(binding))
        for name in facts["names"]:
            if name in record["units"]:
                self.add(module, name)
            elif name in record["aliases"]:
                self.add(*_target(record["aliases"][name]))
        for name, attribute in facts["attributes"]:
            binding = facts["locals"].get(name) or record["aliases"].get(name)
            if binding is not None and binding[1] is None:  # module.attribute
                self.add(binding[0], attribute)
        self._strings(module, facts)
        for relative in facts["paths"]:
            for path in files_under(self.workflow.parent / relative):
                if path not in self.closure.files:
                    self.closure.files.add(path)
                    if path.suffix == ".py" and not path.is_relative_to(self.workflow / PACKAGE):
                        for imported, name in script_record(path):  # a launched script: all of it runs
                            self.add(imported, name)

    def _strings(self, module: str, facts: dict[str, Any]) -> None:
        """Modules named in strings, run whole: at once (a `python -m` launch), or, in a module of DYNAMIC_IMPORTS,
        once a unit of it that imports by a computed name is reached (a table such as ENGINES: naming it for a
        parser's choices loads no engine)."""
        if module not in DYNAMIC_IMPORTS:
            for named in facts["strings"]:
                self.add(named, WHOLE)
            return
        self.named.setdefault(module, set()).update(facts["strings"])
        if facts["dynamic"] is not None:
            self.loading.add(module)
        if module in self.loading:
            for named in sorted(self.named[module]):
                self.add(named, WHOLE)


def _target(binding: list | tuple) -> tuple[str, str]:
    module, name = binding
    return (module, WHOLE) if name is None else (module, name)


@cache
def _main_modules(entry: str, workflow: Path) -> frozenset[str]:
    """The modules a package's ``__main__`` reaches before any subcommand's handler."""
    probe = _Reach(workflow)
    probe.add(f"{entry}.__main__", WHOLE)
    return frozenset(probe.run().modules)


def command_closure(commands: Iterable[tuple[str, str | None]], workflow: Path = WORKFLOW) -> Closure:
    """Every package module and file the commands ``python -m <entry> <subcommand>`` run, read or launch."""
    index = module_index(workflow)
    reach = _Reach(workflow)
    for entry, subcommand in commands:
        if entry not in index:
            raise ClosureError(f"python -m {entry}: no such module in workflow/{PACKAGE}")
        if index[entry].name != "__init__.py":
            reach.add(entry, WHOLE)  # a module run as a script: all of it
            continue
        if f"{entry}.__main__" not in index:
            raise ClosureError(f"python -m {entry}: the package has no __main__ module")
        # the handler a module of __main__'s closure binds to the subcommand's parser; where none does, every handler
        # (an unknown subcommand stays covered)
        bound = {m: reach.record(m)["handlers"] for m in sorted(_main_modules(entry, workflow))}
        chosen = [(m, h[subcommand]) for m, h in bound.items() if subcommand in h]
        for module, handler in chosen or [(m, h) for m, hs in bound.items() for h in hs.values()]:
            reach.add(module, handler)
        reach.add(f"{entry}.__main__", WHOLE)
    return reach.run()
