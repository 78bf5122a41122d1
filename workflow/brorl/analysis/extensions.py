"""Our extensions beyond the paper's test: does BroRL's N gain hold for other advantage estimators, does a larger N move
the tasks BroRL did not improve, does the main comparison hold across training runs, and SUMMARY.md's section on the
mass-balance probe.

Per estimator: one row per pair of analysis.algorithms.pairs: the pair's N=512 arm against its N=16 arm, at the
checkpoints the main comparison would choose (nearest analysis.equal_time_hours, or the final ones), by the same
paired one-tailed test over the common problems, the verdict read on Holm's adjusted p over the rows (one family of
tests: "the gain holds for estimator X").

Estimators differ in step size, not only in their baseline: GRPO's advantage of a lone success is ~22.6 at N=512 and
3.75 at N=16, RLOO's and Dr. GRPO's are not normalised, and the sqrt learning-rate rule was derived for a batch-
normalised estimator. So each arm's mean lr x RMS advantage (the size of its policy-gradient step, from metrics.jsonl)
and its mean gradient norm stand beside the test, over the steps up to the compared checkpoint;
training.advantage_batch_norm every_estimator puts every estimator on the same scale. Pure: units, hours and step
sizes in, a table out (the command writes it).

The N sweep task by task (pure): is N = 512 "not large enough for some harder problems" (Section 4.2.2)? For every
arm of ``analysis.n_sweep.arms`` evaluated at the sweep's step: each task's change since the start checkpoint (pass@1
points) with the paper's paired one-tailed test over the task's problems; for the largest N, a verdict per task as
Figure 4's classes give one (improves / worse / no gain / undetermined, Holm over the tasks: brorl.analysis.tasks).
Set beside the tasks BroRL did not improve, it says whether a larger N moves them.

The main comparison across training runs when its arms have replicates (config arms[].replicates >= 2): each run's
pooled pass@1 at the compared step, tested with brorl.stats.across_runs (problems nested in runs), the seed spread
estimated. With one run per arm it says the paired test compares two checkpoints, not the method.

SUMMARY.md's section on the mass-balance probe (our extension): each arm's last probed step against the start, the
worst drop against chance, and the two compared arms against each other, paired by probe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..stats.tests import holm, paired_one_tailed
from ..training.estimators import ESTIMATORS
from .checkpoints import SelectionError, select_checkpoints
from .paper import NOT_RUN
from .significance import compare_checkpoints
from .tasks import change_verdicts

# what the table's note says of every run: the analysis cannot see seeds it was not given, nor change the loss
NOTE = (
    "One seed per arm: a row's test is over problems and samples, not over training runs. "
    + "".join(f'"{e.name}" is {e.caveat}. ' for e in ESTIMATORS if e.caveat)
    + "Step size = lr x RMS advantage (token-weighted), mean over the steps up to the compared checkpoint; the "
    "verdict reads Holm's p over the rows."
)

COLUMNS = [
    "estimator",
    "n16_arm",
    "n16_step",
    "n16_hours",
    "n512_arm",
    "n512_step",
    "n512_hours",
    "n16_step_size",
    "n512_step_size",
    "n16_grad_norm",
    "n512_grad_norm",
    "n",
    "n16_mean",
    "n512_mean",
    "delta",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "verdict",
]


def step_size(steps: Mapping[int, Mapping[str, float | None]], up_to: int) -> tuple[float | None, float | None]:
    """(mean lr x adv_rms, mean grad_norm) over an arm's steps <= up_to; None where no step recorded it (runs
    trained before metrics schema 8)."""

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    kept = [v for s, v in steps.items() if s <= up_to]
    sizes = [v["lr"] * v["adv_rms"] for v in kept if v.get("lr") is not None and v.get("adv_rms") is not None]
    return mean(sizes), mean([v["grad_norm"] for v in kept if v.get("grad_norm") is not None])


def verdict(delta: float, p: float, alpha: float) -> str:
    """The paired test's reading: the gain holds (p < alpha, N=512 ahead) or is not resolved at this size."""
    return "N gain holds" if p < alpha and delta > 0 else f"not resolved (p >= {alpha:g})"


