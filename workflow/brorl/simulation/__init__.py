"""Token-level simulation of RLVR with N rollouts (BroRL, Section 4.1 / Figure 3) and its theory checks.

Its names load on first use, so that importing the package (brorl.config reads simulation.config_checks) does not
import torch, which the driver environment lacks.
"""

from .. import lazy_exports

_HOMES = {
    "COLUMNS": "engine",
    "simulate": "engine",
    "OptimizerSpec": "spec",
    "SimulationError": "spec",
    "SimulationSpec": "spec",
}
__all__, __getattr__ = lazy_exports(__name__, _HOMES)
