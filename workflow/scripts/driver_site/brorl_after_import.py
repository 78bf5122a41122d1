"""Run a function on a module right after it is first imported: how the driver-side patches of this folder reach
Snakemake and its Slurm plugin without importing them early (a .pth file imports the patch modules at start-up, before
Snakemake has loaded anything)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``target`` with the other finders, then calls ``then`` on it right after it executes."""

    def __init__(self, target: str, then: Callable[[ModuleType], None]) -> None:
        self.target, self.then, self.loader = target, then, None

    def find_spec(self, name, path=None, target=None):
        if name != self.target:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None:
            return None
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.then(module)


def after_import(target: str, then: Callable[[ModuleType], None]) -> None:
    """Call ``then(module)`` once ``target`` is imported (at once if it already is)."""
    if target in sys.modules:
        then(sys.modules[target])
    else:
        sys.meta_path.insert(0, _AfterImport(target, then))
