"""BroRL reproduction suite: all logic of the Snakemake workflow lives in this package, in two wings.

The paper's wing computes the paper, one subpackage per stage: models, benchmarks, scoring, generation, training,
evaluation, throughput, simulation, stats, analysis, probe, reporting, with hub for pinned downloads. The ops wing
(``brorl.ops``) plans, checks, submits and watches a run; the paper's wing imports none of it
(tests/test_package_layout.py). At the root: this file, ``cli`` (what every command shares) and ``config``."""

import os as _os

__version__ = "0.1.0"

if _os.environ.get("BRORL_IMPORT_AUDIT"):  # the rerun test's record of what a job ran (brorl.reporting.import_audit)
    from .reporting.import_audit import install as _install

    _install(_os.environ["BRORL_IMPORT_AUDIT"])


def lazy_exports(package: str, homes: dict[str, str]):
    """``__all__`` and a module ``__getattr__`` for a package whose names (name -> its submodule) load on first use,
    so that importing the package imports none of its heavy modules (PEP 562)."""
    from importlib import import_module

    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{homes[name]}"), name)

    return sorted(homes), __getattr__
