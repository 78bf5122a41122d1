"""Token-level simulation of RLVR with N rollouts (BroRL, Section 4.1 / Figure 3) and its theory checks."""

from .engine import COLUMNS, simulate
from .spec import OptimizerSpec, SimulationError, SimulationSpec

__all__ = ["COLUMNS", "OptimizerSpec", "SimulationError", "SimulationSpec", "simulate"]