def algorithm_rows(
    units: pd.DataFrame,
    hours: Mapping[str, Mapping[int, float]],
    pairs: Sequence[Mapping[str, str]],
    *,
    target_hours: float | None,
    alpha: float,
    alternative: str,
    resamples: int,
    seed: int,
    step_sizes: Mapping[str, Mapping[int, Mapping[str, float | None]]] | None = None,
) -> pd.DataFrame:
    """One row per pair; a pair whose arms have no evaluated checkpoint says why in `verdict` (never dropped).
    `step_sizes`: arm -> {step: {lr, adv_rms, grad_norm}} (brorl.analysis.checkpoints.step_sizes)."""
    rows = []
    for pair in pairs:
        small, large = pair["n16"], pair["n512"]
        row = {"estimator": pair["estimator"], "n16_arm": small, "n512_arm": large}
        evaluated = {arm: sorted(set(units.loc[units["arm"] == arm, "step"])) for arm in (small, large)}
        try:
            chosen = select_checkpoints(evaluated, hours, target_hours)
        except SelectionError as err:
            rows.append({**row, "verdict": f"not run: {err}"})
            continue
        pooled = compare_checkpoints(
            units,
            (small, chosen[small]),
            (large, chosen[large]),
            alpha=alpha,
            alternative=alternative,
            resamples=resamples,
            seed=seed,
        )["pooled"]
        sizes = {arm: step_size((step_sizes or {}).get(arm, {}), chosen[arm]) for arm in (small, large)}
        rows.append(
            {
                **row,
                "n16_step_size": sizes[small][0],
                "n512_step_size": sizes[large][0],
                "n16_grad_norm": sizes[small][1],
                "n512_grad_norm": sizes[large][1],
                "n16_step": chosen[small],
                "n16_hours": hours.get(small, {}).get(chosen[small]),
                "n512_step": chosen[large],
                "n512_hours": hours.get(large, {}).get(chosen[large]),
                "n": pooled["n"],
                "n16_mean": pooled["baseline_mean"],
                "n512_mean": pooled["treatment_mean"],
                "delta": pooled["delta"],
                "ci_low": pooled["ci_low"],
                "ci_high": pooled["ci_high"],
                "p": pooled["p"],
            }
        )
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    tested = table["p"].notna()
    table.loc[tested, "p_holm"] = holm(table.loc[tested, "p"].to_numpy(dtype=float))
    for i in table.index[tested]:
        table.loc[i, "verdict"] = verdict(table.loc[i, "delta"], table.loc[i, "p_holm"], alpha)
    return table


def sweep_columns(
    units: pd.DataFrame,
    sweep: Sequence[Mapping],
    step: int,
    base: tuple[str, int],
    alpha: float,
    margin: float,
) -> pd.DataFrame:
    """task, sweep_<arm> (change in points) per evaluated sweep arm, and for the largest N's arm
    sweep_largest_arm, sweep_largest_p and sweep_largest_verdict (empty frame when no sweep arm was evaluated)."""
    present = [a for a in sweep if ((units["arm"] == a["name"]) & (units["step"] == step)).any()]
    if not present:
        return pd.DataFrame(columns=["task"])
    start = units[(units["arm"] == base[0]) & (units["step"] == base[1])]
    rows: dict[str, dict] = {}
    largest = max(present, key=lambda a: a["n"])
    for arm in present:
        mine = units[(units["arm"] == arm["name"]) & (units["step"] == step)]
        pairs = start.merge(mine, on=["benchmark", "id", "task"], suffixes=("_s", "_a"))
        for task, g in pairs.groupby("task", sort=True):
            test = paired_one_tailed(g["score_s"].to_numpy(), g["score_a"].to_numpy())
            row = rows.setdefault(task, {"task": task})
            row[f"sweep_{arm['name']}"] = 100 * test.delta
            if arm is largest:
                row.update(sweep_largest_arm=arm["name"], sweep_largest_p=test.p, _se=100 * test.se, _n=test.n)
    out = pd.DataFrame(list(rows.values()))
    if "sweep_largest_p" in out:
        out["sweep_largest_verdict"] = change_verdicts(
            out["sweep_largest_p"].to_numpy(dtype=float),
            out[f"sweep_{largest['name']}"].to_numpy(dtype=float),
            out["_se"].to_numpy(dtype=float),
            out["_n"].to_numpy(dtype=float) - 1,
            alpha,
            margin,
        )
    return out.drop(columns=["_se", "_n"], errors="ignore").replace({np.nan: None})


