"""Statistics for the paper's significance claim: paired one-tailed t-tests, bootstrap CIs, Holm's correction.

Importing ``brorl.stats`` loads numpy and ``scipy.special`` only (no pandas, scipy.stats, torch, vllm or
matplotlib). The pandas helpers (per-instance means from sample-level scores, arm comparisons by family and
benchmark) live in ``brorl.stats.units``; import that module explicitly. ``python -m brorl.stats.bench`` times the
whole analysis at the paper's size.
"""

from .tests import (  # the public names
    BootstrapCI,
    PairedTest,
    bootstrap_ci,
    bootstrap_distribution,
    grouped_paired_one_tailed,
    holm,
    holm_reject,
    paired_bootstrap_ci,
    paired_differences,
    paired_one_tailed,
)

__all__ = [
    "BootstrapCI",
    "PairedTest",
    "bootstrap_ci",
    "bootstrap_distribution",
    "grouped_paired_one_tailed",
    "holm",
    "holm_reject",
    "paired_bootstrap_ci",
    "paired_differences",
    "paired_one_tailed",
]
