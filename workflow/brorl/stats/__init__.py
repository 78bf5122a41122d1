"""Statistics for the paper's significance claim: paired one-tailed t-tests, bootstrap CIs, Holm's correction.

Importing ``brorl.stats`` loads numpy and ``scipy.special`` only (no pandas, scipy.stats, torch, vllm or
matplotlib; the t-test and the bootstrap import scipy.stats when called). The pandas helpers (per-instance means from sample-level scores, arm comparisons by family and
benchmark) live in ``brorl.stats.units``; import that module explicitly. ``python -m brorl.stats.bench`` times the
whole analysis at the paper's size.
"""

# the public names are those of brorl.stats.tests (its __all__)
from .tests import *  # noqa: F403
from .tests import __all__  # noqa: F401