def runs_of(spec: Mapping[str, Any], arm: str) -> list[str]:
    """An arm and its replicates (arms whose replicate_of names it), in config order."""
    return [arm] + [a["name"] for a in spec["arms"] if a.get("replicate_of") == arm]


def run_scores(units: pd.DataFrame, arm: str, step: int) -> tuple[float, float] | None:
    """(pooled pass@1, its evaluation variance: the samples' variance within each problem) of one run's checkpoint."""
    rows = units[(units["arm"] == arm) & (units["step"] == step)]
    if rows.empty:
        return None
    within = (rows["score_var"].fillna(0) / rows["n_samples"]).sum() / len(rows) ** 2
    return float(rows["score"].mean()), float(within)


def across_runs(units: pd.DataFrame, spec: Mapping[str, Any], result: Mapping[str, Any], alpha: float) -> dict:
    """The across-run test of the main comparison at its selected checkpoints, or why there is none."""
    from ..stats.across_runs import across_runs_test

    roles = spec["analysis"]["comparison"]
    runs = {role: runs_of(spec, roles[role]) for role in ("treatment", "control")}
    if min(len(r) for r in runs.values()) < 2:
        return {
            "status": "one run per arm",
            "note": "the paired test over problems compares two checkpoints, not the method: training-seed noise is in "
            "no test (give the arms replicates: 2 or more)",
        }
    if result.get("status") != "ok":
        return {"status": "not run", "note": result.get("reason", "no compared checkpoints")}
    scores: dict[str, list[tuple[float, float]]] = {}
    for role, names in runs.items():
        step = int(result[role]["step"])
        found = {name: run_scores(units, name, step) for name in names}
        missing = [name for name, s in found.items() if s is None]
        if missing:
            return {"status": "not run", "note": f"no evaluated step {step} for {', '.join(missing)}"}
        scores[role] = list(found.values())
    eval_var = sum(v for role in scores.values() for _, v in role) / sum(len(r) for r in scores.values())
    test = across_runs_test([s for s, _ in scores["treatment"]], [s for s, _ in scores["control"]], eval_var, alpha)
    return {"status": "ok", "runs": runs, **test}


