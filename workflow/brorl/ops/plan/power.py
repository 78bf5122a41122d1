"""What a planned run can establish, per compared pair of arms, before anyone pays for it: the noise of the
comparison, its minimum detectable effect (MDE) and, for the paper's own comparison, its power against the gap the
paper's trajectory predicts at the planned compute (the maths: brorl.stats.power). `make plan` prints the lines; the
workflow prints the one-line verdict at start-up (docs/stages.md#what-a-run-can-establish).

A pair has a published effect to power against when it is the paper's comparison: both arms continue the paper's
start checkpoint (engine cluster) with the paper's two rollout sizes (N = 16 against N = 512). Its predicted gap is
the paper's equal-time pooled delta (Tables 3-5 weighted by problems) scaled to the treatment's BroRL-equivalent
steps (its kept samples / 128 x 512), linearly or front-loaded (sqrt). Other pairs (the N sweep, the algorithms,
the lr ablation, the tiny preset) get their MDE and "no published effect to power against".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...stats import power as P

PAPER_NS = (16, 512)  # the paper's two rollout sizes (control, treatment)


@dataclass(frozen=True)
class Pair:
    """Two arms the analysis compares: the treatment expected to be better, the control."""

    label: str
    treatment: Mapping[str, Any]
    control: Mapping[str, Any]


def compared_pairs(config: Mapping[str, Any]) -> list[Pair]:
    """The enabled pairs the analysis compares: the main comparison, the lr ablation, the algorithms' pairs and
    the N sweep's arms against its first (duplicates of the main pair left out)."""
    arms = {arm["name"]: arm for arm in config["arms"] if arm.get("enabled", True)}
    analysis = config["analysis"]
    pairs: list[tuple[str, str, str]] = []
    main = analysis["comparison"]
    pairs.append(("main comparison", main["treatment"], main["control"]))
    if analysis.get("lr_ablation"):
        pairs.append(("lr ablation", analysis["lr_ablation"], main["control"]))
    if analysis["algorithms"].get("enabled"):
        pairs += [(f"{p['estimator']} N=512 vs N=16", p["n512"], p["n16"]) for p in analysis["algorithms"]["pairs"]]
    sweep = analysis["n_sweep"]
    if sweep.get("enabled") and sweep.get("arms"):
        pairs += [(f"N sweep {name} vs {sweep['arms'][0]}", name, sweep["arms"][0]) for name in sweep["arms"][1:]]
    seen, out = set(), []
    for label, treatment, control in pairs:
        if treatment in arms and control in arms and (treatment, control) not in seen:
            seen.add((treatment, control))
            out.append(Pair(label, arms[treatment], arms[control]))
    return out


def replicates(arm: Mapping[str, Any]) -> int:
    """Training runs of an arm (its replicates key; 1 when absent)."""
    return int(arm.get("replicates", 1))


def is_published_pair(config: Mapping[str, Any], pair: Pair) -> bool:
    """The paper's comparison: the paper's start checkpoint (engine cluster) and its two rollout sizes."""
    return config["engine"] == "cluster" and (pair.control["n"], pair.treatment["n"]) == PAPER_NS


def steps_equivalent(arm: Mapping[str, Any]) -> float:
    """An arm's kept samples over training as BroRL steps (128 prompts x 512 rollouts each)."""
    return arm["continued_steps"] * arm["prompts_per_step"] * arm["n"] / P.BRORL_STEP_SAMPLES


@dataclass(frozen=True)
class Noise:
    """The evaluation's noise model: problems, samples per problem, mean pass rate and r, with where they come from."""

    problems: int
    samples: int
    mean: float
    r: float
    basis: str

    @property
    def eval_se(self) -> float:
        return P.eval_se_points(self.problems, self.samples, self.mean, self.r)


def noise_model(config: Mapping[str, Any], problems: Mapping[str, int], paper: Mapping[str, Any]) -> Noise:
    """The paper's calibration for a run of the paper's start checkpoint; the worst case (r = 1 at mean 0.5) else."""
    total, samples = sum(problems.values()), int(config["evaluation"]["n_samples"])
    if config["engine"] == "cluster":
        mean = P.pooled_delta(paper["benchmark_tables"], problems, "base@0", "base@0").baseline_mean
        r = P.calibrate_r(total, samples, mean)
        return Noise(total, samples, mean, r, f"r {r:.2f} calibrated on the paper's t, mean {mean:.2f}")
    return Noise(total, samples, 0.5, 1.0, "r 1 at mean 0.5, the worst case: no calibration at this scale")


