"""Token-level simulation of RLVR with N rollouts (BroRL, Section 4.1 / Figure 3) and its theory checks.

Its names load on first use, so that importing the package (brorl.config reads simulation.config_checks) does not
import torch, which the driver environment lacks.
"""

from importlib import import_module

_HOMES = {
    "COLUMNS": "engine",
    "simulate": "engine",
    "OptimizerSpec": "spec",
    "SimulationError": "spec",
    "SimulationSpec": "spec",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_HOMES[name]}", __name__), name)
