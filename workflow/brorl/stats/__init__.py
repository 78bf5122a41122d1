"""Statistics for the paper's significance claim: paired one-tailed t-tests, bootstrap CIs, Holm's correction.

Importing ``brorl.stats`` loads numpy and ``scipy.special`` only (no pandas, scipy.stats, torch, vllm or
matplotlib; the t-test and the bootstrap import scipy.stats when called). The pandas helpers (per-instance means from sample-level scores, arm comparisons by family and
benchmark) live in ``brorl.stats.units``; import that module explicitly. ``python -m brorl.ops.speed.stats`` times the
whole analysis at the paper's size.
"""

from .. import lazy_exports

# the public names are those of brorl.stats.tests (its __all__), loaded on first use: a module that needs only the
# standard errors (brorl.stats.stderr) does not run the tests' module, nor rerun when it changes
# (docs/cluster.md#rerun-policy)
_HOMES = {
    "BootstrapCI": "tests",
    "PairedTest": "tests",
    "bootstrap_ci": "tests",
    "bootstrap_distribution": "tests",
    "grouped_paired_one_tailed": "tests",
    "holm": "tests",
    "holm_reject": "tests",
    "paired_bootstrap_ci": "tests",
    "paired_differences": "tests",
    "paired_one_tailed": "tests",
}
__all__, __getattr__ = lazy_exports(__name__, _HOMES)
