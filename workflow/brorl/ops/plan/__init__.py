"""The cost plan of a reproduction, printed before anyone submits: ``python -m brorl.ops.plan`` (see cli.py)."""

from .estimate import CostRow, Estimates, Resources, evaluation_checkpoints, plan_rows, training_hours
from .profile import ProfileError, read_estimates, read_profile

__all__ = [
    "CostRow",
    "Estimates",
    "ProfileError",
    "Resources",
    "evaluation_checkpoints",
    "plan_rows",
    "read_estimates",
    "read_profile",
    "training_hours",
]