@dataclass(frozen=True)
class PairPower:
    """One pair's numbers at each seed spread: se, MDE and (for the paper's pair) power under both growth models."""

    pair: Pair
    runs: int
    steps: float
    predicted: tuple[float, float] | None  # (low, high) over the linear and front-loaded readings; None: none published
    rows: list[tuple[float, float, float, tuple[float, float] | None]]  # (seed sd, se, MDE, power range)
    false_positive: float  # one run per arm: P(significant | no effect) at the central seed sd

    def verdict(self, central: float, target: float) -> str:
        """Whether the pair can support or falsify the claim, at the central seed spread."""
        row = next(r for r in self.rows if r[0] == central)
        if self.predicted is None:
            return f"MDE {row[2]:.2f} points at seed sd {central:g}; no published effect to power against"
        low, high = row[3]
        words = "can support or falsify" if low >= target else "cannot support or falsify"
        single = "; with one run per arm it compares two checkpoints, not the method" if self.runs == 1 else ""
        return (
            f"the paper's trajectory predicts +{self.predicted[0]:.2f} to +{self.predicted[1]:.2f} points (linear "
            f"and front-loaded growth), power {low:.2f}-{high:.2f} at seed sd {central:g} (NOT PUBLISHED): this run "
            f"{words} the claim{single}"
        )


def pair_power(config: Mapping[str, Any], pair: Pair, noise: Noise, published_delta: float) -> PairPower:
    """The power lines' numbers of one pair."""
    settings, alpha = config["analysis"]["power"], config["analysis"]["alpha"]
    runs = min(replicates(pair.treatment), replicates(pair.control))
    steps = steps_equivalent(pair.treatment)
    predicted = None
    if is_published_pair(config, pair):
        predicted = tuple(sorted(P.predicted_effect(steps, published_delta, m) for m in ("linear", "sqrt")))
    rows = []
    for sd in settings["seed_sd_points"]:
        se = P.diff_se(noise.eval_se, sd, runs)
        power = tuple(sorted(P.power_of(e, se, runs, alpha) for e in predicted)) if predicted else None
        rows.append((sd, se, P.minimum_detectable(se, runs, alpha, settings["target"]), power))
    central = central_seed_sd(config)
    return PairPower(pair, runs, steps, predicted, rows, P.false_positive_rate(noise.eval_se, central, alpha))


