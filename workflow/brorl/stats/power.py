"""What a comparison of two arms can establish before anyone pays for it: its noise, its minimum detectable effect and
its power against the effect the paper's trajectory predicts (docs/stages.md#what-a-run-can-establish).

The unit is the pooled per-instance pass@1 in points (every problem of every evaluated benchmark counts once), the
paper's own test unit. Two sources of noise:

- evaluation: a checkpoint's pass@1 on one problem is a mean of S samples, binomial within the problem. Over N
  problems with mean pass rate mu the variance of the pooled mean is r * mu (1 - mu) / (S N), where r <= 1 is the
  share of the binomial variance left when per-problem pass rates spread (r = 1 is the worst case). r is calibrated
  on the paper's own paired standard error (its reported delta over its t statistic);
- training seeds: two runs of one recipe differ by sigma_seed points. Nothing is published for continued RLVR of a
  1.5B model, so sigma_seed is a range (config analysis.power.seed_sd_points), labelled NOT PUBLISHED.

With k runs per arm the difference of the arms' means has variance 2 (se_eval^2 + sigma_seed^2) / k; with one run per
arm a test over problems sees only the evaluation term, and a zero effect is called significant far more often than
alpha when sigma_seed > 0 (false_positive_rate). The tests are one-sided at alpha, like the paper's.

Pure, standard library only where it must run in the Slurm driver's environment (no scipy): normal quantiles from
statistics.NormalDist, Student's t from scipy where installed, else from stated approximations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

# The paper's headline test (Section 4.2.3): mean per-instance delta and its t statistic, BroRL against ProRL.
PAPER_T_DELTA_POINTS = 0.33
PAPER_T_STATISTIC = 4.84
# Its equal-time pair (Table 1): BroRL at +134 steps (122.8 h) against ProRL at +535 steps (133.8 h).
EQUAL_TIME_TREATMENT, EQUAL_TIME_CONTROL = "treatment@134", "control@535"
PAPER_BRORL_STEPS = 134
BRORL_STEP_SAMPLES = 128 * 512  # kept samples of one BroRL step (prompts per step x N)
TARGET_POWER = 0.8


NORMAL = NormalDist()


def quantile(p: float, df: float | None = None) -> float:
    """The p quantile of the standard normal (df None) or of Student's t with df degrees of freedom (scipy where
    installed; the driver environment has none: a Cornish-Fisher expansion, within 1% for df >= 2 at these p)."""
    z = NORMAL.inv_cdf(p)
    if df is None:
        return z
    try:
        from scipy import stats
    except ImportError:
        g1 = (z**3 + z) / 4
        g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
        g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
        g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
        return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4
    return float(stats.t.ppf(p, df))


def _noncentral_t_cdf(x: float, df: float, shift: float) -> float:
    """P(T <= x) for a noncentral t (scipy where installed; else the normal approximation of Abramowitz & Stegun
    26.7.10)."""
    try:
        from scipy import stats
    except ImportError:
        return NORMAL.cdf((x * (1 - 1 / (4 * df)) - shift) / math.sqrt(1 + x * x / (2 * df)))
    return float(stats.nct.cdf(x, df, shift))


def eval_se_points(problems: int, samples: int, mean: float, r: float) -> float:
    """Standard error (points) of one checkpoint's pooled pass@1: sampling within problems, r * mu(1-mu) / (S N)."""
    return 100 * math.sqrt(r * mean * (1 - mean) / (samples * problems))


def calibrate_r(problems: int, samples: int, mean: float) -> float:
    """r that makes the paired se of two checkpoints (variance 2 se^2) equal the paper's delta / t."""
    paired_se = PAPER_T_DELTA_POINTS / PAPER_T_STATISTIC / 100
    return paired_se**2 / 2 * samples * problems / (mean * (1 - mean))


def diff_se(eval_se: float, seed_sd: float, runs: int) -> float:
    """Standard error (points) of the difference of two arms' means over `runs` runs each."""
    return math.sqrt(2 * (eval_se**2 + seed_sd**2) / runs)


def degrees_of_freedom(runs: int) -> float | None:
    """df of the test across runs (problems nested in runs): 2k - 2; None (a z-test with sigma_seed known, the best
    case) for one run per arm."""
    return 2 * runs - 2 if runs >= 2 else None


def minimum_detectable(se: float, runs: int, alpha: float, power: float = TARGET_POWER) -> float:
    """The effect (points) found with probability `power` by a one-sided test at `alpha`."""
    df = degrees_of_freedom(runs)
    return (quantile(1 - alpha, df) + quantile(power, df)) * se


def power_of(effect: float, se: float, runs: int, alpha: float) -> float:
    """P(the one-sided test at alpha rejects | true effect `effect` points)."""
    df = degrees_of_freedom(runs)
    critical = quantile(1 - alpha, df)
    if df is None:
        return 1 - NORMAL.cdf(critical - effect / se)
    return 1 - _noncentral_t_cdf(critical, df, effect / se)


def false_positive_rate(eval_se: float, seed_sd: float, alpha: float) -> float:
    """How often a test over problems with one run per arm (it sees only the evaluation noise) calls a zero effect
    significant when training seeds move each arm by seed_sd points."""
    seen, true = math.sqrt(2) * eval_se, math.sqrt(2 * (eval_se**2 + seed_sd**2))
    return 1 - NORMAL.cdf(quantile(1 - alpha) * seen / true)


def predicted_effect(steps_equivalent: float, published: float, model: str) -> float:
    """The gap the paper's trajectory predicts after `steps_equivalent` BroRL steps, from its gap `published` at
    PAPER_BRORL_STEPS: linear in steps (the two equal-time points fit an exponent near 1) or front-loaded (sqrt)."""
    share = max(steps_equivalent, 0.0) / PAPER_BRORL_STEPS
    return published * (share if model == "linear" else math.sqrt(share))


@dataclass(frozen=True)
class PooledDelta:
    """The per-instance delta two rows of the paper's Tables 3-5 imply, weighted by the benchmarks' problems."""

    delta: float  # points
    baseline_mean: float  # the control row's pooled pass@1 (fraction)
    driver: str  # the benchmark whose weighted difference moves the delta most
    driver_share: float  # its contribution to the delta (points)


def pooled_delta(tables: Mapping[str, Mapping], problems: Mapping[str, int], a: str, b: str) -> PooledDelta:
    """Row `a` minus row `b` of the paper's benchmark tables (benchmark_tables of paper_results.yaml) as a pooled
    per-instance delta over the benchmarks of `problems` that the paper reports."""
    cells = {
        name: values
        for family in tables.values()
        for name, values in family["benchmarks"].items()
        if name in problems and values.get(a) is not None and values.get(b) is not None
    }
    total = sum(problems[n] for n in cells)
    if not total:
        raise ValueError(f"no benchmark of the evaluation has both {a} and {b} in the paper's tables")
    parts = {n: problems[n] * (v[a] - v[b]) / total for n, v in cells.items()}
    driver = max(parts, key=lambda n: abs(parts[n]))
    baseline = sum(problems[n] * v[b] for n, v in cells.items()) / total / 100
    return PooledDelta(sum(parts.values()), baseline, driver, parts[driver])