def probe_lines(probe: pd.DataFrame | None, between: pd.DataFrame | None, spec: Mapping) -> list[str]:
    """The section: the trajectory table's last rows (results/tables/probe.csv) and the between-arm tests
    (results/tables/probe_between_arms.csv)."""
    lines = ["## The mass-balance probe (our extension: Figure 3's question on the model)", ""]
    if probe is None:
        return lines + [f"{NOT_RUN}: the probe is off in this configuration (`probe.enabled`).", ""]
    labels = {arm["name"]: f"{arm.get('label') or arm['name']} (N = {arm['n']})" for arm in spec["arms"]}
    last = probe.sort_values("step").groupby("arm", sort=False).tail(1)
    first = probe[probe["step"] == 0].set_index("arm")
    probes, samples = int(last["probes"].iloc[0]), int(last["samples"].iloc[0])
    q05 = 100 * float(probe["worst_drop_null_q05"].iloc[0])
    lines += [
        f"{probes} fixed problems x {samples} samples at the rollout temperature, at the start and every saved step "
        "(results/tables/probe.md, results/figures/probe.png and probe_arms.png). A probe fell or rose when its pass "
        f"rate moved beyond the noise of the difference; with no change at all about 2% of the probes (here about "
        f"{0.023 * probes:.1f}) fall by chance, so a few fallen probes are not yet evidence of shrinkage. The worst "
        f"drop of one probe is set against the same chance: redrawing every probe twice from the start's own pass "
        f"rate, it is {q05:+.1f} points or lower in 5% of redraws (its p below).",
        "",
        "| arm | last step | mean pass rate: start -> last (%) | fell since the start | rose since the start "
        "| worst drop of one probe (points) | its p (no change) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in last.itertuples(index=False):
        start = first.loc[r.arm, "mean_pass_rate"]
        fell, rose = round(r.fell_since_start * r.probes), round(r.rose_since_start * r.probes)
        lines.append(
            f"| {labels.get(r.arm, r.arm)} | {r.step} | {100 * start:.2f} -> {100 * r.mean_pass_rate:.2f} "
            f"| {fell} of {r.probes} | {rose} of {r.probes} | {100 * r.worst_drop:+.1f} | {r.worst_drop_p:.3f} |"
        )
    return lines + [""] + between_lines(between, labels)


def between_lines(between: pd.DataFrame | None, labels: Mapping[str, str]) -> list[str]:
    """The treatment against the control on the same probes, at equal compute and at equal optimizer steps."""
    if between is None or between.empty:
        return []
    row0 = between.iloc[0]
    control, treatment = labels.get(row0["control"], row0["control"]), labels.get(row0["treatment"], row0["treatment"])
    lines = [
        f"{treatment} against {control} on the same probes (results/tables/probe_between_arms.md): the mean "
        "difference of their pass rates (one-tailed paired t over probes, alternative: the treatment higher) and the "
        "probes that fell since the start in one arm only (exact binomial: does the control lose more?).",
        "",
        "| checkpoints | steps (control / treatment) | mean pass rate (%) control / treatment | difference (points, 95% CI) "
        "| p | fell only in control / only in treatment | p |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in between.itertuples(index=False):
        if r.probes != r.probes:  # NaN: the pair could not be formed
            lines.append(f"| {r.basis} | {r.note} | | | | | |")
            continue
        lines.append(
            f"| {r.basis} | {int(r.control_step)} / {int(r.treatment_step)} "
            f"| {100 * r.control_mean:.2f} / {100 * r.treatment_mean:.2f} "
            f"| {100 * r.delta:+.2f} ({100 * r.ci_low:+.2f}, {100 * r.ci_high:+.2f}) | {r.p:.3g} "
            f"| {int(r.fell_only_control)} / {int(r.fell_only_treatment)} | {r.p_fell:.3g} |"
        )
    return lines + [""]


def in_batch_lines(in_batch: tuple[pd.DataFrame, pd.DataFrame] | None, spec: Mapping) -> list[str]:
    """The in-batch probe (results/tables/probe_in_batch.csv and its between-arm test), when it ran: per arm and
    probed step the step's own prompts before and after its update."""
    if in_batch is None:
        return []
    rows, between = in_batch
    labels = {arm["name"]: f"{arm.get('label') or arm['name']} (N = {arm['n']})" for arm in spec["arms"]}
    lines = [
        "### The in-batch probe: Theorem 1 on the model",
        "",
        "Each probed step's own prompts, sampled just before and just after its update (results/tables/"
        "probe_in_batch.md, results/figures/probe_in_batch.png). Updated: neither all right nor all wrong among the "
        "step's rollouts; fell: beyond the noise of the difference; p: the share of updated prompts that fell against "
        "no change (both draws redrawn from the before-rates).",
        "",
        "| arm | step | prompts (updated) | mean pass rate before -> after (%) | updated prompts that fell | p |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows.itertuples(index=False):
        p = "" if r.p_fell != r.p_fell else f"{r.p_fell:.3f}"
        lines.append(
            f"| {labels.get(r.arm, r.arm)} | {r.step} | {r.prompts} ({r.updated}) "
            f"| {100 * r.before:.2f} -> {100 * r.after:.2f} | {r.fell_updated} of {r.updated} | {p} |"
        )
    lines.append("")
    for r in between.itertuples(index=False):
        control, treatment = labels.get(r.control, r.control), labels.get(r.treatment, r.treatment)
        if r.p != r.p:
            lines.append(f"- Step {r.step}, {control} against {treatment}: not tested ({r.note}).")
            continue
        lines.append(
            f"- Step {r.step}: {int(r.control_fell)} of {int(r.control_updated)} updated prompts fell in {control}, "
            f"{int(r.treatment_fell)} of {int(r.treatment_updated)} in {treatment}; do the control's fall more often? "
            f"Fisher's exact p {r.p:.3g}."
        )
    return lines + [""]