def central_seed_sd(config: Mapping[str, Any]) -> float:
    """The middle of the stated seed spreads: the one a verdict is read at."""
    spreads = sorted(config["analysis"]["power"]["seed_sd_points"])
    return spreads[len(spreads) // 2]


def plan_power(config: Mapping[str, Any], problems: Mapping[str, int]) -> tuple[Noise, list[PairPower]]:
    """The noise model and every compared pair's power."""
    paper = _paper()
    noise = noise_model(config, problems, paper)
    try:
        delta = P.pooled_delta(paper["benchmark_tables"], problems, P.EQUAL_TIME_TREATMENT, P.EQUAL_TIME_CONTROL).delta
    except ValueError:  # no paper benchmark evaluated (the tiny preset): no published effect either way
        delta = 0.0
    return noise, [pair_power(config, pair, noise, delta) for pair in compared_pairs(config)]


def power_lines(config: Mapping[str, Any], problems: Mapping[str, int]) -> list[str]:
    """The plan's section: per pair, its noise, MDE and power, and the verdict."""
    noise, pairs = plan_power(config, problems)
    alpha, target = config["analysis"]["alpha"], config["analysis"]["power"]["target"]
    central = central_seed_sd(config)
    lines = [
        f"What each compared pair can establish (pooled per-instance pass@1, one-sided alpha {alpha:g}, power target "
        f"{target:g}; evaluation {noise.problems:,} problems x {noise.samples} samples: se {noise.eval_se:.3f} points "
        f"per checkpoint, {noise.basis}; training-seed spread NOT PUBLISHED, stated as a range):"
    ]
    for pp in pairs:
        t, c = pp.pair.treatment["name"], pp.pair.control["name"]
        lines.append(f"  {pp.pair.label}: {t} vs {c}, {pp.runs} run(s) per arm, {pp.steps:.1f} BroRL-equivalent steps")
        cells = [
            f"seed sd {sd:g}: se {se:.3f}, MDE {mde:.2f}" + (f", power {power[0]:.2f}-{power[1]:.2f}" if power else "")
            for sd, se, mde, power in pp.rows
        ]
        lines.append("    " + " | ".join(cells))
        if pp.runs == 1:
            lines.append(
                "    one run per arm: the test over problems compares two checkpoints, not the method; at seed sd "
                f"{central:g} it calls a zero effect significant {pp.false_positive:.0%} of the time"
            )
        lines.append(f"    verdict: {pp.verdict(central, target)}")
    return lines + decision_lines(config, problems)


def power_verdict(config: Mapping[str, Any], problems: Mapping[str, int]) -> str:
    """The one-line verdict of the main comparison (the workflow prints it at start-up)."""
    _, pairs = plan_power(config, problems)
    if not pairs:
        return "what this run can establish: no compared pair of arms is enabled"
    pp = pairs[0]
    central = central_seed_sd(config)
    if config["decision"]["enabled"] and config["decision"]["mode"] == "paper":
        return (
            "what this run can establish: the decision experiment's F1 and F3 (supported, falsified or inconclusive "
            "against registered thresholds), not the learning claim; make plan prints their power"
        )
    return (
        f"what this run can establish ({pp.pair.treatment['name']} vs {pp.pair.control['name']}, {pp.runs} run(s) "
        f"per arm): {pp.verdict(central, config['analysis']['power']['target'])} (make plan prints the details)"
    )


def design_record(config: Mapping[str, Any], problems: Mapping[str, int]) -> dict[str, Any]:
    """What SUMMARY.md states about the main comparison's design, from the plan's inputs only (never from the
    observed effect), and the paper's own test beside its tables (analysis spec `design`)."""
    noise, pairs = plan_power(config, problems)
    central, target = central_seed_sd(config), config["analysis"]["power"]["target"]
    record: dict[str, Any] = {"eval_se": noise.eval_se, "noise": noise.basis, "seed_sd": central}
    if pairs:
        pp = pairs[0]
        row = next(r for r in pp.rows if r[0] == central)
        record.update(
            runs=pp.runs,
            mde=row[2],
            power=list(row[3]) if row[3] else None,
            predicted=list(pp.predicted) if pp.predicted else None,
            false_positive=pp.false_positive,
            verdict=pp.verdict(central, target),
        )
    try:
        if config["engine"] != "cluster":
            raise ValueError("not the paper's benchmarks")  # the tiny preset: no paper test to set beside
        tables = P.pooled_delta(_paper()["benchmark_tables"], problems, P.EQUAL_TIME_TREATMENT, P.EQUAL_TIME_CONTROL)
        record["paper_test"] = {
            "reported": P.PAPER_T_DELTA_POINTS,
            "t": P.PAPER_T_STATISTIC,
            "tables": tables.delta,
            "driver": tables.driver,
            "driver_share": tables.driver_share,
            "benchmarks": sum(1 for _ in problems),
        }
    except ValueError:  # none of the paper's benchmarks is evaluated (the tiny preset)
        record["paper_test"] = None
    return record


def decision_lines(config: Mapping[str, Any], problems: Mapping[str, int]) -> list[str]:
    """The decision experiment's power (config `decision`): F1 against both published gains with the evaluation's
    paired se, F3 against the published ratio and no advantage at assumed step-time spreads (its extension bound)."""
    block = config["decision"]
    if not block["enabled"] or block["mode"] != "paper":
        return []
    noise = noise_model(config, problems, _paper())
    alpha, f1, f3 = block["alpha"], block["f1"], block["f3"]
    se = math.sqrt(2) * noise.eval_se  # paired over the same problems: at most the two checkpoints' independent se
    critical = P.quantile(1 - alpha)
    supported = 1 - P.NORMAL.cdf(critical - (f1["published_high"] - f1["threshold"]) / se)
    falsified = 1 - P.NORMAL.cdf(critical - (f1["threshold"] - f1["published_low"]) / se)
    arms = {a["name"]: a for a in config["arms"]}
    steps = [arms[f3[role]]["continued_steps"] - f3["warmup_steps"] for role in ("treatment", "control")]
    cells = []
    for cv in (0.05, 0.10, f3["cv_extend"], 0.20):
        log_se = cv * math.sqrt(1 / steps[0] + 1 / steps[1])
        t = P.quantile(1 - alpha, sum(steps) - 2)
        margin = min(math.log(f3["published"]) - math.log(f3["threshold"]), math.log(f3["threshold"]))
        cells.append(f"CV {cv:g}: {1 - P.NORMAL.cdf(t - margin / log_se):.3f}")
    return [
        "The decision experiment (thresholds registered before any result; docs/stages.md#the-decision-experiment):",
        f"  F1 released weights vs start: paired se at most {se:.3f} points; P(supported | the paper's "
        f"+{f1['published_high']}) {supported:.4f}, P(falsified | ProRL-like +{f1['published_low']}) {falsified:.4f}",
        f"  F3 kept samples per GPU-hour, {steps[0]} + {steps[1]} measured steps: power against the published "
        f"{f3['published']} or no advantage, by step-time CV (not yet measured): {' | '.join(cells)}; the registered "
        f"extension adds {f3['extension']['treatment']} + {f3['extension']['control']} steps above CV {f3['cv_extend']}",
        "  what it cannot show: a gain attributed to N (N, prompts per step and the lr rule change together), learning "
        "per sample",
    ]


@lru_cache(maxsize=1)
def _paper() -> Mapping[str, Any]:
    """The paper's published numbers (read once per process: the DAG asks for them per rule)."""
    from ...analysis.paper import load_paper

    return load_paper()
