"""Run a function on a module right after it is first imported: how the patches of upstream code reach their modules
without importing them early. Used by the driver-side patches of this folder (a .pth file imports them at start-up,
before Snakemake has loaded anything) and by the job hook of every OpenRLHF process
(workflow/scripts/openrlhf_site/sitecustomize.py loads this file by its path). Standard library only."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable
from types import ModuleType

_PATCHES: dict[str, list[Callable[[ModuleType], None]]] = {}


def after_import(target: str, then: Callable[[ModuleType], None]) -> None:
    """Call ``then(module)`` right after ``target`` executes (at once if it is already imported); several functions
    on one module run in the order they were registered."""
    if target in sys.modules:
        then(sys.modules[target])
        return
    _PATCHES.setdefault(target, []).append(then)


class _PatchingLoader(importlib.abc.Loader):
    """The module's own loader, with the registered functions applied after it executes."""

    def __init__(self, loader, patches: list[Callable[[ModuleType], None]]) -> None:
        self._loader, self._patches = loader, patches

    def __getattr__(self, attribute):  # get_resource_reader, is_package, get_data, get_source: the real loader's
        return getattr(self._loader, attribute)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        for patch in self._patches:
            patch(module)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    """Finds a module with patches waiting with the normal machinery, then wraps its loader (once: the patches are
    taken when the module is found)."""

    def find_spec(self, fullname, path, target=None):
        patches = _PATCHES.pop(fullname, None)
        if not patches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, patches)
                return spec
        return None


# one finder per process: this module is imported once, under this name (the job hook loads it by path under it)
if not any(isinstance(finder, _PatchingFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _PatchingFinder())
