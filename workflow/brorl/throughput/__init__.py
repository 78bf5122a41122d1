"""Paper Table 2: generation throughput of (prompts x N) layouts with and without prefix caching, and the
dynamic-sampling pass rate of each arm from its training metrics.

Importing this package imports neither vLLM nor torch (the pure parts: spec, spread, pass_rate, table).
"""

from .pass_rate import MetricsError, overall_pass_rate, pass_rate_series
from .spec import Configuration, config_name, parse_config_name
from .spread import spread, variability_verdict

__all__ = [
    "Configuration",
    "MetricsError",
    "config_name",
    "overall_pass_rate",
    "parse_config_name",
    "pass_rate_series",
    "spread",
    "variability_verdict",
]
